"""The FR3 and its Robotiq as physics for the hardware stand-in: the twin's MuJoCo scene with
the arm driven by joint torques, as franka_hardware's effort interface drives the real one.

libfranka's torque interface adds the commanded torques to the robot's own gravity
compensation (the twin's bodies are gravity-compensated, `scene.py`). Whoever drives the arm
(the stand-in's controller model, or the robot holding itself after a reflex) hands this
class a torque per physics step; it clamps them to the joint torque limits and steps. It
also measures what franka's robot state reports: positions, velocities, accelerations and
the external torque on each joint (MuJoCo's constraint forces on the arm's joints: contacts,
joint limits and joint friction).

The scene is built by `build_scene(setup)`: what the person at the robot does between trials
(the objects of tau_k, placed where the setup's seed puts them; the arm stays where it is).

ROS-free; indgen_sim/standin/cell.py puts franka's and the Robotiq's controllers around it.
"""

from __future__ import annotations

import mujoco
import numpy as np

from indgen_core.axes.units import to_si
from indgen_core.records import TaskSetup
from indgen_sim.twin import scene, tasks
from indgen_sim.twin.builtin_fr3 import TORQUE
from indgen_sim.twin.world import DroidTwinWorld

#: the knuckle's travel in the twin (0 open .. 0.8 rad closed, robotiq_description's URDF limit)
KNUCKLE_CLOSED = 0.8
TORQUE_LIMITS = np.array(TORQUE)


class ArmPhysics:
    def __init__(self, builtin: bool = False):
        self.world = DroidTwinWorld(cameras=[], builtin=builtin)
        self.dt = 1.0 / (scene.CONTROL_HZ * scene.SUBSTEPS)
        self.gripper_target = 0.0  # rad of the knuckle joint
        self.steps = 0
        self.scenes = 0
        self.ddq = np.zeros(7)
        self.tau = np.zeros(7)
        self.wall_range: tuple[np.ndarray, np.ndarray] | None = None
        empty = TaskSetup.blank(world="fr3", axis="stack", in_distribution=True)
        self.build_scene(empty, keep_robot=False)

    def _torque_mode(self, m: mujoco.MjModel) -> None:
        """The twin's arm actuators as plain torque motors (its own lock-step world drives them
        as velocity servos): force = ctrl, clamped to the FR3's torque limits."""
        w = self.world
        for i, act in enumerate(w.arm_act):
            m.actuator_gainprm[act, :] = 0.0
            m.actuator_gainprm[act, 0] = 1.0
            m.actuator_biasprm[act, :] = 0.0
            m.actuator_ctrlrange[act] = (-TORQUE_LIMITS[i], TORQUE_LIMITS[i])
            m.actuator_ctrllimited[act] = 1

    # -- the scene (the person at the robot) ---------------------------------------------------
    def build_scene(self, setup: TaskSetup, keep_robot: bool = True) -> None:
        """The objects of tau_k where the setup's seed puts them; the arm and gripper stay."""
        w = self.world
        old = (
            (w.d.qpos[w.arm_qpos].copy(), w.d.qvel[w.arm_dof].copy(), w.d.qpos[w.grip_joint])
            if keep_robot and w.d is not None
            else None
        )
        task = tasks.task_of(setup.axis, setup.options)
        layout = scene.Layout(
            blue_raise=round(to_si(setup.value("blue_block_raise", 0.0), "in"), 6),
            bowl_scale=round(setup.value("bowl_scale", 1.0), 6),
        )
        m = w.model(layout)
        if m is not w.m:
            w.m = m
            w._bind(m)
            w._close_renderer()
            self._torque_mode(m)
        w.d = mujoco.MjData(m)
        w.task, w.layout = task, layout
        w.d.qpos[w.arm_qpos] = scene.RESET_Q if old is None else old[0]
        if old is not None:
            w.d.qvel[w.arm_dof] = old[1]
            w.d.qpos[w.grip_joint] = old[2]
        for name, (pos, quat) in tasks.layout_objects(
            task, np.random.default_rng(setup.seed), layout.blue_raise
        ).items():
            w.place(name, pos, quat)
        mujoco.mj_forward(m, w.d)
        self.scenes += 1

    # -- physics --------------------------------------------------------------------------------
    def step(self, tau: np.ndarray) -> None:
        """One physics step with arm torques `tau` (Nm, on top of gravity compensation)."""
        w = self.world
        m, d = w._sim()
        tau = np.clip(tau, -TORQUE_LIMITS, TORQUE_LIMITS)  # finite: the controller models compute it
        self.tau = tau
        d.ctrl[w.arm_act] = tau
        d.ctrl[w.grip_act] = 255.0 * self.gripper_target / KNUCKLE_CLOSED
        before = d.qvel[w.arm_dof].copy()
        mujoco.mj_step(m, d)
        self.ddq = (d.qvel[w.arm_dof] - before) / self.dt
        self.steps += 1

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """(arm positions, arm velocities)."""
        w = self.world
        _, d = w._sim()
        return d.qpos[w.arm_qpos].copy(), d.qvel[w.arm_dof].copy()

    def external_torque(self) -> np.ndarray:
        """Nm on each arm joint from contacts, joint limits and friction (what franka's
        tau_ext_hat estimates)."""
        w = self.world
        _, d = w._sim()
        return d.qfrc_constraint[w.arm_dof].copy()

    def walls(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Stiff stops in the arm joints' way (an obstacle, for tests): each joint meets a wall at
        `lower` and `upper` (rad), MuJoCo's joint-limit constraint with a 5 ms time constant;
        its force counts as external torque, as an obstacle's does on franka's estimate. It changes
        the current model (a scene of the same layout keeps it)."""
        w = self.world
        m, _ = w._sim()
        for i, name in enumerate(scene.ARM_JOINTS):
            jid = m.joint(name).id
            m.jnt_limited[jid] = 1
            m.jnt_range[jid] = (float(lower[i]), float(upper[i]))
            m.jnt_solref[jid] = (0.005, 1.0)
        self.wall_range = (np.asarray(lower, float), np.asarray(upper, float))

    def at_wall(self) -> bool:
        """Whether a joint is at (or in) one of the walls: contact, not free space."""
        if self.wall_range is None:
            return False
        q = self.state()[0]
        return bool(np.any((q <= self.wall_range[0] + 2e-3) | (q >= self.wall_range[1] - 2e-3)))

    def knuckle(self) -> float:
        """The Robotiq knuckle joint's position in rad."""
        return self.world.gripper_position() * KNUCKLE_CLOSED

    def check(self) -> tasks.Check:
        """The twin's own success check of the scene as it stands (sim only: what a person
        at the robot would see; the real robot has no such thing)."""
        w = self.world
        return tasks.check(
            w.task, w.m, w.d, w.gripper_position() < 0.3, w.gripper_bodies, w.layout.blue_raise, w.layout.bowl_scale
        )

    def object_poses(self) -> dict[str, np.ndarray]:
        return self.world.object_poses()

    def close(self) -> None:
        self.world.close()
