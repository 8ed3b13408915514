"""What the twin's vision policy's network sees and predicts: the two request images cropped
and shrunk to its input, the proprioception it reads beside them (gripper, task, the pinch
point's pose), the task read from the prompt, its training labels (where the objects are) and
their per-task scales, and where a held object sits in the hand.

A held object (the gripper stopped part-closed, `holding`) is not looked for: it is where the
hand holds it, an offset learned from the training labels (`in_hand_offsets`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from indgen_core.specs.droid import EXTERIOR, WRIST
from indgen_sim.twin import policy_input, tasks

logger = logging.getLogger(__name__)

IMAGE = 64  # pixels a side the network sees (the 224 x 224 request images, box-filtered)
TARGETS = 3 + 3 + 2  # pick and place object positions (robot base frame), (sin, cos) of 4 x pick yaw
REQUEST_IMAGES = {EXTERIOR: "observation/exterior_image_1_left", WRIST: "observation/wrist_image_left"}


def task_of_prompt(prompt: str) -> str:
    """The task from the instruction, the only place a pi0.5 policy learns it from."""
    text = str(prompt).lower()
    if "cup" in text or "bowl" in text:
        return "scale"
    if "block" in text:
        return "stack"
    raise ValueError(f"the twin's vision policy knows the stack and cup-in-bowl tasks, not {str(prompt)[:80]!r}")


#: the part of each 224 x 224 request image the network sees (rows, columns): the exterior
#: camera's table, where the objects are (the whole image would leave a block 2 pixels wide);
#: all of the wrist camera's view
CROPS = {EXTERIOR: (slice(96, 224), slice(24, 152)), WRIST: (slice(0, 224), slice(0, 224))}


def shrink(image: np.ndarray, camera: str) -> np.ndarray:
    """A request image (224 x 224 RGB) as the network's IMAGE x IMAGE uint8 input."""
    from PIL import Image

    rows, cols = CROPS[camera]
    crop = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[rows, cols])
    return np.asarray(Image.fromarray(crop).resize((IMAGE, IMAGE), Image.Resampling.BOX))


PROPRIO = 1 + len(tasks.TASKS) + 3 + 9


def proprio(q, g: float, task: str, kin) -> np.ndarray:
    """Gripper, task and the pinch point's pose from the kinematics (where the wrist camera
    looks from): what the network reads besides the images. Not the joint angles: on the
    oracle's paths they predict where the objects are without a look at the images, a
    shortcut that fails as soon as the arm goes elsewhere."""
    kin.set(np.asarray(q, dtype=float).reshape(7))
    pinch, rot = kin.pinch()
    return np.concatenate([[g], np.eye(len(tasks.TASKS))[tasks.TASKS.index(task)], pinch, rot.ravel()]).astype(
        np.float32
    )


#: gripper positions (0 open .. 1 closed) at which the fingers stopped on something: the
#: object is in the hand (closed on nothing, they read 1.0; on the block 0.48, on the cup 0.31)
HOLDING = (0.15, 0.9)


def holding(g: float) -> bool:
    return HOLDING[0] < g < HOLDING[1]


def in_hand_offsets(frames: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Where a held object sits in the pinch frame, per task: the median over the training
    frames in which the gripper is `holding` it (labels within 5 cm of the pinch point).

    Why: while the arm carries it, the exterior camera sees the object behind the hand and the
    wrist camera sees it between the fingers, and perception put it 21 mm off (median, 30
    unseen tau_0 Stack episodes) against 6-8 mm for one on the table; fed the true position
    only while the gripper was closed, the same policy solved 24 of 30 episodes instead of 11.
    The hand's pose is known from the joint positions (pi0.5 sees them too), and the grasp
    leaves the object within about 2 mm of one place in the hand."""
    state, target = frames["state"], frames["target"]
    at = 1 + len(tasks.TASKS)  # proprio's layout: gripper, task, pinch point, pinch rotation
    pinch, rot = state[:, at : at + 3], state[:, at + 3 : at + 12].reshape(-1, 3, 3)
    offset = np.einsum("bji,bj->bi", rot, target[:, 0:3] - pinch)  # rot^T (pick - pinch)
    held = (state[:, 0] > HOLDING[0]) & (state[:, 0] < HOLDING[1]) & (np.linalg.norm(offset, axis=1) < 0.05)
    out = {}
    for i, task in enumerate(tasks.TASKS):
        mine = held & (state[:, 1 + i] > 0.5)
        if mine.any():
            out[task] = [float(v) for v in np.median(offset[mine], axis=0)]
        else:  # only in tiny runs (tests): no demonstration got that far
            logger.warning(
                f"  no training frame holds the {task} task's object: a held one is taken to be at the pinch point"
            )
            out[task] = [0.0, 0.0, 0.0]
    return out


def targets(request: dict[str, Any]) -> np.ndarray:
    """Perception's training label from the simulator's privileged keys (training only): where
    the objects are, not where they are from the gripper (that would be learnable from the arm
    alone along the demonstrations)."""
    task = str(request["privileged/task"])
    objs = tasks.OBJECTS[task]
    pick = np.asarray(request[f"privileged/objects/{objs.pick}"], dtype=float)
    place = np.asarray(request[f"privileged/objects/{objs.place}"], dtype=float)
    return np.concatenate([pick[:3], place[:3], policy_input.yaw_code(task, pick[3:7])]).astype(np.float32)


#: the least spread a label is normalised by: metres for positions, the yaw code's unit
SCALE_FLOOR = np.array([0.01] * 6 + [0.1] * 2, dtype=np.float32)


def task_index(state: np.ndarray) -> np.ndarray:
    """Each proprio row's task (an index into tasks.TASKS)."""
    return np.asarray(state)[:, 1 : 1 + len(tasks.TASKS)].argmax(1)


def task_scales(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-task mean and spread of perception's labels (len(TASKS) x TARGETS). Why per task: the
    two tasks' objects sit in different places (the bowl's y about 8 cm from the blue block's),
    so a spread over both is mostly that difference, and the blue block's own 5.5 cm of y across
    tau_0 layouts became a small part of the loss: the network estimated it 13 mm off at the
    median, pulled toward the middle (error against true y: correlation -0.84)."""
    task, target = task_index(data["state"]), np.asarray(data["target"], dtype=np.float32)
    mean, std = np.zeros((len(tasks.TASKS), TARGETS), np.float32), np.ones((len(tasks.TASKS), TARGETS), np.float32)
    for i in range(len(tasks.TASKS)):
        if (task == i).any():
            mean[i], std[i] = target[task == i].mean(0), np.maximum(target[task == i].std(0), SCALE_FLOOR)
    return mean, std
