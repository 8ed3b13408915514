"""The DROID spec (openpi's DROID example, pi05_droid): what a pi0.5-DROID server expects.

Request: observation/exterior_image_1_left and observation/wrist_image_left (RGB, letterboxed
to 224 x 224 with openpi's resize_with_pad), observation/joint_position (7),
observation/gripper_position (1; 0 open), prompt. In simulation IndGen adds privileged keys
(privileged/objects/<name>: position + quaternion, privileged/task) that pi0.5 ignores and
the twin's oracle and state-based policies read, and episode/seed, episode/step, episode/id.

Reply: actions (chunk, 8): 7 joint velocities + gripper. As the openpi DROID example does,
the gripper is binarised (> 0.5 -> closed) and every value clipped to [-1, 1]; `horizon`
actions of a chunk run open-loop (8 for pi05_droid's 15-step chunks).
"""

from __future__ import annotations

import numpy as np

from indgen_core.specs import EPISODE_FIELDS, Spec, WireField, reply_array

IMAGE_SIZE = 224
CONTROL_HZ = 15
DELTA_PER_TICK = 0.2  # rad a joint moves per tick at normalised velocity 1 (3 rad/s)
#: IndGen's command topics carry DROID's values in robot units: joint velocities in rad/s (3 rad/s
#: at normalised velocity 1) and the gripper as a knuckle angle of 0 (open) .. 0.8 rad (closed)
RAD_PER_S_AT_ONE = DELTA_PER_TICK * CONTROL_HZ
GRIPPER_CLOSED_RAD = 0.8
EXTERIOR, WRIST = "exterior_1", "wrist"


def letterbox(image: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    from openpi_client import image_tools

    return image_tools.resize_with_pad(np.asarray(image, dtype=np.uint8), size, size)


class DroidSpec(Spec):
    name = "droid"
    horizon = 8
    action_names = (*(f"joint_{i}" for i in range(1, 8)), "gripper")
    request_fields = (
        WireField(
            "observation/exterior_image_1_left",
            "uint8",
            (IMAGE_SIZE, IMAGE_SIZE, 3),
            "the exterior camera, RGB, letterboxed to 224 x 224 (openpi's resize_with_pad)",
            "when the camera is sent (cameras:=exterior_1,...)",
        ),
        WireField(
            "observation/wrist_image_left",
            "uint8",
            (IMAGE_SIZE, IMAGE_SIZE, 3),
            "the wrist camera, RGB, letterboxed to 224 x 224",
            "when the camera is sent (cameras:=...,wrist)",
        ),
        WireField("observation/joint_position", "float64", (7,), "the arm's measured joint positions, rad"),
        WireField("observation/gripper_position", "float64", (1,), "the gripper, 0 open .. 1 closed"),
        WireField("prompt", "str", (), "the task's language instruction"),
        *EPISODE_FIELDS,
        WireField(
            "privileged/objects/",
            "float64",
            (7,),
            "each object's pose: position (m) and quaternion (w, x, y, z), one key per object",
            "simulation only (privileged:=true)",
        ),
        WireField("privileged/task", "str", (), "the task's name (stack, scale)", "simulation only (privileged:=true)"),
    )
    reply_fields = (
        WireField(
            "actions",
            "float32",
            ("chunk", 8),
            "7 joint velocities (1 = 3 rad/s, clipped to [-1, 1]) and the gripper (> 0.5 closes); the first "
            "8 of a chunk run open-loop at 15 Hz",
        ),
    )

    def request(self, obs, setup, step):
        req = {
            "observation/joint_position": np.asarray(obs["joint_position"], dtype=np.float64),
            "observation/gripper_position": np.array([obs["gripper_position"]], dtype=np.float64),
            "prompt": setup.language_instruction,
            "episode/seed": np.uint64(setup.seed),
            "episode/step": np.int64(step),
            "episode/id": setup.trial_id,
        }
        images = obs.get("images") or {}
        if EXTERIOR in images:
            req["observation/exterior_image_1_left"] = letterbox(images[EXTERIOR])
        if WRIST in images:
            req["observation/wrist_image_left"] = letterbox(images[WRIST])
        for name, pose in (obs.get("objects") or {}).items():
            req[f"privileged/objects/{name}"] = np.asarray(pose, dtype=np.float64)
        if obs.get("objects"):  # the task, for the simulator's privileged-state policies
            req["privileged/task"] = obs.get("task") or setup.options.get("task") or setup.axis
        return req

    def warmup_observation(self, cameras):
        """Black frames of every camera the node sends and the arm at zero: pi0.5 compiles for
        these shapes on its first request."""
        frame = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
        return {"joint_position": np.zeros(7), "gripper_position": 0.0, "images": dict.fromkeys(cameras, frame)}

    def actions(self, reply):
        arr = reply_array(reply, width=8)
        out = []
        for a in arr[: self.horizon]:
            gripper = 1.0 if a[7] > 0.5 else 0.0
            out.append({"joint_velocity": np.clip(a[:7], -1.0, 1.0), "gripper": gripper})
        return out
