"""The ROS graph's cost: campaign episodes per second through the full node graph versus the
same world and policy in one process (the baseline, same run), and the policy round trip
over openpi's websocket protocol (p50 / p99 over 1,000 requests).

    .venv/bin/python bench/graph_bench.py [--trials 20] [--requests 1000]

Runs on loopback in its own ROS domain.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import yaml

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "91")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def campaign_file(tmp: Path, trials: int) -> Path:
    path = tmp / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "bench", "axis": "blockenv_depth", "world": "blockenv",
                                    "policies": ["blockenv_oracle"], "levels": [0, 1, 2, 3, 4],
                                    "trials_per_level": trials, "purpose": "certify", "seed": 1}))
    return path


def episodes_per_second(store, cid: str) -> float:
    times = sorted(r.recorded_at for r in store.rows(cid) if r.recorded_at)
    return (len(times) - 1) / (times[-1] - times[0])


def graph_rate(tmp: Path, campaign: Path, profile: str = "blockenv_axis", *assignments: str,
               db_name: str | None = None) -> float:
    """Episodes/s of `campaign` through `indgen launch PROFILE` (the policy server included)."""
    from indgen_core.store import ResultsStore

    db, port = tmp / (db_name or f"graph-{profile}-{len(assignments)}.sqlite"), free_port()
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", profile, f"campaign:={campaign}",
                           "campaign_id:=graph", f"db:={db}", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
                           f"report_dir:={tmp / 'rep'}", *assignments], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:])
    with ResultsStore(db) as store:
        return episodes_per_second(store, "graph")


def in_process_rate(tmp: Path, campaign: Path, world="blockenv") -> float:
    """Episodes/s of the same campaign with world and policy in this process (the baseline)."""
    from indgen_core.campaign.config import load_campaign_config
    from indgen_core.campaign.inprocess import InProcessExecutor
    from indgen_core.campaign.planning import plan_campaign
    from indgen_core.campaign.runner import run_campaign
    from indgen_core.store import ResultsStore

    with ResultsStore(tmp / "inproc.sqlite") as store:
        rec = plan_campaign(store, load_campaign_config(campaign), campaign_id="inproc")
        run_campaign(store, rec.id, InProcessExecutor(world))
        return episodes_per_second(store, "inproc")


def round_trips(requests: int) -> dict[str, tuple[float, float]]:
    from indgen_core.wire.client import RemotePolicy

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "indgen_core.cli", "serve-policy", "blockenv_oracle", "--port",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        client = RemotePolicy(f"ws://127.0.0.1:{port}")
        grid = np.zeros((16, 16), dtype=np.uint8)
        grid[5, 5] = 2
        blockenv = {"observation/grid": grid, "observation/level": np.int64(0), "episode/seed": np.uint64(1),
                    "episode/step": np.int64(0), "episode/id": "x", "prompt": "grasp"}
        droid_sized = dict(blockenv, **{"observation/exterior_image_1_left": np.zeros((224, 224, 3), np.uint8),
                                        "observation/wrist_image_left": np.zeros((224, 224, 3), np.uint8)})
        out = {}
        for name, obs in (("BlockEnv request", blockenv), ("+ two 224x224 images", droid_sized)):
            for _ in range(20):
                client.infer(obs)
            samples = []
            for _ in range(requests):
                t0 = time.perf_counter()
                client.infer(obs)
                samples.append((time.perf_counter() - t0) * 1000)
            out[name] = (float(np.percentile(samples, 50)), float(np.percentile(samples, 99)))
        client.close()
        return out
    finally:
        server.terminate()
        server.wait(10)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=20, help="trials per level (5 levels, the BlockEnv oracle)")
    p.add_argument("--requests", type=int, default=1000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        campaign = campaign_file(tmp, args.trials)
        inproc = in_process_rate(tmp, campaign)
        graph = graph_rate(tmp, campaign)
    print(f"campaign episodes/s, in-process loop (baseline): {inproc:8.1f}")
    print(f"campaign episodes/s, through the ROS graph:      {graph:8.1f}")
    print(f"ratio graph / in-process: {graph / inproc:.3f} ({inproc / graph:.1f}x slower)")
    for name, (p50, p99) in round_trips(args.requests).items():
        print(f"policy round trip over websocket, {name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
              f"({args.requests} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
