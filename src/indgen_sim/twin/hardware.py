"""The FR3 hardware, stood in for by the twin on the wall clock: what franka_ros2 and
ros2_controllers give a user, so the real-robot side runs unchanged against it.

- The arm follows JointTrajectory segments the way a JointTrajectoryController does
  (indgen_core.trajectory): from its current reference, interpolated at the physics rate
  (510 Hz), holding the last point after the end. The twin's velocity servos track that
  reference.
- It reflexes like libfranka would: a reference that asks for more than the robot's velocity
  or acceleration limits, or leaves its joint limits, stops the arm, counts a reflex, and
  the "hardware" goes inactive (no more joint states, commands ignored) until `recover()`,
  as franka_ros2's hardware component does after a reflex.
- The gripper takes a position for the Robotiq knuckle joint (0 open .. 0.8 rad closed).
- The scene is built by `build_scene(setup)`: what the person at the robot does between
  trials (the objects of tau_k, placed where the setup's seed puts them; the arm stays where
  it is).

ROS-free; nodes/fr3_stand_in.py puts it behind the robot's topics.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import mujoco
import numpy as np

from indgen_core.records import TaskSetup
from indgen_core.trajectory import Point, Trajectory
from indgen_core.units import to_si
from indgen_sim.twin import scene, tasks
from indgen_sim.twin.builtin_fr3 import LIMITS
from indgen_sim.twin.world import DroidTwinWorld

#: the robot's own limits (franka's published joint limits; the runner uses fractions of them)
VELOCITY_LIMITS = np.array([2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26])
ACCELERATION_LIMITS = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
POSITION_LOWER = np.array([lo for lo, _ in LIMITS])
POSITION_UPPER = np.array([hi for _, hi in LIMITS])
KNUCKLE_CLOSED = 0.8


@dataclass
class StandInStatus:
    reflexes: int = 0
    last_reflex: str = ""
    trajectories: int = 0
    refused_trajectories: int = 0
    active: bool = True
    #: (wall time, whether the segment ends at rest after its first point): the test of "held
    #: within one tick" reads when the first hold arrived
    segments: list[tuple[float, bool]] = field(default_factory=list)


class HardwareStandIn:
    def __init__(self, builtin: bool = False, joint_names: list[str] | None = None):
        self.world = DroidTwinWorld(cameras=[], builtin=builtin)
        self.joint_names = list(joint_names or scene.ARM_JOINTS)
        self.lock = threading.RLock()
        self.status = StandInStatus()
        self.dt = 1.0 / (scene.CONTROL_HZ * scene.SUBSTEPS)
        self.gripper_target = 0.0  # rad of the knuckle joint
        self._setup: TaskSetup | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sim_steps = 0
        self.scenes = 0
        empty = TaskSetup(campaign_id="", trial_id="", world="fr3", axis="stack", level=0, in_distribution=True,
                          parameters=(), trial_index=0, seed=0, policy="")
        self.build_scene(empty, keep_robot=False)

    # -- the scene (the person at the robot) ---------------------------------------------------
    def build_scene(self, setup: TaskSetup, keep_robot: bool = True) -> None:
        """The objects of tau_k where the setup's seed puts them; the arm and gripper stay."""
        with self.lock:
            w = self.world
            old = (w.d.qpos[w.arm_qpos].copy(), w.d.qvel[w.arm_dof].copy(), w.d.qpos[w.grip_joint]) \
                if keep_robot and w.d is not None else None
            task = tasks.task_of(setup.axis, setup.options)
            layout = scene.Layout(blue_raise=round(to_si(setup.value("blue_block_raise", 0.0), "in"), 6),
                                  bowl_scale=round(setup.value("bowl_scale", 1.0), 6))
            m = w.model(layout)
            if m is not w.m:
                w.m = m
                w._bind(m)
                w._close_renderer()
            w.d = mujoco.MjData(m)
            w.task, w.layout = task, layout
            w.d.qpos[w.arm_qpos] = scene.RESET_Q if old is None else old[0]
            if old is not None:
                w.d.qvel[w.arm_dof] = old[1]
                w.d.qpos[w.grip_joint] = old[2]
            for name, (pos, quat) in tasks.layout_objects(task, np.random.default_rng(setup.seed),
                                                          layout.blue_raise).items():
                w.place(name, pos, quat)
            mujoco.mj_forward(m, w.d)
            if old is None:  # switched on: the controller holds where the arm is
                self.reference = Trajectory.at_rest(time.monotonic(), w.d.qpos[w.arm_qpos].copy())
            # otherwise the controller goes on as it was: a person moving objects does not touch it
            self._setup = setup
            self.scenes += 1

    # -- commands (the controllers) ------------------------------------------------------------
    def command_trajectory(self, joint_names: list[str], points: list[Point]) -> str | None:
        """Take a trajectory as the JointTrajectoryController would; a reason when refused."""
        with self.lock:
            if not self.status.active:
                self.status.refused_trajectories += 1
                return "the hardware is inactive after a reflex"
            if sorted(joint_names) != sorted(self.joint_names) or not points:
                self.status.refused_trajectories += 1
                return f"joints {joint_names} are not the arm's {self.joint_names}"
            order = [joint_names.index(n) for n in self.joint_names]
            try:
                pts = [Point(p.t, np.asarray(p.positions, float)[order],
                             None if p.velocities is None else np.asarray(p.velocities, float)[order]) for p in points]
                if not all(np.all(np.isfinite(p.positions)) and (p.velocities is None or np.all(np.isfinite(
                        p.velocities))) for p in pts):
                    raise ValueError("non-finite point")
                now = time.monotonic()
                q0, dq0, _ = self.reference.sample(now)
                self.reference = Trajectory(now, q0, dq0, pts)
            except (ValueError, IndexError) as exc:
                self.status.refused_trajectories += 1
                return str(exc)
            self.status.trajectories += 1
            at_rest = pts[0].velocities is not None and not np.any(pts[0].velocities) and len(pts) == 1
            self.status.segments.append((now, at_rest))
            del self.status.segments[:-2000]
            return None

    def command_gripper(self, knuckle: float) -> None:
        with self.lock:
            if self.status.active and np.isfinite(knuckle):
                self.gripper_target = float(np.clip(knuckle, 0.0, KNUCKLE_CLOSED))

    def recover(self) -> None:
        """franka's error recovery: the hardware is active again, holding where it is."""
        with self.lock:
            w = self.world
            q = w.d.qpos[w.arm_qpos].copy()
            self.reference = Trajectory.at_rest(time.monotonic(), q)
            self.status.active = True

    # -- physics on the wall clock --------------------------------------------------------------
    def _reflex(self, reason: str) -> None:
        w = self.world
        self.status.reflexes += 1
        self.status.last_reflex = reason
        self.status.active = False
        self.reference = Trajectory.at_rest(time.monotonic(), w.d.qpos[w.arm_qpos].copy())

    def step(self, now: float) -> None:
        """One physics step towards the reference at wall time `now`."""
        w = self.world
        q_ref, dq_ref, ddq_ref = self.reference.sample(now)
        if self.status.active:
            over_v = np.abs(dq_ref) > VELOCITY_LIMITS
            over_a = np.abs(ddq_ref) > ACCELERATION_LIMITS
            outside = (q_ref < POSITION_LOWER) | (q_ref > POSITION_UPPER)
            for kind, mask in (("joint velocity limits violation", over_v),
                               ("joint acceleration limits violation", over_a),
                               ("joint position limits violation", outside)):
                if mask.any():
                    worst = int(np.flatnonzero(mask)[0])
                    value = {"joint velocity limits violation": dq_ref, "joint acceleration limits violation": ddq_ref,
                             "joint position limits violation": q_ref}[kind][worst]
                    self._reflex(f"{kind} on {[self.joint_names[i] for i in np.flatnonzero(mask)]} "
                                 f"({self.joint_names[worst]}: {value:.3f})")
                    q_ref, dq_ref, _ = self.reference.sample(now)
                    break
        q = w.d.qpos[w.arm_qpos]
        w.d.ctrl[w.arm_act] = dq_ref + scene.ARM_KP * (q_ref - q)
        w.d.ctrl[w.grip_act] = 255.0 * self.gripper_target / KNUCKLE_CLOSED
        mujoco.mj_step(w.m, w.d)
        self.sim_steps += 1

    def advance_to(self, now: float, start: float) -> None:
        """Catch the physics up with the wall clock (at most 50 ms per call)."""
        with self.lock:
            due = int((now - start) / self.dt) - self.sim_steps
            for _ in range(min(max(due, 0), 25)):
                self.step(start + (self.sim_steps + 1) * self.dt)
            if due > 25:  # fell behind (a slow render): drop the backlog rather than run late forever
                self.sim_steps += due - 25

    # -- what the robot reports -----------------------------------------------------------------
    def joint_state(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(arm positions, arm velocities, knuckle position in rad)."""
        with self.lock:
            w = self.world
            return (w.d.qpos[w.arm_qpos].copy(), w.d.qvel[w.arm_dof].copy(),
                    w.gripper_position() * KNUCKLE_CLOSED)

    def check(self) -> tasks.Check:
        """The twin's own success check of the scene as it stands (sim only: what a person
        at the robot would see; the real robot has no such thing)."""
        with self.lock:
            w = self.world
            return tasks.check(w.task, w.m, w.d, w.gripper_position() < 0.3, w.gripper_bodies, w.layout.blue_raise,
                               w.layout.bowl_scale)

    def render(self, camera: str, size: tuple[int, int]) -> np.ndarray:
        with self.lock:
            return self.world.render(camera, size)

    def object_poses(self) -> dict[str, np.ndarray]:
        with self.lock:
            return self.world.object_poses()

    def close(self) -> None:
        self.world.close()
