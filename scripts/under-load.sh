#!/bin/bash
# Run a command with one busy-looping process beside it: this 2-core machine then behaves like
# a slower CI machine (the way the receive-order and start-up races in the suite were found).
#   scripts/under-load.sh make test
#   scripts/under-load.sh .venv/bin/python -m pytest test/test_fr3_graph.py -k campaign_through
python3 -c "while True: pass" &
HOG=$!
trap 'kill $HOG' EXIT
"$@"
