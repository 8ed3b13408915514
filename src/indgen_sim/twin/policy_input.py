"""What the twin's tau_0 MLP reads and what its output is scaled by: the state-feature layout
(joints, gripper, pinch point, object offsets, the distances the oracle's phases switch on, the
pick object's yaw, the task) and the twist scale.

Kept apart from bc.py because two policies share it: the state-based one (bc.py) fills it
from the simulator's privileged poses, the camera-based one (vision/) from what it sees, and
both feed the same MLP; the vision policy's training data use it too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indgen_sim.twin import tasks

FEATURES = 7 + 1 + 3 + 3 + 3 + 3 + 3 + 2 + len(tasks.TASKS)
TWIST_SCALE = np.array([0.25, 0.25, 0.25, 1.0, 1.0, 1.0])  # the oracle's speed limits


def object_poses(request: dict[str, Any]) -> dict[str, np.ndarray]:
    """The simulator's object poses (position and quaternion) in a request's privileged keys, by object name."""
    return {
        k.split("/")[-1]: np.asarray(v, dtype=float) for k, v in request.items() if k.startswith("privileged/objects/")
    }


_KIN: dict = {}


def kinematics(builtin: bool = False):
    """The robot model's kinematics (the built-in FR3's or the menagerie one's), one shared instance each."""
    if builtin not in _KIN:
        from indgen_sim.twin.oracle import TwinKinematics

        _KIN[builtin] = TwinKinematics(builtin)
    return _KIN[builtin]


def features(obs: dict[str, Any], builtin: bool = False) -> np.ndarray:
    """The policy input from a DROID-spec request (with the twin's privileged keys), with the
    pinch point of the robot model the policy was trained on (the two grippers differ)."""
    task = str(obs.get("privileged/task", ""))
    if task not in tasks.TASKS:
        raise ValueError("the twin's state-based policy needs privileged/task and object poses (sim only)")
    objs = tasks.OBJECTS[task]
    pick = np.asarray(obs[f"privileged/objects/{objs.pick}"], dtype=float)
    place = np.asarray(obs[f"privileged/objects/{objs.place}"], dtype=float)
    q = np.asarray(obs["observation/joint_position"], dtype=float).reshape(7)
    kin = kinematics(builtin)
    kin.set(q)
    pinch, _ = kin.pinch()
    return state_features(
        q,
        float(np.asarray(obs["observation/gripper_position"]).reshape(-1)[0]),
        pinch,
        pick[:3],
        place[:3],
        yaw_code(task, pick[3:7]),
        task,
    )


def yaw_code(task: str, quat) -> np.ndarray:
    """The pick object's yaw as (sin 4 yaw, cos 4 yaw): a block looks the same every 90 degrees
    (and the cup is round: yaw 0)."""
    w, x, y, z = quat
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)) if task == "stack" else 0.0
    return np.array([np.sin(4 * yaw), np.cos(4 * yaw)])


def state_features(q, g: float, pinch, pick, place, yaw: np.ndarray, task: str) -> np.ndarray:
    """The layout the MLP reads; the camera-based policy fills it from what it sees."""
    onehot = np.eye(len(tasks.TASKS))[tasks.TASKS.index(task)]
    return np.concatenate(
        [q, [g], pinch, pick - pinch, place - pinch, place - pick, closeness(pick - pinch, place - pick), yaw, onehot]
    )


def closeness(to_pick, to_place) -> np.ndarray:
    """The distances the oracle's phases switch on (gripper to object, in 3-D and across the
    table; object to target across the table), on a log scale: its boundaries lie at 5 mm to
    2 cm, a sliver of the raw offsets' range, and a small MLP given only the offsets smeared
    them into states where it hovered forever (over the object, open; over the target,
    holding)."""
    to_pick, to_place = np.asarray(to_pick, dtype=float), np.asarray(to_place, dtype=float)
    return np.log(
        np.array([np.linalg.norm(to_pick), np.linalg.norm(to_pick[:2]), np.linalg.norm(to_place[:2])]) + 0.002
    )
