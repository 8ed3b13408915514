#!/bin/bash
# The "no behaviour change" check of a refactor: one BlockEnv and one twin campaign run from a
# source tree, their results printed trial by trial (trial, outcome, steps, partial score,
# reason). Run it on the tree before and after and diff the two outputs:
#   git worktree add /tmp/before <commit>
#   scripts/same-results/run.sh /tmp/before > before.tsv; scripts/same-results/run.sh . > after.tsv
#   diff before.tsv after.tsv      # empty: the same results
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TREE=$(cd "$1" && pwd)
PYTHON=${PYTHON:-$HERE/../../.venv/bin/python}
DB=$(mktemp -d)/same.sqlite
export PYTHONPATH=$TREE/src MENAGERIE_ROOT=
for c in blockenv twin; do
  "$PYTHON" -m indgen_core.cli campaign run "$HERE/$c.yaml" --db "$DB" --allow-uncertified \
    --reason same-results-check > /dev/null
done
"$PYTHON" - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT trial_id, outcome, steps, round(partial_score, 6), reason FROM results ORDER BY trial_id"):
    print(*row, sep="\t")
PY
