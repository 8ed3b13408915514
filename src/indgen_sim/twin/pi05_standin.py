"""A stand-in for pi0.5-DROID behind `indgen serve-policy droid_pi05_standin`: the camera-to-
policy path of a real campaign, end to end, without a GPU.

It takes exactly pi05_droid's observation (openpi's DROID example): two 224 x 224 RGB uint8
images, 7 joint positions, the gripper position and the prompt, and refuses anything else,
in particular any privileged key, so a run through it proves the request a real pi0.5 server
would get. It answers pi05_droid's (15, 8) chunks: a slow, deterministic sway of the first
joint around where the arm is, towards DROID's reset pose for the others, gripper open. It
does not solve the task; it moves safely.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from indgen_core.policy import Policy

IMAGES = ("observation/exterior_image_1_left", "observation/wrist_image_left")
REQUIRED = (*IMAGES, "observation/joint_position", "observation/gripper_position", "prompt")
#: what the DROID spec adds for IndGen's own policies; pi0.5 ignores them
ALLOWED_EXTRA = ("episode/seed", "episode/step", "episode/id")
RESET = np.array([0.0, -np.pi / 5, 0.0, -4 * np.pi / 5, 0.0, 3 * np.pi / 5, 0.0])
CHUNK = 15


class RequestRefused(ValueError):
    pass


def check_droid_request(obs: dict[str, Any]) -> None:
    """RequestRefused unless `obs` is exactly what pi05_droid takes."""
    missing = [k for k in REQUIRED if k not in obs]
    extra = [k for k in obs if k not in REQUIRED and k not in ALLOWED_EXTRA]
    if missing or extra:
        raise RequestRefused(f"not a pi05_droid request: missing {missing}, unexpected {extra}")
    for key in IMAGES:
        image = obs[key]
        if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.shape != (224, 224, 3):
            raise RequestRefused(
                f"{key} must be a 224 x 224 x 3 uint8 image, got "
                f"{getattr(image, 'dtype', type(image))} {getattr(image, 'shape', '')}"
            )
    if np.asarray(obs["observation/joint_position"]).shape != (7,):
        raise RequestRefused("observation/joint_position must hold 7 values")
    if np.asarray(obs["observation/gripper_position"]).shape != (1,):
        raise RequestRefused("observation/gripper_position must hold 1 value")
    if not isinstance(obs["prompt"], str):
        raise RequestRefused("prompt must be a string")


class Pi05StandIn(Policy):
    metadata: Mapping[str, Any] = {
        "policy": "droid_pi05_standin",
        "spec": "droid",
        "stands_in_for": "pi05_droid",
        "privileged": False,
    }

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        check_droid_request(obs)
        q = np.asarray(obs["observation/joint_position"], dtype=np.float64)
        step = int(obs.get("episode/step", 0))
        t = (step + np.arange(CHUNK)) / 15.0
        actions = np.zeros((CHUNK, 8))
        toward = np.clip((RESET - q) * 0.5, -0.05, 0.05)  # normalised DROID velocity
        actions[:, :7] = toward
        actions[:, 0] = 0.04 * np.sin(2 * np.pi * 0.2 * t)
        return {"actions": actions}
