"""One example per command, shown under its `--help` and in the CLI reference. Keyed by the
words after `indgen`; the worlds' commands are here too (by name only: the core imports no
world). `test_cli_doctor.py` parses every example with the real parser, so none can drift."""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "doctor": "indgen doctor --json",
    "axes list": "indgen axes list",
    "axes show": "indgen axes show stack",
    "axes check": "indgen axes check config/axes/stack.yaml",
    "campaign list": "indgen campaign list",
    "campaign plan": "indgen campaign plan mine.yaml --expect 0=0.9 2=0.4 --size-only",
    "campaign run": "indgen campaign run examples/own_policy/mine.yaml --id mine",
    "campaign status": "indgen campaign status mine",
    "campaign resume": "indgen campaign resume mine --workers 0",
    "campaign delete": "indgen campaign delete mine --yes",
    "campaign unblind": "indgen campaign unblind ab-lab --by ada",
    "campaign export": "indgen campaign export mine --format csv --out mine.csv",
    "report": "indgen report mine",
    "compare": "indgen compare mine",
    "serve-policy": "indgen serve-policy blockenv_oracle --port 8000",
    "policy check": "indgen policy check ws://gpu-host:8000 --world droid_twin",
    "launch": "indgen launch stack_axis sim:=true policy:=droid_twin_bc",
    "bag info": "indgen bag info ~/.local/share/indgen/artifacts/bags/mine",
    "bag rescore": "indgen bag rescore ~/.local/share/indgen/artifacts/bags/mine",
    "bag latency": "indgen bag latency ~/.local/share/indgen/artifacts/bags/mine --json latency.json",
    "bag video": "indgen bag video ~/.local/share/indgen/artifacts/bags/mine --trial droid_twin_bc/k+2/004",
    "bag view": "indgen bag view ~/.local/share/indgen/artifacts/bags/mine --trial droid_twin_bc/k+2/004",
    "bag replay": "indgen bag replay ~/.local/share/indgen/artifacts/bags/mine --server ws://127.0.0.1:8000",
    "bag repair": "indgen bag repair ~/.local/share/indgen/artifacts/bags/mine",
    "dataset export": "indgen dataset export demos --format v2.1 --oracle droid_twin --axis stack --levels 0",
    "blockenv table1": "indgen blockenv table1 --quick",
    "bringup": "indgen bringup --robot-ip 172.16.0.2",
    "console": "indgen console --operator ada",
    "estop": "indgen estop --release",
    "libero certify": "indgen libero certify --tasks 0,1 --levels 0,1,2 --trials 5",
    "stand-in build-scene": "indgen stand-in build-scene",
    "twin train-bc": "indgen twin train-bc --rounds 4",
    "twin views": "indgen twin views --axis stack --levels 0,2,4 --out views",
    "twin demo": "indgen twin demo --axis scale",
}
