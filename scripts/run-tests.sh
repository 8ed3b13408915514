#!/bin/bash
# The suite as `make test` and `make test-fast` run it, in two groups:
#   - everything but the `realtime` cases on TEST_WORKERS pytest-xdist workers (default 3), a
#     test module per worker at a time (module fixtures built once);
#   - then the `realtime` cases (a 15 Hz robot loop, a person at a terminal, kill -9 timing),
#     one at a time with the machine to themselves, as a real cell would run them.
# TEST_TOGETHER=1 runs the two groups at once, the parallel one under `nice -n 19`: about 4
# minutes faster on 2 cores, but the wall-clock-bound cases then fail now and then (a starved
# 15 Hz loop, stale camera frames): for a machine with cores to spare, not for CI here.
#   scripts/run-tests.sh [pytest args]        TEST_MARKS='not slow' selects within both groups
# Exit status: the first failing group's; 5 (nothing collected) only when neither selected
# anything.
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
WORKERS=${TEST_WORKERS:-3}
MARKS=${TEST_MARKS:-}
scope() { if [ -n "$MARKS" ]; then echo "($MARKS) and $1"; else echo "$1"; fi; }
mkdir -p build
LOG=build/test-realtime.log

if [ "${TEST_TOGETHER:-0}" = 1 ]; then
  "$PYTHON" -m pytest -p no:xdist -m "$(scope realtime)" "$@" > "$LOG" 2>&1 &
  realtime_pid=$!
  trap 'kill "$realtime_pid" 2>/dev/null' INT TERM
  nice -n 19 "$PYTHON" -m pytest -n "$WORKERS" --dist loadscope -m "$(scope 'not realtime')" "$@"
  parallel=$?
  echo "== waiting for the wall-clock-bound cases ($LOG) =="
  wait "$realtime_pid"
  alone=$?
  cat "$LOG"
else
  "$PYTHON" -m pytest -n "$WORKERS" --dist loadscope -m "$(scope 'not realtime')" "$@"
  parallel=$?
  echo "== the wall-clock-bound cases, alone =="
  "$PYTHON" -m pytest -p no:xdist -m "$(scope realtime)" "$@"
  alone=$?
fi

for rc in "$parallel" "$alone"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then exit "$rc"; fi
done
if [ "$parallel" -eq 5 ] && [ "$alone" -eq 5 ]; then exit 5; fi
exit 0
