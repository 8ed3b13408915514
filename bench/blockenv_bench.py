"""BlockEnv throughput: the batched environment stepped by the scripted oracle.

Prints environment steps per second (only steps of running episodes count; finished
episodes restart at once, at levels 0..10 in turn) for the batched implementation and, as the
baseline measured in the same run, the same code one episode at a time; and their ratio.
Target (issue 4): at least 200,000 steps/s batched.

    .venv/bin/python bench/blockenv_bench.py [--envs 4096] [--seconds 5] [--quick] [--table1]

--quick also times `indgen blockenv table1 --quick` (the README's figure); --table1 a full
`indgen blockenv table1` (target: at most 30 minutes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

import numpy as np

from indgen_sim.blockenv.env import K_MAX, BlockEnvBatch
from indgen_sim.blockenv.oracle import arm_choice, oracle_actions


def throughput(n: int, seconds: float) -> tuple[float, int]:
    env = BlockEnvBatch(n)
    next_seed = n
    seeds = np.arange(n, dtype=np.uint64)
    env.reset(np.arange(n) % (K_MAX + 1), seeds)
    arms = arm_choice(seeds)
    steps = episodes = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        running = int((~env.done).sum())
        env.step(oracle_actions(env.grids, arms))
        steps += running
        finished = np.flatnonzero(env.done)
        if len(finished):
            episodes += int(env.success[finished].sum())
            new = np.arange(next_seed, next_seed + len(finished), dtype=np.uint64)
            next_seed += len(finished)
            env.reset(new % (K_MAX + 1), new, which=finished)
            arms[finished] = arm_choice(new)
    return steps / (time.perf_counter() - t0), episodes


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--quick", action="store_true", help="also time `indgen blockenv table1 --quick`")
    p.add_argument("--table1", action="store_true", help="also time a full `indgen blockenv table1`")
    args = p.parse_args()
    batched, solved = throughput(args.envs, args.seconds)
    single, _ = throughput(1, args.seconds)
    print(f"batched ({args.envs} envs) + oracle: {batched:,.0f} env steps/s ({solved} episodes solved)")
    print(f"one env at a time + oracle (baseline): {single:,.0f} env steps/s")
    print(f"ratio batched / one at a time: {batched / single:.0f}x; target >= 200,000 steps/s: "
          f"{'met' if batched >= 200_000 else 'NOT met'}")
    if args.quick:
        seconds, code = _time_table1("--quick")
        print(f"indgen blockenv table1 --quick: {seconds:.0f} s, exit {code}")
    if args.table1:
        seconds, code = _time_table1()
        minutes = seconds / 60
        print(f"indgen blockenv table1 (full): {minutes:.1f} min, exit {code}; target <= 30 min: "
              f"{'met' if minutes <= 30 and code == 0 else 'NOT met'}")
    return 0


def _time_table1(*extra: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "blockenv", "table1", *extra, "--db",
                               f"{tmp}/r.sqlite", "--out", f"{tmp}/out", "--checkpoints", f"{tmp}/ck"],
                              stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0, proc.returncode


if __name__ == "__main__":
    sys.exit(main())
