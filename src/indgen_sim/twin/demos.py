"""Oracle demonstrations in the twin at chosen levels, as dataset episodes (`indgen dataset
export --oracle droid_twin`): the data for the paper's next step, training on tau_0..tau_n.

The scripted oracle (privileged object poses) drives; the three DROID cameras are rendered at
DROID's 16:9 180 x 320 (not the policy's square 224) on every tick. Only episodes the world
judged successful are kept: a failed one is dropped and another seed tried, so every episode is
a certified demonstration. Seeds are fixed by `seed`, the level and the attempt number, so the
same command makes the same episodes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np

from indgen_core.datasets import layout
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TaskSetup
from indgen_core.specs.droid import DroidSpec
from indgen_sim.twin import scene

log = logging.getLogger(__name__)
TRIES_PER_EPISODE = 3  # the oracle solves nearly every twin layout; more failures mean a level it cannot do


def oracle_episodes(axis: str, levels: list[int], episodes: int, seed: int = 0) -> Iterator[layout.Episode]:
    """Certified demonstrations, `episodes` per level; the axis and levels are checked now."""
    from indgen_core.axes.progression import library

    spec = library().get(axis)
    if "droid_twin" not in spec.spec.worlds:
        raise IndGenError(f"axis {axis} is not defined for the twin (its worlds: {', '.join(spec.spec.worlds)})")
    chosen = {k: spec.level(k) for k in levels}  # a ConfigError naming the axis's range for a level it lacks
    if episodes < 1:
        raise IndGenError(f"--episodes must be 1 or more, not {episodes}")
    return _generate(axis, chosen, episodes, seed)


def _generate(axis: str, chosen: dict, episodes: int, seed: int) -> Iterator[layout.Episode]:
    from indgen_sim.twin.oracle import TwinOracle
    from indgen_sim.twin.world import DroidTwinWorld

    cameras = list(scene.CAMERA_NAMES[:3])
    world = DroidTwinWorld(cameras=cameras, image_size=layout.FRAME_SHAPE[:2])
    oracle, droid = TwinOracle(builtin=world.source.kind == "builtin"), DroidSpec()
    try:
        for k, level in chosen.items():
            made = tried = 0
            while made < episodes:
                if tried >= TRIES_PER_EPISODE * episodes:
                    raise IndGenError(f"the oracle solved only {made} of {tried} episodes at level {k} of {axis}")
                setup = TaskSetup(
                    campaign_id="demos",
                    trial_id=f"demo-{axis}-k{k}-s{seed}-{tried}",
                    world="droid_twin",
                    axis=axis,
                    level=k,
                    in_distribution=level.in_distribution,
                    parameters=level.parameters,
                    trial_index=tried,
                    seed=seed * 1_000_003 + k * 1_009 + tried,
                    policy="droid_twin_oracle",
                    language_instruction=level.language_instruction or "",
                )
                tried += 1
                episode = _demonstration(world, oracle, droid, setup, cameras)
                if episode is None:
                    log.info("level %d: the oracle failed %s; trying another seed", k, setup.trial_id)
                    continue
                made += 1
                yield episode
    finally:
        world.close()


def _demonstration(world, oracle, droid: DroidSpec, setup: TaskSetup, cameras: list[str]) -> layout.Episode | None:
    obs = world.reset(setup)
    oracle.reset()
    images: dict[str, list[np.ndarray]] = {camera: [] for camera in cameras}
    q, g, commanded, stamps = [obs["joint_position"]], [obs["gripper_position"]], [], []
    for step in range(world.max_steps(setup)):
        for camera in cameras:
            images[camera].append(np.array(obs["images"][camera]))
        request = droid.request({k: v for k, v in obs.items() if k != "images"}, setup, step)
        action = np.asarray(oracle.infer(request)["actions"][0], dtype=np.float64)
        gripper = float(action[7] > 0.5)
        commanded.append(np.concatenate([action[:7], [gripper]]))
        stamps.append(round(step * 1e9 / layout.FPS))
        result = world.step({"joint_velocity": action[:7], "gripper": gripper})
        obs = result.observation
        q.append(obs["joint_position"])
        g.append(obs["gripper_position"])
        if result.done:
            break
    if world.evaluate().outcome is not Outcome.SUCCESS:
        return None
    columns = layout.episode_columns(
        images, np.array(q), np.array(g), np.array(commanded), np.array(stamps), setup.level
    )
    return layout.Episode(
        task=setup.language_instruction,
        axis=setup.axis,
        level=setup.level,
        outcome="success",
        source="oracle droid_twin",
        trial_id=setup.trial_id,
        columns=columns,
        campaign_id="",
        world="droid_twin",
        policy="droid_twin_oracle",
        seed=setup.seed,
        notes={"clock": "simulated", "robot_model": world.robot_model},
    )
