"""LIBERO's scripted oracle: pick and place through LIBERO's own OSC_POSE controller, on
privileged state (object poses and the pick object's footprint from the world).

A small state machine: align the gripper's closing axis with the object's short side above
it, descend to a grasp height below the object's top, close, lift, carry over the basket,
lower, open, retreat. If the object slips out while lifting or carrying, it starts over.
Actions are LIBERO's: a delta position (1.0 = 5 cm per step) and delta rotation (1.0 = 0.5 rad
per step) for the controller, and the gripper (-1 open, +1 close). Its successes at each
(task, axis, k) are the feasibility certificates of those levels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from indgen_core.policy import Policy

POS_SCALE, ROT_SCALE = 0.05, 0.5  # OSC_POSE output_max for an input of 1.0
GAIN = 1.0
CARRY_Z = 0.28  # eef height while carrying
ABOVE = 0.10  # approach height above the object's top
MIN_Z = 0.012  # the fingertips reach the floor below this eef height
CLOSE_STEPS, OPEN_STEPS = 14, 10


def _rotation(axis_angle: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(axis_angle))
    if angle < 1e-9:
        return np.eye(3)
    k = axis_angle / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def _wrap_half_turn(a: float) -> float:
    """An angle difference modulo pi (a parallel gripper is symmetric under a half turn)."""
    return (a + math.pi / 2) % math.pi - math.pi / 2


class LiberoOracle(Policy):
    metadata: Mapping[str, Any] = {"policy": "libero_oracle", "spec": "libero", "privileged": True}

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.phase, self.count, self.target = "approach", 0, None

    def _move(self, eef: np.ndarray, target: np.ndarray, yaw_error: float, grip: float) -> np.ndarray:
        a = np.zeros(7)
        a[:3] = np.clip(GAIN * (target - eef) / POS_SCALE, -1, 1)
        a[5] = np.clip(yaw_error / ROT_SCALE, -1, 1)
        a[6] = grip
        return a

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        try:
            state = np.asarray(obs["observation/state"], dtype=float)
            pick, place = str(obs["privileged/pick"]), str(obs["privileged/place"])
            grasp = np.asarray(obs["privileged/grasp"], dtype=float)
            obj = np.asarray(obs[f"privileged/objects/{pick}"], dtype=float)[:3]
            basket = np.asarray(obs[f"privileged/objects/{place}"], dtype=float)[:3]
        except KeyError as exc:
            raise ValueError(f"the LIBERO oracle needs privileged state (sim only): missing {exc}") from None
        if int(obs.get("episode/step", 1)) == 0:
            self.reset()
        eef, rot = state[:3], _rotation(state[3:6])
        closing_yaw = math.atan2(rot[1, 1], rot[0, 1])  # the fingers close along the gripper's y axis
        yaw_error = _wrap_half_turn(grasp[3] - closing_yaw)
        grasp_z = max(grasp[2] - min(0.03, max(0.012, 0.5 * (grasp[2] - obj[2]) + 0.01)), MIN_Z)
        above_obj = np.array([grasp[0], grasp[1], grasp[2] + ABOVE])
        action = self._step(eef, obj, basket, grasp, grasp_z, above_obj, yaw_error)
        return {"actions": action[None, :]}

    def _step(self, eef, obj, basket, grasp, grasp_z, above_obj, yaw_error) -> np.ndarray:
        p = self.phase
        if p == "approach":
            if eef[2] < grasp[2] + 0.03 and np.linalg.norm(eef[:2] - grasp[:2]) > 0.02:
                return self._move(eef, np.array([eef[0], eef[1], above_obj[2]]), 0.0, -1)  # up first
            if np.linalg.norm(eef - above_obj) < 0.01 and abs(yaw_error) < 0.05:
                self.phase = "descend"
            return self._move(eef, above_obj, yaw_error, -1)
        if p == "descend":
            target = np.array([grasp[0], grasp[1], grasp_z])
            if abs(eef[2] - grasp_z) < 0.006 or (eef[2] < grasp_z + 0.02 and self.count > 40):
                self.phase, self.count = "close", 0
            self.count += 1
            return self._move(eef, target, yaw_error, -1)
        if p == "close":
            self.count += 1
            if self.count >= CLOSE_STEPS:
                self.phase, self.count = "lift", 0
            return self._move(eef, eef, 0.0, 1)
        if p in ("lift", "carry", "lower"):
            if np.linalg.norm(obj - eef) > 0.08:  # slipped out: start over
                self.phase, self.count = "approach", 0
                return self._move(eef, eef + [0, 0, 0.05], 0.0, -1)
            over = np.array([basket[0], basket[1], CARRY_Z])
            if p == "lift":
                if eef[2] > CARRY_Z - 0.02:
                    self.phase = "carry"
                return self._move(eef, np.array([eef[0], eef[1], CARRY_Z]), 0.0, 1)
            if p == "carry":
                if np.linalg.norm(eef[:2] - over[:2]) < 0.01:
                    self.phase, self.count, self.target = "lower", 0, None
                return self._move(eef, over, 0.0, 1)
            low = np.array([basket[0], basket[1], basket[2] + 0.10 + (eef[2] - obj[2])])
            self.count += 1
            if self.count % 10 == 0:  # blocked (the object sits on the rim or on the handle): let go here
                stuck, self.target = self.target is not None and self.target - eef[2] < 0.003, eef[2]
            else:
                stuck = False
            if eef[2] - low[2] < 0.01 or stuck:
                self.phase, self.count = "release", 0
            return self._move(eef, low, 0.0, 1)
        if p == "release":
            self.count += 1
            if self.count >= OPEN_STEPS:
                self.phase = "retreat"
            return self._move(eef, eef, 0.0, -1)
        return self._move(eef, np.array([eef[0], eef[1], CARRY_Z]), 0.0, -1)  # retreat and stay
