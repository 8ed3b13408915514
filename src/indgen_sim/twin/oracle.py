"""The twin's scripted oracle: pick and place through inverse kinematics on privileged state.

It reads what the DROID spec sends (joint positions, gripper position) plus the twin's
privileged object poses, and answers with DROID actions (normalised joint velocities and a
gripper command), so it is served like any policy (`indgen serve-policy droid_twin_oracle`).

It is reactive: every tick it decides from the state alone where the gripper's pinch point
should go (above the object, down to it, close, lift, over the target, down until the object
is just above its resting place, open, retreat), so it recovers from any disturbance and a
policy can learn it as a function of the state. A damped least-squares step on the pinch
site's Jacobian turns the Cartesian error into joint velocities, with a null-space pull
towards DROID's reset pose. Its successes at every level are the levels' feasibility
certificates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mujoco
import numpy as np

from indgen_core.policy import Policy
from indgen_core.specs.droid import CONTROL_HZ, DELTA_PER_TICK
from indgen_sim.twin import assets, scene, tasks
from indgen_sim.twin.scene import BLOCK, BOWL_T, CUP_H

MAX_LINEAR = 0.25  # m/s
MAX_ANGULAR = 1.0  # rad/s
KP_POS, KP_ROT, KP_NULL = 3.0, 2.5, 0.5
DAMPING = 0.05
CLOSED_ON = {"stack": 0.45, "scale": 0.24}  # gripper position when closed on the block / the cup
GRASP_DZ = {"stack": 0.0, "scale": CUP_H / 2 - 0.035}  # pinch height above the object's centre
CLOSE_WITHIN = 0.008  # m: the pinch this close to the grasp point closes the gripper
# Moving down onto the grasp point or the resting place, aim this far past it: a proportional
# approach creeps up on its goal, and a learner imitating it stalled just outside the radius
# where the gripper closes or opens; aimed past, the approach crosses it at a few cm/s.
AIM_PAST = 0.01


def _up(dz: float) -> np.ndarray:
    return np.array([0.0, 0.0, dz])


def _yaw_of(quat: np.ndarray) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


class TwinKinematics:
    """Forward kinematics and the pinch-site Jacobian of the twin's robot."""

    def __init__(self, builtin: bool = False):
        self.model = scene.build(assets.robot_source(prefer_builtin=builtin), scene.Layout())
        self.data = mujoco.MjData(self.model)
        self.qadr = np.array([self.model.joint(n).qposadr[0] for n in scene.ARM_JOINTS])
        self.dadr = np.array([self.model.joint(n).dofadr[0] for n in scene.ARM_JOINTS])
        self.site = self.model.site("gripper/pinch").id
        self.set(scene.RESET_Q)
        self.down = self.data.site_xmat[self.site].reshape(3, 3).copy()  # the gripper pointing down, yaw 0

    def set(self, q: np.ndarray) -> None:
        self.data.qpos[self.qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def pinch(self) -> tuple[np.ndarray, np.ndarray]:
        return self.data.site_xpos[self.site].copy(), self.data.site_xmat[self.site].reshape(3, 3).copy()

    def jacobian(self) -> np.ndarray:
        jp, jr = np.zeros((3, self.model.nv)), np.zeros((3, self.model.nv))
        mujoco.mj_jacSite(self.model, self.data, jp, jr, self.site)
        return np.vstack([jp[:, self.dadr], jr[:, self.dadr]])


class TwinOracle(Policy):
    metadata: Mapping[str, Any] = {"policy": "droid_twin_oracle", "spec": "droid", "privileged": True}

    def __init__(self, builtin: bool = False):
        self.kin = TwinKinematics(builtin)

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        q = np.asarray(obs["observation/joint_position"], dtype=float).reshape(7)
        g = float(np.asarray(obs["observation/gripper_position"]).reshape(-1)[0])
        objects = {
            k.split("/")[-1]: np.asarray(v, dtype=float) for k, v in obs.items() if k.startswith("privileged/objects/")
        }
        task = str(obs.get("privileged/task", ""))
        if not objects or task not in tasks.TASKS:
            raise ValueError("the twin oracle needs privileged object poses and the task (sim only)")
        twist, gripper = self.command(q, g, task, objects)
        return {"actions": np.concatenate([self.joint_velocities(q, twist), [gripper]])[None, :]}

    def command(self, q: np.ndarray, g: float, task: str, objects) -> tuple[np.ndarray, float]:
        """The Cartesian command of this tick: pinch twist (linear m/s, angular rad/s) and gripper."""
        self.kin.set(q)
        pinch, rot = self.kin.pinch()
        target, gripper, yaw = self.decide(task, objects, pinch, g)
        if target is None:
            return np.zeros(6), gripper
        v = KP_POS * (target - pinch)
        speed = np.linalg.norm(v)
        if speed > MAX_LINEAR:
            v *= MAX_LINEAR / speed
        err = np.zeros(3)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, (self._desired_rotation(rot, yaw) @ rot.T).flatten())
        mujoco.mju_quat2Vel(err, quat, 1.0)
        w = KP_ROT * err
        if np.linalg.norm(w) > MAX_ANGULAR:
            w *= MAX_ANGULAR / np.linalg.norm(w)
        return np.concatenate([v, w]), gripper

    def joint_velocities(self, q: np.ndarray, twist: np.ndarray) -> np.ndarray:
        """DROID joint-velocity action for a pinch twist: damped least squares on the pinch
        Jacobian, plus a null-space pull towards the reset pose."""
        if not np.any(twist):
            return np.zeros(7)
        self.kin.set(q)
        jac = self.kin.jacobian()
        jjt = jac @ jac.T + DAMPING**2 * np.eye(6)
        qdot = jac.T @ np.linalg.solve(jjt, twist)
        null = np.eye(7) - jac.T @ np.linalg.solve(jjt, jac)
        qdot += null @ (KP_NULL * (scene.RESET_Q - q))
        action = qdot / (DELTA_PER_TICK * CONTROL_HZ)  # DROID: 1.0 moves a joint 0.2 rad per 1/15 s tick
        peak = np.abs(action).max()
        return action / peak if peak > 1.0 else action

    @staticmethod
    def rest_point(task: str, place: np.ndarray) -> np.ndarray:
        """Where the picked object's centre goes: just above its resting place on the target."""
        if task == "stack":
            return place[:3] + _up(BLOCK + 0.006)
        return place[:3] + _up(BOWL_T + CUP_H / 2 + 0.008)

    def decide(self, task: str, objects, pinch: np.ndarray, g: float):
        """(pinch target or None to hold still, gripper command, yaw to align with or None)."""
        objs = tasks.OBJECTS[task]
        obj, place = objects[objs.pick], objects[objs.place]
        o = obj[:3]
        yaw = _yaw_of(obj[3:]) if task == "stack" else None
        grasp = o + _up(GRASP_DZ[task])
        rest = self.rest_point(task, place)
        clear = max(rest[2] + 0.10, 0.15)  # carrying height of the object's centre
        near = np.linalg.norm(grasp - pinch) < 0.02
        holding = near and g > 0.6 * CLOSED_ON[task]
        placed = np.linalg.norm(o[:2] - rest[:2]) < 0.008 and abs(o[2] - rest[2]) < 0.012
        if placed and not holding and g < 0.1:  # released on the target: retreat, then stay
            top = o[2] + 0.15
            return (None if pinch[2] > top - 0.01 else np.array([pinch[0], pinch[1], top])), 0.0, None
        if placed:  # on the target, still held: open
            return None, 0.0, None
        if holding:
            if np.linalg.norm(o[:2] - rest[:2]) > 0.01:
                if o[2] < clear - 0.02:  # lift straight up first
                    return pinch + _up(clear - o[2]), 1.0, yaw
                return pinch + np.array([*(rest[:2] - o[:2]), clear - o[2]]), 1.0, yaw
            return pinch + (rest - o) - _up(AIM_PAST), 1.0, yaw  # over the target: lower the object onto it
        if g > 0.1 and not near:  # closed on nothing: open and back off
            return pinch + _up(0.05), 0.0, yaw
        if g > 0.1:  # closing at the object: hold still until it is closed (then `holding`)
            return None, 1.0, yaw
        if np.linalg.norm(pinch[:2] - grasp[:2]) > 0.01:  # go above the object first
            above = grasp + _up(0.10)
            if pinch[2] < grasp[2] + 0.05:
                return np.array([pinch[0], pinch[1], above[2]]), 0.0, yaw
            return above, 0.0, yaw
        if np.linalg.norm(grasp - pinch) > CLOSE_WITHIN:  # straight down to it
            return grasp - _up(AIM_PAST), 0.0, yaw
        return None, 1.0, yaw  # there: close

    def _desired_rotation(self, rot: np.ndarray, yaw: float | None) -> np.ndarray:
        """Pointing down; yawed to the block's faces (the nearest of its four), or keeping the
        current yaw for a round object."""
        current = np.arctan2(rot[1, 0], rot[0, 0]) - np.arctan2(self.kin.down[1, 0], self.kin.down[0, 0])
        if yaw is None:
            target = current
        else:
            candidates = yaw + np.arange(-2, 3) * np.pi / 2
            target = candidates[np.argmin(np.abs(np.angle(np.exp(1j * (candidates - current)))))]
        c, s = np.cos(target), np.sin(target)
        return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ self.kin.down
