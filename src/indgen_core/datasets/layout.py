"""DROID's dataset layout, as openpi's DROID fine-tuning reads it.

openpi's example converter (examples/droid/convert_droid_data_to_lerobot.py) writes, per frame
at 15 fps: exterior_image_1_left, exterior_image_2_left, wrist_image_left (180 x 320 RGB, the
DROID RLDS resolution), joint_position (7), gripper_position (1) and actions (8: seven joint
velocities and the gripper position), with the language instruction as the task. IndGen writes
the same, plus what a study of generalisation needs to keep: the real stamps (`timestamp`
itself is frame index / fps, as lerobot computes it), the command the policy sent beside the
motion the arm made, and the level (the rest of an episode's record goes to
meta/indgen_episodes.jsonl).

`actions` are the arm's **executed** joint velocity over the tick (the change of the measured
joint positions times the frame rate, in DROID's normalised units: 1 = 3 rad/s) and the
**commanded** gripper position. The joints: a policy trained on the commands of a policy that
was clipped, stopped by a reflex or slowed by the controller would learn motions the robot
never made. The gripper: DROID records its command, and openpi's DROID client and IndGen's
DROID spec close the gripper only above 0.5; the position it reaches on an object (0.30-0.36 on
the cup) never crosses that, so a policy trained on it would never close. The commands stay
beside them whole as `commanded_actions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indgen_core.specs.droid import CONTROL_HZ, RAD_PER_S_AT_ONE

FPS = CONTROL_HZ
FRAME_SHAPE = (180, 320, 3)  # DROID's 16:9 frames
ROBOT_TYPE = "panda"  # what openpi's DROID converter declares (DROID's arm is a Franka)
#: IndGen's camera names -> DROID's feature names
CAMERA_KEYS = {
    "exterior_1": "exterior_image_1_left",
    "exterior_2": "exterior_image_2_left",
    "wrist": "wrist_image_left",
}
FORMATS = ("v2.1", "v3.0")


def features(cameras: list[str]) -> dict[str, dict[str, Any]]:
    """lerobot feature declarations for episodes with these cameras (IndGen's names)."""
    out: dict[str, dict[str, Any]] = {}
    for camera in cameras:
        out[CAMERA_KEYS[camera]] = {
            "dtype": "image",
            "shape": list(FRAME_SHAPE),
            "names": ["height", "width", "channel"],
        }
    out["joint_position"] = {"dtype": "float32", "shape": [7], "names": ["joint_position"]}
    out["gripper_position"] = {"dtype": "float32", "shape": [1], "names": ["gripper_position"]}
    out["actions"] = {"dtype": "float32", "shape": [8], "names": ["actions"]}
    out["commanded_actions"] = {"dtype": "float32", "shape": [8], "names": ["commanded_actions"]}
    # integer nanoseconds: lerobot's loader turns every float into float32 (torch.tensor of a
    # list), 128 s apart at today's Unix time; an int64 comes back exact
    out["real_timestamp_ns"] = {"dtype": "int64", "shape": [1], "names": None}
    out["level"] = {"dtype": "int64", "shape": [1], "names": None}
    return out


def frame_16_9(rgb: np.ndarray) -> np.ndarray:
    """A camera frame as DROID's 180 x 320: resized, and padded where its aspect is not 16:9
    (openpi's resize_with_pad, the same as the policy's own preprocessing)."""
    rgb = np.asarray(rgb, dtype=np.uint8)
    if rgb.shape == FRAME_SHAPE:
        return rgb
    from openpi_client import image_tools

    return np.asarray(image_tools.resize_with_pad(rgb, FRAME_SHAPE[0], FRAME_SHAPE[1]), dtype=np.uint8)


def droid_actions(q: np.ndarray, commanded: np.ndarray) -> np.ndarray:
    """(T, 8) actions from T + 1 measured joint states and T commands: the joint velocity over
    each tick (normalised as DROID's) and the commanded gripper position (DROID's convention)."""
    q = np.asarray(q, dtype=np.float64)
    commanded = np.asarray(commanded, dtype=np.float64).reshape(-1, 8)
    velocity = np.diff(q, axis=0) * FPS / RAD_PER_S_AT_ONE
    return np.concatenate([velocity, commanded[:, 7:8]], axis=1).astype(np.float32)


@dataclass
class Episode:
    """One episode in DROID's layout: `columns` holds one row per frame for every feature of
    `features(cameras)`; the rest describes where it came from."""

    task: str
    axis: str
    level: int
    outcome: str
    source: str  # "bag <path>" or "oracle <world>"
    trial_id: str
    columns: dict[str, np.ndarray]
    campaign_id: str = ""
    world: str = ""
    policy: str = ""
    seed: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def frames(self) -> int:
        return len(self.columns["actions"])

    @property
    def cameras(self) -> list[str]:
        return [camera for camera, key in CAMERA_KEYS.items() if key in self.columns]

    def record(self) -> dict[str, Any]:
        """What meta/indgen_episodes.jsonl keeps of it."""
        return {
            "trial_id": self.trial_id,
            "campaign_id": self.campaign_id,
            "world": self.world,
            "axis": self.axis,
            "level": self.level,
            "outcome": self.outcome,
            "policy": self.policy,
            "seed": self.seed,
            "task": self.task,
            "source": self.source,
            "frames": self.frames,
            **self.notes,
        }


def episode_columns(
    images: dict[str, list[np.ndarray]],
    q: np.ndarray,
    gripper: np.ndarray,
    commanded: np.ndarray,
    stamps: np.ndarray,
    level: int,
) -> dict[str, np.ndarray]:
    """The columns of an episode of T frames from T + 1 measured states (`q`, `gripper`: the
    state after the last frame's action is what makes that action's executed value), T
    commands and T stamps (integer ns); `images[camera]` holds T frames."""
    frames = len(stamps)
    if len(q) != frames + 1 or len(gripper) != frames + 1 or len(commanded) != frames:
        raise ValueError(f"{frames} frames need {frames + 1} states and {frames} commands")
    columns = {CAMERA_KEYS[camera]: np.stack([frame_16_9(f) for f in shots]) for camera, shots in images.items()}
    columns["joint_position"] = np.asarray(q[:-1], dtype=np.float32)
    columns["gripper_position"] = np.asarray(gripper[:-1], dtype=np.float32).reshape(frames, 1)
    columns["actions"] = droid_actions(q, commanded)
    columns["commanded_actions"] = np.asarray(commanded, dtype=np.float32).reshape(frames, 8)
    columns["real_timestamp_ns"] = np.asarray(stamps, dtype=np.int64).reshape(frames, 1)
    columns["level"] = np.full((frames, 1), level, dtype=np.int64)
    for name, column in columns.items():
        if column.dtype.kind == "f" and not np.all(np.isfinite(column)):
            raise ValueError(f"{name} holds values that are not finite")
    return columns
