"""The RoboCasa spec: what a pi0 / pi0.5 server fine-tuned on RoboCasa (RoboCasa's benchmark
fork of openpi, `examples/robocasa/main.py`) is sent for the PandaOmron robot.

openpi upstream has no RoboCasa example; RoboCasa's docs (docs/benchmarking/
policy_learning_algorithms.md) point at the robocasa-benchmark fork of openpi, whose client
sends, per request (read in forks of it, cross-checked against RoboCasa365's own gym wrapper,
robocasa/wrappers/gym_wrapper.py):
- observation/image: robot0_agentview_left, observation/wrist_image: robot0_eye_in_hand,
  observation/right_image: robot0_agentview_right, each RGB, letterboxed to 224 x 224 from the
  wrapper's 256 x 256 (`image_tools.resize_with_pad`);
- observation/state (16): end-effector position (3) and quaternion (4) relative to the base,
  base position (3) and quaternion (4), gripper finger positions (2);
- prompt: the task's language (`annotation.human.task_description`).
In simulation IndGen adds privileged keys (privileged/...) that a trained policy ignores and
the scripted oracle reads.

Reply: actions (chunk, 12) in RoboCasa's policy layout (env_utils.convert_action):
end-effector position delta (3) and rotation delta (3) for the OSC_POSE controller (in the
base's frame, clipped to [-1, 1]), gripper (>= 0.5 closes), base x, y, yaw velocity (3),
torso (1), control mode (>= 0.5 drives the base). The client re-plans every 5 steps.
GR00T's RoboCasa checkpoints speak ZMQ with their own key names (PandaOmron_modality.json), not
this protocol: a GR00T server needs an adapter in front of it."""

from __future__ import annotations

import numpy as np

from indgen_core.specs import (
    EPISODE_FIELDS,
    PICK_PLACE_PRIVILEGED,
    Spec,
    WireField,
    add_pick_place_privileged,
    reply_array,
)
from indgen_core.specs.droid import letterbox

IMAGES = {"left": "observation/image", "wrist": "observation/wrist_image", "right": "observation/right_image"}
STATE_PARTS = ("eef_pos_base", "eef_quat_base", "base_pos", "base_quat", "gripper_qpos")


class RobocasaSpec(Spec):
    name = "robocasa"
    horizon = 5
    action_names = (
        "dx",
        "dy",
        "dz",
        "droll",
        "dpitch",
        "dyaw",
        "gripper",
        "base_x",
        "base_y",
        "base_yaw",
        "torso",
        "mode",
    )
    request_fields = (
        *(
            WireField(
                key, "uint8", (224, 224, 3), f"the {camera} camera, RGB, letterboxed to 224 x 224", "when rendered"
            )
            for camera, key in IMAGES.items()
        ),
        WireField(
            "observation/state",
            "float64",
            (16,),
            "end-effector position (3, m) and quaternion (4) in the base's frame, base position (3) and quaternion "
            "(4), gripper finger positions (2)",
        ),
        WireField("prompt", "str", (), "the task's language instruction"),
        *EPISODE_FIELDS,
        *PICK_PLACE_PRIVILEGED,
    )
    reply_fields = (
        WireField(
            "actions",
            "float32",
            ("chunk", 12),
            "end-effector delta (6, OSC_POSE in the base frame, clipped to [-1, 1]), gripper (>= 0.5 closes), base "
            "x, y, yaw (3), torso (1), mode (>= 0.5 drives the base); the first 5 of a chunk run open-loop",
        ),
    )

    def request(self, obs, setup, step):
        state = obs["state"]
        req = {
            "observation/state": np.concatenate(
                [np.asarray(state[p], dtype=np.float64).reshape(-1) for p in STATE_PARTS]
            ),
            "prompt": setup.language_instruction or obs.get("language", ""),
            "episode/seed": np.uint64(setup.seed),
            "episode/step": np.int64(step),
            "episode/id": setup.trial_id,
        }
        for camera, image in (obs.get("images") or {}).items():
            if camera in IMAGES:
                req[IMAGES[camera]] = letterbox(image)
        add_pick_place_privileged(req, obs)
        return req

    def actions(self, reply):
        arr = reply_array(reply, width=12)
        out = []
        for row in arr[: self.horizon]:
            a = np.asarray(row, dtype=np.float64).copy()
            a[:6] = np.clip(a[:6], -1.0, 1.0)  # the OSC controller clips its input the same way
            a[7:11] = np.clip(a[7:11], -1.0, 1.0)
            out.append(a)
        return out
