"""Campaign throughput: sequential, `--workers 2` (a Dask LocalCluster) and two Dask workers
started as on separate machines (`dask scheduler` + 2 x `dask worker`, on 127.0.0.1 here).

    .venv/bin/python bench/cluster_bench.py [--twin-trials 4] [--blockenv-trials 40]

Two workloads, each run the three ways with the same seeds (the outcomes are checked equal):
the twin's Stack axis with its oracle (episodes of ~80 physics ticks, the work a cluster is
for) and BlockEnv with the random-legal-grasp control (episodes of 1-5 grid steps: almost
nothing but the per-trial overhead). Prints episodes per second, the ratio to the sequential
run, and the cluster's per-trial overhead: (wall time on one Dask worker - sequential wall
time) / trials, the cost of a task round trip, a result sent back and committed by the driver.
On this 2-core machine two workers can at best double the sequential rate.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))  # the test helpers, `from helpers import ...`


def _run(tmp: Path, config: Path, cid: str, *extra: str) -> float:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "run", str(config), "--id", cid,
                           "--db", str(tmp / "r.sqlite"), *extra], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"campaign {cid} failed: {proc.stderr[-2000:]}")
    return time.monotonic() - start


@contextlib.contextmanager
def dask_cluster(workers: int):
    from helpers import servers

    port = servers.free_port()
    env = dict(os.environ, DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="0",
               DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION="1.0")
    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    address = f"tcp://127.0.0.1:{port}"
    procs += [subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(workers)]
    try:
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=60)
        yield address
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(20)


def outcomes(tmp: Path, cid: str) -> dict:
    from indgen_core.store import ResultsStore

    with ResultsStore(tmp / "r.sqlite") as store:
        return {r.trial_id: (r.outcome, r.steps) for r in store.rows(cid)}


def workload(tmp: Path, name: str, label: str, config: Path, trials: int) -> None:
    runs = {"sequential": _run(tmp, config, f"{name}-seq")}
    runs["--workers 2"] = _run(tmp, config, f"{name}-local", "--workers", "2")
    with dask_cluster(1) as address:
        one = _run(tmp, config, f"{name}-one", "--cluster", address)
    with dask_cluster(2) as address:
        runs["2 dask workers"] = _run(tmp, config, f"{name}-dask", "--cluster", address)
    reference = outcomes(tmp, f"{name}-seq")
    for cid in (f"{name}-local", f"{name}-one", f"{name}-dask"):
        assert outcomes(tmp, cid) == reference, f"{cid} differs from the sequential run"
    print(f"{label}: {trials} episodes (wall time includes the CLI's start-up and, for --workers, the cluster's)")
    base = runs["sequential"]
    for how, took in runs.items():
        print(f"  {how:<16} {took:7.1f} s  {trials / took:7.2f} episodes/s  ratio {base / took:.2f}")
    print(f"  per-trial overhead of the cluster (1 Dask worker vs sequential): {(one - base) / trials * 1000:.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--twin-trials", type=int, default=4, help="trials per level, levels 0 and 1")
    parser.add_argument("--blockenv-trials", type=int, default=40, help="trials per level, levels 0..4")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        twin = tmp / "twin.yaml"
        twin.write_text(yaml.safe_dump({"name": "tw", "axis": "stack", "world": "droid_twin",
                                        "policies": ["droid_twin_oracle"], "levels": [0, 1],
                                        "trials_per_level": args.twin_trials, "seed": 4, "purpose": "certify"}))
        cert = Path(__file__).resolve().parents[1] / "config" / "campaigns" / "blockenv_oracle.yaml"
        _run(tmp, cert, "cert")
        block = tmp / "rl.yaml"
        block.write_text(yaml.safe_dump({"name": "rl", "axis": "blockenv_depth", "world": "blockenv",
                                         "policies": ["blockenv_random_legal"], "levels": [0, 1, 2, 3, 4],
                                         "trials_per_level": args.blockenv_trials, "seed": 11}))
        workload(tmp, "twin", "twin stack (oracle)", twin, 2 * args.twin_trials)
        workload(tmp, "blockenv", "blockenv (random legal)", block, 5 * args.blockenv_trials)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
