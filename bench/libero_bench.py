"""LIBERO-Object's costs: simulator steps per second without and with the two 256 x 256
cameras pi0.5 needs, and oracle campaign episodes per second on one process versus N worker
processes (the baseline and the parallel run measured in the same run).

    .venv/bin/python bench/libero_bench.py [--trials 3] [--workers 2] [--steps 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import indgen_sim  # noqa: F401  (before mujoco: it chooses MuJoCo's headless GL backend)


def steps_per_second(cameras, steps: int) -> float:
    from indgen_core.records import TaskSetup
    from indgen_core.specs.libero import NOOP
    from indgen_sim.libero.world import LiberoWorld

    world = LiberoWorld(cameras=cameras)
    try:
        world.reset(TaskSetup("bench", "b", "libero", "libero_pick_y", 0, True, (), 0, 0, "b", options={"task": 0}))
        t0 = time.perf_counter()
        for _ in range(steps):
            world.step(NOOP)
        return steps / (time.perf_counter() - t0)
    finally:
        world.close()


def campaign_rate(tmp: Path, trials: int, workers: int) -> float:
    from indgen_core.campaign import cluster
    from indgen_core.campaign.config import CampaignConfig
    from indgen_core.campaign.planning import plan_campaign
    from indgen_core.store import ResultsStore

    with ResultsStore(tmp / f"w{workers}.sqlite") as store:
        config = CampaignConfig(name="bench", axis="libero_goal_y", world="libero", world_options={"task": 0},
                                policies=["libero_oracle"], levels=[-1, 0, 1], trials_per_level=trials,
                                purpose="certify", seed=1)
        record = plan_campaign(store, config, campaign_id="bench")
        t0 = time.perf_counter()
        with cluster.connect(workers=workers) as client:
            cluster.run_campaign_cluster(store, record.id, client, world_options={"cameras": False})
        return len(store.planned_trials(record.id)) / (time.perf_counter() - t0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=3, help="oracle trials per level (3 levels)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args()
    bare = steps_per_second(False, args.steps)
    cams = steps_per_second(["agentview", "wrist"], max(10, args.steps // 10))
    print(f"LIBERO steps/s, no camera: {bare:.0f}; two 256x256 cameras: {cams:.1f} ({bare / cams:.0f}x slower)")
    with tempfile.TemporaryDirectory() as folder:
        one = campaign_rate(Path(folder), args.trials, 1)
        many = campaign_rate(Path(folder), args.trials, args.workers)
    print(f"oracle episodes/s (world built per worker included), 1 worker (baseline): {one:.3f}")
    print(f"oracle episodes/s, {args.workers} workers: {many:.3f} (ratio {many / one:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
