#!/bin/bash
# The suite as `make test` and `make test-fast` run it, in two groups:
#   - everything but the `realtime` cases on TEST_WORKERS pytest-xdist workers (default 3), a
#     test module per worker at a time (module fixtures built once), the longest modules first
#     (test/conftest.py's LONGEST_FIRST: hence --no-loadscope-reorder);
#   - the `realtime` cases (a 15 Hz robot loop, a person at a terminal, kill -9 timing), one at
#     a time at full priority, as a real cell would run them.
# By default the two groups run at once, the parallel one at the lowest priority (its CPU share
# given up whenever a wall-clock-bound case wants it: scripts/low-priority.py); TEST_TOGETHER=0
# runs them one after the other (a few minutes longer on 2 cores).
#   scripts/run-tests.sh [pytest args]        TEST_MARKS='not slow' selects within both groups
# Exit status: the first failing group's; 5 (nothing collected) only when neither selected
# anything.
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
WORKERS=${TEST_WORKERS:-3}
TOGETHER=${TEST_TOGETHER:-1}
MARKS=${TEST_MARKS:-}
scope() { if [ -n "$MARKS" ]; then echo "($MARKS) and $1"; else echo "$1"; fi; }
mkdir -p build
LOG=build/test-realtime.log

if [ "$TOGETHER" = 1 ]; then
  # the parallel group at the lowest priority, in a session of its own (scripts/low-priority.py
  # says why both are needed)
  "$PYTHON" scripts/low-priority.py "$PYTHON" -m pytest -n "$WORKERS" --dist loadscope \
    --no-loadscope-reorder -m "$(scope 'not realtime')" "$@" &
  parallel_pid=$!
  trap 'kill -INT -- -"$parallel_pid" 2>/dev/null' INT TERM
  "$PYTHON" -m pytest -p no:xdist -m "$(scope realtime)" "$@" > "$LOG" 2>&1
  alone=$?
  wait "$parallel_pid"
  parallel=$?
  echo "== the wall-clock-bound cases, run beside the others at full priority ($LOG) =="
  cat "$LOG"
else
  "$PYTHON" -m pytest -n "$WORKERS" --dist loadscope --no-loadscope-reorder -m "$(scope 'not realtime')" "$@"
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
