"""The LIBERO spec (openpi's LIBERO example, pi05_libero): what a pi0.5-LIBERO server, or
OpenVLA-OFT behind an openpi-compatible server, expects.

Request: observation/image (agentview) and observation/wrist_image, each rotated 180 degrees
(LIBERO renders upside down) and letterboxed to 224 x 224; observation/state (8) = end-effector
position (3) + axis-angle (3) + gripper finger positions (2); prompt = the task's language.
In simulation IndGen adds privileged keys (privileged/objects/<name>: position + quaternion,
privileged/pick, privileged/place, privileged/grasp: the pick object's top and footprint)
that pi0.5 ignores and the LIBERO oracle reads.

Reply: actions (chunk, 7): end-effector delta pose (6, LIBERO's OSC_POSE controller, clipped
to [-1, 1] as the controller does) and the gripper (binarised: > 0 closes, else -1 opens).
openpi re-plans every 5 steps (`horizon`); the world waits 10 no-op steps before the first
request and runs at most 280 steps for LIBERO-Object.
"""

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

SETTLE_STEPS = 10
MAX_STEPS = 280
NOOP = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0])


def upright(image: np.ndarray) -> np.ndarray:
    """LIBERO's images come upside down; openpi rotates them by 180 degrees."""
    return np.ascontiguousarray(np.asarray(image)[::-1, ::-1])


class LiberoSpec(Spec):
    name = "libero"
    horizon = 5
    action_names = ("dx", "dy", "dz", "droll", "dpitch", "dyaw", "gripper")
    request_fields = (
        WireField(
            "observation/image",
            "uint8",
            (224, 224, 3),
            "the agentview camera, RGB, rotated 180 degrees and letterboxed to 224 x 224",
            "when the camera is rendered",
        ),
        WireField(
            "observation/wrist_image",
            "uint8",
            (224, 224, 3),
            "the wrist camera, as the agentview",
            "when the camera is rendered",
        ),
        WireField(
            "observation/state", "float64", (8,), "end-effector position (3, m), axis-angle (3), finger positions (2)"
        ),
        WireField("prompt", "str", (), "the task's language instruction"),
        *EPISODE_FIELDS,
        *PICK_PLACE_PRIVILEGED,
    )
    reply_fields = (
        WireField(
            "actions",
            "float32",
            ("chunk", 7),
            "end-effector delta pose (6, OSC_POSE, clipped to [-1, 1]) and the gripper (> 0 closes); the first 5 of "
            "a chunk run open-loop",
        ),
    )

    def request(self, obs, setup, step):
        req = {
            "observation/state": np.asarray(obs["state"], dtype=np.float64).reshape(8),
            "prompt": setup.language_instruction or obs.get("language", ""),
            "episode/seed": np.uint64(setup.seed),
            "episode/step": np.int64(step),
            "episode/id": setup.trial_id,
        }
        images = obs.get("images") or {}
        if "agentview" in images:
            req["observation/image"] = letterbox(upright(images["agentview"]))
        if "wrist" in images:
            req["observation/wrist_image"] = letterbox(upright(images["wrist"]))
        add_pick_place_privileged(req, obs)
        return req

    def actions(self, reply):
        arr = reply_array(reply, width=7)
        # the OSC controller clips its input to [-1, 1] itself; doing it here keeps the
        # executed action what the logs show
        return [np.concatenate([np.clip(a[:6], -1.0, 1.0), [1.0 if a[6] > 0 else -1.0]]) for a in arr[: self.horizon]]


def quat_xyzw_to_axis_angle(q) -> np.ndarray:
    """openpi's conversion of robosuite's (x, y, z, w) end-effector quaternion to the state's
    axis-angle (the angle in [0, pi])."""
    x, y, z, w = (float(c) for c in q)
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    w = min(1.0, w)
    den = float(np.sqrt(max(0.0, 1.0 - w * w)))
    if den < 1e-9:
        return np.zeros(3)
    return np.array([x, y, z]) * 2.0 * float(np.arccos(w)) / den


def axis_angle_to_quat_xyzw(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.concatenate([v / angle * np.sin(angle / 2), [np.cos(angle / 2)]])
