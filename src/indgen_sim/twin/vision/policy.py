"""The twin's camera-based tau_0 policy (`droid_twin_vision`) as served, and its checkpoint.

It answers pi0.5's kind of reply, an open-loop chunk of DROID joint velocities: perception
(`network`) estimates where the objects are from the two images; control, the state-based
policy's MLP (bc.py), is fed with those estimates instead of the privileged poses. A chunk
is built by rolling the control MLP forward through the robot's kinematics (joint positions
integrate DROID's q + 0.2 v per tick; the objects stay where they were seen, a held one moves
with the hand), the way a pi0.5 chunk is one prediction executed open-loop.

The images differ between the menagerie FR3 and the built-in one, so a checkpoint records the
robot model and refuses the other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core import paths
from indgen_core.errors import IndGenError, require
from indgen_core.policy import Policy
from indgen_core.specs.droid import DELTA_PER_TICK, EXTERIOR, WRIST
from indgen_sim.twin import bc, policy_input, tasks
from indgen_sim.twin.vision.features import REQUEST_IMAGES, TARGETS, holding, proprio, shrink, task_of_prompt
from indgen_sim.twin.vision.network import perception_network

CHUNK = 8  # actions per reply: pi05_droid's executed horizon


def checkpoint_path() -> Path:
    override = os.environ.get("INDGEN_TWIN_VISION_CHECKPOINT")
    return Path(override) if override else paths.data_dir() / "twin" / "vision_tau0.pt"


class TwinVisionPolicy(Policy):
    metadata: Mapping[str, Any] = {
        "policy": "droid_twin_vision",
        "spec": "droid",
        "privileged": False,
        "trained_on": "tau_0 oracle labels",
        "inputs": "pi05_droid's",
    }

    def __init__(self, checkpoint: str | Path | dict | None = None, chunk: int | None = None):
        torch = require("torch", "all", "the twin's vision policy")
        ckpt = checkpoint if isinstance(checkpoint, dict) else load_checkpoint(checkpoint)
        self.torch = torch
        self.net = perception_network()
        self.net.load_state_dict(ckpt["perception"]["state_dict"])
        self.net.eval()
        # per task (rows in tasks.TASKS order); one row for every task in checkpoints before that
        shape = (len(tasks.TASKS), TARGETS)
        self.mean = np.broadcast_to(np.asarray(ckpt["perception"]["mean"], dtype=np.float32), shape)
        self.std = np.broadcast_to(np.asarray(ckpt["perception"]["std"], dtype=np.float32), shape)
        self.control = bc.TwinBCPolicy(ckpt["control"], builtin=ckpt["robot_model"] == "builtin")
        self.in_hand = {task: np.asarray(offset, dtype=float) for task, offset in ckpt["in_hand"].items()}
        self.robot_model = ckpt["robot_model"]
        self.chunk = int(chunk or ckpt.get("chunk", CHUNK))
        # instance metadata: the world checks the robot model before the first episode
        self.metadata = {
            **type(self).metadata,
            "robot_model": self.robot_model,
            "chunk": self.chunk,
            "trained_on": bc.trained_on_levels(ckpt),
        }

    def perceive(self, obs: dict[str, Any]) -> tuple[str, np.ndarray, float, np.ndarray]:
        """(task, joint positions, gripper position, estimated TARGETS) from a DROID request:
        perception's estimates, except for an object in the hand (`holding`), which is where
        the hand holds it (`in_hand`)."""
        missing = [
            key
            for key in (
                *REQUEST_IMAGES.values(),
                "observation/joint_position",
                "observation/gripper_position",
                "prompt",
            )
            if key not in obs
        ]
        if missing:
            raise ValueError(f"the vision policy needs pi05_droid's request; missing {', '.join(missing)}")
        task = task_of_prompt(obs["prompt"])
        q = np.asarray(obs["observation/joint_position"], dtype=float).reshape(7)
        g = float(np.asarray(obs["observation/gripper_position"], dtype=float).reshape(-1)[0])
        images = [self.torch.from_numpy(shrink(obs[REQUEST_IMAGES[c]], c)[None].copy()) for c in (EXTERIOR, WRIST)]
        state = proprio(q, g, task, policy_input.kinematics(self.control.builtin))
        with self.torch.no_grad():
            out = self.net(*images, self.torch.as_tensor(state[None])).numpy()[0]
        t = tasks.TASKS.index(task)
        seen = out * self.std[t] + self.mean[t]
        if holding(g):  # the object is in the hand: where the hand is, not where the cameras put it
            kin = policy_input.kinematics(self.control.builtin)
            kin.set(q)
            pinch, rot = kin.pinch()
            seen[0:3] = pinch + rot @ self.in_hand[task]
        return task, q, g, seen

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        task, q, g, seen = self.perceive(obs)
        kin = policy_input.kinematics(self.control.builtin)
        pick, place, yaw = seen[0:3], seen[3:6], seen[6:8]
        held = holding(g)
        actions = []
        for _ in range(self.chunk):
            kin.set(q)
            pinch, rot = kin.pinch()
            if held:  # it moves with the hand through the chunk
                pick = pinch + rot @ self.in_hand[task]
            action = self.control.act(policy_input.state_features(q, g, pinch, pick, place, yaw, task), q)
            actions.append(action)
            q = q + DELTA_PER_TICK * action[:7]
        return {"actions": np.array(actions)}


def load_checkpoint(checkpoint: str | Path | None) -> dict:
    path = Path(checkpoint) if checkpoint else checkpoint_path()
    ckpt = bc.load_checkpoint(path, "vision policy", "indgen twin train-bc --vision")
    if not isinstance(ckpt, dict) or ckpt.get("kind") != "vision":
        raise IndGenError(f"{path} is not a vision policy checkpoint (the state-based one is served as droid_twin_bc)")
    if "in_hand" not in ckpt:
        raise IndGenError(
            f"{path} is a vision checkpoint from before the in-hand estimate (2026-12-02): retrain it "
            "with `indgen twin train-bc --vision`"
        )
    return ckpt
