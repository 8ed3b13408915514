"""The DROID twin's costs: MuJoCo physics steps per second (and the real-time factor of a
15 Hz control tick), camera render frames per second, dry-run episodes per second through
the full ROS graph versus the same world and oracle in one process (the baseline, same run),
and a camera campaign through the graph with a policy that answers pi0.5-DROID's chunks
(droid_pi05_standin: 15 actions, 8 executed) rendering every camera on every tick (before)
and only on the ticks the policy node asks for (render-on-demand, the default): episodes per
second, their ratio, and frames rendered per episode.

    .venv/bin/python bench/twin_bench.py [--trials 4] [--ticks 300] [--camera-trials 2]

Uses MENAGERIE_ROOT when set (the menagerie FR3 and 2F-85), else the built-in FR3. Runs on
loopback in its own ROS domain.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

import indgen_sim  # noqa: F401  (before mujoco: it chooses MuJoCo's headless GL backend)

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "92")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from graph_bench import graph_rate, in_process_rate


def _world():
    from indgen_sim.twin.world import DroidTwinWorld

    world = DroidTwinWorld(cameras=False)
    world.reset(_setup())
    return world


def physics(ticks: int) -> dict[str, float]:
    import mujoco

    from indgen_sim.twin import scene

    world = _world()
    steps = ticks * scene.SUBSTEPS
    t0 = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(world.m, world.d)
    raw = steps / (time.perf_counter() - t0)
    world.reset(_setup())
    v = np.array([0.2, -0.1, 0.1, 0.1, 0.2, -0.2, 0.3])
    t0 = time.perf_counter()
    for i in range(ticks):
        world.step({"joint_velocity": v if (i // 15) % 2 == 0 else -v, "gripper": 0.0})
    tick = ticks / (time.perf_counter() - t0)
    return {"mj_step/s": raw, "control ticks/s": tick, "real-time factor": tick / scene.CONTROL_HZ,
            "source": world.source.kind}


def _setup():
    from indgen_core.axes.progression import library
    from indgen_core.records import TaskSetup

    level = library().get("stack").level(2)
    return TaskSetup("bench", "b", "droid_twin", "stack", 2, False, level.parameters, 0, 1, "bench")


def render(frames: int) -> dict[str, float]:
    world = _world()
    out = {}
    for label, cams, size in (("1 camera 224x224", ["exterior_1"], (224, 224)),
                              ("3 cameras 224x224", ["exterior_1", "exterior_2", "wrist"], (224, 224)),
                              ("1 camera 720x1280", ["exterior_1"], (720, 1280))):
        world.render(cams[0], size)  # renderer set-up outside the timing
        t0 = time.perf_counter()
        for _ in range(frames):
            for cam in cams:
                world.render(cam, size)
        out[label] = frames / (time.perf_counter() - t0)
    world.close()
    return out


def campaign_file(tmp: Path, trials: int) -> Path:
    path = tmp / "twin_bench.yaml"
    path.write_text(yaml.safe_dump({"name": "twin_bench", "axis": "stack", "world": "droid_twin",
                                    "policies": ["droid_twin_oracle"], "levels": [0, 1, 2, 3, 4],
                                    "trials_per_level": trials, "purpose": "certify", "seed": 3}))
    return path


def camera_campaign_file(tmp: Path, trials: int) -> Path:
    path = tmp / "twin_bench_cameras.yaml"
    path.write_text(yaml.safe_dump({"name": "twin_bench_cameras", "axis": "stack", "world": "droid_twin",
                                    "policies": ["droid_pi05_standin"], "levels": [0, 1], "purpose": "evaluate",
                                    "trials_per_level": trials, "seed": 5, "max_steps": 150}))
    return path


def camera_campaign(tmp: Path, trials: int, render: str) -> tuple[float, float, int]:
    """(episodes/s, frames rendered per episode, episodes) of a camera campaign through the graph."""
    from indgen_core.store import ResultsStore

    campaign = camera_campaign_file(tmp, trials)
    rate = graph_rate(tmp, campaign, "stack_axis", "level_images:=false", "cameras:=exterior_1,wrist",
                      "policy:=droid_pi05_standin", "allow_uncertified:=true", "override_reason:=benchmark",
                      "record:=false", "privileged:=false", f"render:={render}", db_name=f"cameras-{render}.sqlite")
    with ResultsStore(tmp / f"cameras-{render}.sqlite") as store:
        frames = [d.get("frames_rendered", 0) for _, _, _, d in store.result_details("graph")]
    return rate, float(np.mean(frames)), len(frames)


def main() -> int:
    from indgen_sim.twin.world import DroidTwinWorld

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=4, help="trials per level of the dry run (5 stack levels)")
    p.add_argument("--ticks", type=int, default=300, help="control ticks of the physics measurement")
    p.add_argument("--frames", type=int, default=60, help="frames per render measurement")
    p.add_argument("--camera-trials", type=int, default=2, help="trials per level of the camera campaign (2 levels)")
    args = p.parse_args()
    phys = physics(args.ticks)
    print(f"robot model: {phys['source']}")
    print(f"physics: {phys['mj_step/s']:,.0f} mj_step/s; {phys['control ticks/s']:.0f} control ticks/s "
          f"= {phys['real-time factor']:.1f}x real time at 15 Hz")
    for label, fps in render(args.frames).items():
        print(f"render {label}: {fps:.0f} frames/s ({fps / 15:.1f}x the 15 Hz control rate)")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        campaign = campaign_file(tmp, args.trials)
        inproc = in_process_rate(tmp, campaign, DroidTwinWorld(cameras=False))
        graph = graph_rate(tmp, campaign, "stack_axis", "level_images:=false")
        graph_cams = graph_rate(tmp, campaign, "stack_axis", "level_images:=false", "cameras:=exterior_1,wrist")
        before = camera_campaign(tmp, args.camera_trials, "every_tick")
        after = camera_campaign(tmp, args.camera_trials, "on_request")
    print(f"dry-run episodes/s (oracle, stack k=0..4), in-process loop (baseline): {inproc:6.2f}")
    print(f"dry-run episodes/s through the ROS graph, no cameras:                  {graph:6.2f} "
          f"(ratio {graph / inproc:.2f})")
    print(f"dry-run episodes/s through the ROS graph, 2 cameras on the wire:       {graph_cams:6.2f} "
          f"(ratio {graph_cams / inproc:.2f})")
    print(f"camera campaign (pi0.5-style chunks, 2 cameras, {after[2]} episodes of 150 ticks) through the graph:")
    print(f"  every camera every tick (before): {before[0]:6.3f} episodes/s, {before[1]:5.0f} frames rendered/episode")
    print(f"  render on request (after):        {after[0]:6.3f} episodes/s, {after[1]:5.0f} frames rendered/episode")
    print(f"  ratio after/before: {after[0] / before[0]:.2f}x episodes/s, {before[1] / max(after[1], 1):.1f}x fewer "
          "frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
