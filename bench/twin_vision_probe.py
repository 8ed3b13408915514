"""Where the camera-based tau_0 policy (droid_twin_vision) loses its episodes: it runs the
policy on tau_0 episodes that no training used (their own seeds) and prints

- its success rate, and the same control MLP and chunks fed the *true* object positions
  instead of perception's estimates (the ceiling a perfect perception would give; the
  baseline, same episodes, same run);
- perception's error (median and 90th percentile, mm, x / y / z) on the pick object and the
  target, at the reset pose (first request) and over every request the policy made;
- how each failed episode ended (never touched the object; touched or lifted it, not placed).

    .venv/bin/python bench/twin_vision_probe.py [--checkpoint PATH] [--task stack] [--episodes 30]

Only tau_0, so reading it never tunes anything on a level above. Uses the checkpoint's robot
model (the built-in FR3 by default).
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np

import indgen_sim  # noqa: F401  (before mujoco: it chooses MuJoCo's headless GL backend)
from indgen_core.specs.droid import EXTERIOR, WRIST, DroidSpec
from indgen_sim.twin import bc
from indgen_sim.twin.vision import TwinVisionPolicy
from indgen_sim.twin.vision.features import targets
from indgen_sim.twin.world import DroidTwinWorld

SEED_BASE = 5_500_000  # apart from every training seed (7M-9.5M)


class TruePositions:
    """The vision policy's chunks with the simulator's object positions in place of perception."""

    def __init__(self, policy: TwinVisionPolicy):
        self.policy = policy

    def infer(self, request: dict) -> dict:
        truth = targets(request)
        clean = {k: v for k, v in request.items() if not k.startswith("privileged/")}
        original = self.policy.perceive
        self.policy.perceive = lambda obs: (*original(obs)[:3], truth)
        try:
            return self.policy.infer(clean)
        finally:
            self.policy.perceive = original


def run(policy, driver, world: DroidTwinWorld, task: str, episodes: int, probe: bool):
    spec = DroidSpec()
    solved, endings, first, every = 0, collections.Counter(), [], []
    setups = [s for s in bc.tau0_setups(2 * episodes, SEED_BASE, "probe", "probe") if s.axis == task]
    for setup in setups:
        obs, queue = world.reset(setup), []
        for step in range(world.max_steps(setup)):
            if not queue:
                request = spec.request(obs, setup, step)
                if probe:
                    clean = {k: v for k, v in request.items() if not k.startswith("privileged/")}
                    error = policy.perceive(clean)[3] - targets(request)
                    every.append(error)
                    if step == 0:
                        first.append(error)
                queue = spec.actions(driver.infer(request if not probe else clean))
            result = world.step(queue.pop(0))
            obs = result.observation
            if result.done:
                break
        outcome = world.evaluate()
        ok = outcome.outcome.name == "SUCCESS"
        solved += ok
        if not ok:
            endings["touched or lifted the object, not placed" if world.lifted else "never touched the object"] += 1
    return solved, len(setups), endings, np.array(first), np.array(every)


def errors(name: str, e: np.ndarray) -> None:
    for part, cols in (("pick object", slice(0, 3)), ("target", slice(3, 6))):
        a = np.abs(e[:, cols]) * 1000
        print(f"  {name:<14} {part:<12} median {'/'.join(f'{v:.0f}' for v in np.median(a, 0)):<10} "
              f"p90 {'/'.join(f'{v:.0f}' for v in np.percentile(a, 90, 0))} mm (x/y/z)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=None, help="default: the standard vision checkpoint")
    ap.add_argument("--task", choices=("stack", "scale"), default="stack")
    ap.add_argument("--episodes", type=int, default=30)
    args = ap.parse_args()
    policy = TwinVisionPolicy(args.checkpoint)
    world = DroidTwinWorld(cameras=[EXTERIOR, WRIST], builtin=policy.robot_model == "builtin")
    t0 = time.monotonic()
    solved, n, endings, first, every = run(policy, policy, world, args.task, args.episodes, probe=True)
    print(f"droid_twin_vision, {args.task} tau_0, {n} unseen episodes: {solved}/{n} solved "
          f"({time.monotonic() - t0:.0f} s); failures: {dict(endings) or 'none'}")
    errors("reset pose", first)
    errors("every request", every)
    solved_true, _, endings_true, _, _ = run(policy, TruePositions(policy), world, args.task, args.episodes, False)
    print(f"same control MLP and chunks on the true positions (baseline): {solved_true}/{n} solved; "
          f"failures: {dict(endings_true) or 'none'}")
    print(f"ratio vision / true positions: {solved / max(solved_true, 1):.2f}")
    world.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
