"""The twin's vision policy's training samples (at tau_0 unless a training plan says more):
control samples (state features and the oracle's label) on every tick of an episode, and
perception frames (both images, the proprioception, the label). Frames are rendered only on
the ticks where a request is made (and on every other tick of the demonstrations), plus views
of many more layouts than there are episodes (`views`).
"""

from __future__ import annotations

import collections
import logging
import time
from typing import Any

import numpy as np

from indgen_core.policy import Policy
from indgen_core.specs.droid import EXTERIOR, WRIST
from indgen_sim.twin import bc, policy_input
from indgen_sim.twin.training_plan import TAU0, TrainingPlan
from indgen_sim.twin.vision.features import REQUEST_IMAGES, proprio, shrink, targets

logger = logging.getLogger(__name__)

#: a perception sample's parts: the two shrunk images, the proprioception and the label
FRAME_KEYS = ("exterior", "wrist", "state", "target")


def collect(
    episodes: int,
    policy: Policy | None = None,
    noise: float = 0.02,
    seed_base: int = 9_000_000,
    builtin: bool = True,
    image_every: int = 2,
    plan: TrainingPlan = TAU0,
) -> tuple[dict, dict]:
    """Episodes of both tasks at the plan's levels (tau_0 unless told): control samples (state
    features, oracle label) on every tick and perception samples (both images, proprioception,
    label) every `image_every` ticks and on every tick where the policy (when it drives) makes a request."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.oracle import TwinOracle
    from indgen_sim.twin.world import DroidTwinWorld

    world = DroidTwinWorld(cameras=[EXTERIOR, WRIST], builtin=builtin)
    oracle, spec = TwinOracle(builtin=builtin), DroidSpec()
    kin = policy_input.kinematics(builtin)
    control_x, control_y = [], []
    frames: dict[str, list] = {"exterior": [], "wrist": [], "state": [], "target": [], "q": []}
    rng = np.random.default_rng(plan.stream(seed_base))
    solved, t0, visited = 0, time.monotonic(), collections.Counter[str]()
    for e, setup in enumerate(plan.setups(episodes, seed_base, "droid_twin_vision", "vision")):
        visited[f"{setup.axis} tau_{setup.level}"] += 1  # what it trained on, kept in the checkpoint
        obs = world.reset(setup)
        queue: list = []
        done = False
        for step in range(world.max_steps(setup)):
            state_request = spec.request({**obs, "images": {}}, setup, step)  # no frame rendered for the labels
            twist, grip = oracle.command(
                state_request["observation/joint_position"],
                float(obs["gripper_position"]),
                obs["task"],
                policy_input.object_poses(state_request),
            )
            control_x.append(policy_input.features(state_request, builtin))
            control_y.append(np.concatenate([twist / policy_input.TWIST_SCALE, [grip]]))
            asks = policy is not None and not queue
            # a camera policy: images, nothing privileged
            sees = asks and policy is not None and policy.metadata.get("privileged") is False
            request = state_request
            if sees or step % image_every == 0:
                request = spec.request(obs, setup, step)
                add_frame(frames, request, kin)
            if asks and policy is not None:
                queue = spec.actions(
                    policy.infer({k: v for k, v in request.items() if not (sees and k.startswith("privileged/"))})
                )
            if policy is None:
                clean = oracle.joint_velocities(state_request["observation/joint_position"], twist)
                action = {"joint_velocity": np.clip(clean + rng.normal(0, noise, 7), -1, 1), "gripper": grip}
            else:
                action = queue.pop(0)
            result = world.step(action)
            obs = result.observation
            if result.done:
                done = True
                break
        solved += done and world.evaluate().outcome.name == "SUCCESS"
        bc.progress(e, episodes, policy is None, t0, f", {world.frames_rendered} frames rendered")
    world.close()
    data = {k: np.array(v) for k, v in frames.items()}
    data["control_x"] = np.array(control_x, dtype=np.float32)
    data["control_y"] = np.array(control_y, dtype=np.float32)
    return data, {
        "episodes": episodes,
        "levels": dict(visited),
        "solved": int(solved),
        "control_samples": len(control_x),
        "frames": len(frames["target"]),
    }


def add_frame(frames: dict[str, list], request: dict[str, Any], kin) -> None:
    """One perception sample from a DROID request with the simulator's keys: the network's two
    images, its proprioception, the label, and the joint positions (for `views`' arm poses)."""
    q = np.asarray(request["observation/joint_position"], dtype=float)
    g = float(np.asarray(request["observation/gripper_position"]).reshape(-1)[0])
    frames["exterior"].append(shrink(request[REQUEST_IMAGES[EXTERIOR]], EXTERIOR))
    frames["wrist"].append(shrink(request[REQUEST_IMAGES[WRIST]], WRIST))
    frames["state"].append(proprio(q, g, str(request["privileged/task"]), kin))
    frames["target"].append(targets(request))
    frames["q"].append(q.astype(np.float32))


def views(
    layouts: int,
    arm_poses: np.ndarray,
    per_layout: int = 4,
    seed_base: int = 9_500_000,
    builtin: bool = True,
    plan: TrainingPlan = TAU0,
) -> dict:
    """Perception samples over many more layouts (at the plan's levels) than there are episodes: each fresh
    layout (settled as for an episode) is seen with the arm teleported to `per_layout` poses
    drawn from `arm_poses` (joint positions the demonstrations passed through, gripper open).
    An episode gives one layout and a hundred frames of it: from 80 layouts perception learned
    the layouts more than where a block is in the picture (fitted on the same episodes, its
    median error on the block at the reset pose of unseen tau_0 layouts was 13 and 11 mm in x
    and y without these views, 5 and 4 mm with 1,500 layouts of them)."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.world import DroidTwinWorld

    world, spec, kin = (
        DroidTwinWorld(cameras=[EXTERIOR, WRIST], builtin=builtin),
        DroidSpec(),
        policy_input.kinematics(builtin),
    )
    rng = np.random.default_rng(plan.stream(seed_base))
    frames: dict[str, list] = {k: [] for k in (*FRAME_KEYS, "q")}
    t0 = time.monotonic()
    for e, setup in enumerate(plan.setups(layouts, seed_base, "droid_twin_vision", "views")):
        world.reset(setup)
        for q in arm_poses[rng.choice(len(arm_poses), per_layout)]:
            world.pose_arm(q)
            add_frame(frames, spec.request(world.observe(), setup, 0), kin)
        if (e + 1) % 250 == 0:
            logger.info(f"  views: {e + 1}/{layouts} layouts ({time.monotonic() - t0:.0f} s)")
    world.close()
    return {k: np.array(frames[k]) for k in FRAME_KEYS}
