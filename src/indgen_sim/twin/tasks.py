"""The two tasks of the paper's real-robot experiment, their object layout and what success
means for a person watching:

- stack ("Place the orange block on the blue block"): the orange block rests on the blue
  block's top face, the blue block still stands on its spacers, nothing moves, the gripper
  is open and no longer touches the orange block;
- scale ("Pick up the cup and put it in the black bowl"): the cup stands upright inside the
  bowl's wall on its base, nothing moves, the gripper is open and off the cup.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from indgen_sim import physics
from indgen_sim.twin.scene import BLOCK, BOWL_R, BOWL_T, CUP_H, CUP_R

TASKS = ("stack", "scale")


@dataclass(frozen=True)
class TaskObjects:
    pick: str
    place: str
    aside: tuple[str, ...]


OBJECTS = {
    "stack": TaskObjects("orange_block", "blue_block", ("cup", "bowl")),
    "scale": TaskObjects("cup", "bowl", ("orange_block", "blue_block")),
}


def task_of(axis: str, options: dict) -> str:
    task = options.get("task") or axis
    if task not in TASKS:
        from indgen_core.world import InvalidSetup

        raise InvalidSetup(f"the DROID twin runs the tasks {TASKS}, not '{task}' (axis {axis})")
    return task


def _yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def layout_objects(task: str, rng: np.random.Generator, blue_raise: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Initial poses (position of the body frame, quaternion) of every free object."""
    jitter = lambda s: rng.uniform(-s, s, size=2)  # noqa: E731
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if task == "stack":
        o, b = np.array([0.50, 0.12]) + jitter(0.03), np.array([0.55, -0.08]) + jitter(0.03)
        poses["orange_block"] = (np.array([*o, BLOCK / 2]), _yaw_quat(rng.uniform(-0.35, 0.35)))
        yaw = rng.uniform(-0.35, 0.35)
        if blue_raise > 1e-6:
            poses["spacer"] = (np.array([*b, blue_raise / 2]), _yaw_quat(yaw))
        poses["blue_block"] = (np.array([*b, blue_raise + BLOCK / 2]), _yaw_quat(yaw))
        poses["cup"] = (np.array([0.36, 0.34, CUP_H / 2]), _yaw_quat(0))
        poses["bowl"] = (np.array([0.40, -0.42, 0.0]), _yaw_quat(0))
    else:
        c, w = np.array([0.47, 0.15]) + jitter(0.03), np.array([0.56, -0.15]) + jitter(0.03)
        poses["cup"] = (np.array([*c, CUP_H / 2]), _yaw_quat(rng.uniform(-3.0, 3.0)))
        poses["bowl"] = (np.array([*w, 0.0]), _yaw_quat(rng.uniform(-3.0, 3.0)))
        poses["orange_block"] = (np.array([0.30, 0.36, BLOCK / 2]), _yaw_quat(0))
        poses["blue_block"] = (np.array([0.30, -0.36, blue_raise + BLOCK / 2]), _yaw_quat(0))
        if blue_raise > 1e-6:
            poses["spacer"] = (np.array([0.30, -0.36, blue_raise / 2]), _yaw_quat(0))
    return poses


@dataclass
class Check:
    placed: bool
    detail: str
    progress: float = 0.0


def check(
    task: str,
    m: mujoco.MjModel,
    d: mujoco.MjData,
    gripper_open: bool,
    gripper_bodies: list[int],
    blue_raise: float,
    bowl_scale: float,
) -> Check:
    """Is the task done as a person would judge it, at this instant (stability is checked by
    the caller over time)?"""
    objs = OBJECTS[task]
    pick = m.body(objs.pick).id
    place = m.body(objs.place).id
    p, q = d.xpos[pick], d.xpos[place]
    touching = physics.in_contact(m, d, gripper_bodies, [pick])
    lifted = p[2] > (BLOCK / 2 if task == "stack" else CUP_H / 2) + 0.03
    if task == "stack":
        on_top = abs(p[2] - (q[2] + BLOCK)) < 0.01 and np.linalg.norm(p[:2] - q[:2]) < BLOCK / 2
        blue_in_place = abs(q[2] - (blue_raise + BLOCK / 2)) < 0.01
        placed = on_top and blue_in_place and gripper_open and not touching
        detail = (
            "orange block resting on the blue block"
            if placed
            else "orange block not on the blue block"
            if not on_top
            else "the blue block was knocked off its spacers"
            if not blue_in_place
            else "gripper still holding the orange block"
        )
        progress = 1.0 if placed else 0.6 if on_top else 0.3 if lifted or touching else 0.0
        return Check(bool(placed), detail, progress)
    up = d.xmat[pick].reshape(3, 3)[2, 2] > 0.9
    bowl_up = d.xmat[place].reshape(3, 3)[2, 2] > 0.95
    inner = BOWL_R * bowl_scale - CUP_R * 0.6
    inside = np.linalg.norm(p[:2] - q[:2]) < inner
    base_top = q[2] + BOWL_T * bowl_scale
    seated = abs((p[2] - CUP_H / 2) - base_top) < 0.015
    placed = inside and seated and up and bowl_up and gripper_open and not touching
    detail = (
        "cup standing in the bowl"
        if placed
        else "cup not inside the bowl"
        if not (inside and seated)
        else "cup or bowl tipped over"
        if not (up and bowl_up)
        else "gripper still holding the cup"
    )
    progress = 1.0 if placed else 0.6 if inside else 0.3 if lifted or touching else 0.0
    return Check(bool(placed), detail, progress)
