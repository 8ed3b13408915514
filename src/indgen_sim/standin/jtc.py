"""ros2_controllers' JointTrajectoryController on an effort interface, as the stand-in runs it.

Written from ros2_controllers `jazzy` (ed360c9), joint_trajectory_controller/src/
joint_trajectory_controller.cpp; each rule below names the function it follows:

- topic_callback / validate_trajectory_msg: a trajectory with no points, joints that are not
  the controller's (partial goals not allowed), a last point with non-zero velocity, times
  that do not increase, or a non-zero start stamp that ends in the past is refused; a valid
  one replaces the running one, and only while the controller is active.
- update(): a new trajectory starts from the **measured** state (set_point_before_trajectory_msg
  with state_current_) unless interpolate_from_desired_state is set, then from the last
  commanded state. header.stamp 0 means "start now".
- update(): the desired state is sampled at the controller's time and the command at one
  update period later; with only an effort command interface the command is
  ff_velocity_scale x v_next + PID(position error, velocity error), error = desired - measured
  (the PID is reset only on activation: on_activate). control_toolbox's Pid (jazzy, pid.cpp
  compute_command): p e + i_term + d de, the integral term clamped to i_clamp, the output
  clamped to [u_clamp_min, u_clamp_max] where they are finite (JTC >= 4.27.0).
- update(): while before the last point (or on the first sample) and not holding, a position
  error beyond constraints.<joint>.trajectory on any joint is a path tolerance violation: no
  command is written that cycle and the controller holds the measured position
  (set_hold_position), "Holding position due to state tolerance violation" (topic
  trajectories, no action goal). Past the last point, an error beyond constraints.<joint>.goal
  after constraints.goal_time holds the same way ("Exceeded goal_time_tolerance").
- on_activate: the controller starts by holding the measured position.

What the stand-in does not model: acceleration/quintic interpolation (IndGen sends positions
and velocities: cubic, as here), angle wraparound, speed scaling, cmd_timeout, the action
interface. It runs at the physics rate (about 510 Hz), franka's at 1 kHz.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indgen_core.cell.trajectory import Point, Trajectory


@dataclass(frozen=True)
class JtcParameters:
    joints: tuple[str, ...]
    p: np.ndarray
    d: np.ndarray
    ff_velocity_scale: np.ndarray
    i: np.ndarray
    i_clamp: np.ndarray  # |integral term| at most (Nm; inf: unclamped)
    u_clamp: np.ndarray  # |PID output| at most (Nm; inf: unclamped)
    path_tolerance: np.ndarray  # constraints.<joint>.trajectory (0: not checked)
    goal_tolerance: np.ndarray  # constraints.<joint>.goal
    goal_time: float  # constraints.goal_time (0: not checked)
    interpolate_from_desired_state: bool = False

    @classmethod
    def from_robot(cls, config) -> JtcParameters:
        ctl = config.controller
        n = len(config.arm.joints)
        return cls(
            joints=tuple(config.arm.joints),
            p=np.array(ctl.p),
            d=np.array(ctl.d),
            ff_velocity_scale=np.array(ctl.ff_velocity_scale) if ctl.ff_velocity_scale else np.zeros(n),
            i=np.array(ctl.i),
            i_clamp=np.array(ctl.i_clamp),
            u_clamp=np.array(ctl.u_clamp),
            path_tolerance=np.array(ctl.path_tolerance),
            goal_tolerance=np.array(ctl.goal_tolerance),
            goal_time=ctl.goal_time,
            interpolate_from_desired_state=ctl.interpolate_from_desired_state,
        )


@dataclass
class JtcCounters:
    trajectories: int = 0
    refused: int = 0
    path_violations: int = 0
    goal_time_holds: int = 0
    last_refusal: str = ""


class JointTrajectoryControllerModel:
    def __init__(self, params: JtcParameters, dt: float):
        self.params = params
        self.dt = dt
        self.active = False
        self.holding = True
        self.counters = JtcCounters()
        self._pending: tuple[Trajectory | None, list[Point], float] | None = None
        self._trajectory: Trajectory | None = None
        #: (q, dq) of the last command written
        self._last_commanded: tuple[np.ndarray, np.ndarray] | tuple[None, None] = (None, None)
        self._tau = np.zeros(len(params.joints))
        #: position error (desired - measured) of the last update: what the PD acts on
        self.error = np.zeros(len(params.joints))
        self.desired: np.ndarray | None = None
        self._i_term = np.zeros(len(params.joints))
        #: the PID's output of the last update before its output clamp (what the gains ask for)
        self.unclamped = np.zeros(len(params.joints))

    # -- lifecycle (controller_manager's switch) --------------------------------------------------
    def activate(self, q: np.ndarray, now: float) -> None:
        """on_activate: reset the PIDs and hold the measured position."""
        self.active = True
        self._hold(q, now)
        self._pending = None
        self._tau[:] = 0.0
        self._i_term[:] = 0.0

    def deactivate(self) -> None:
        self.active = False
        self._pending = None
        self._tau[:] = 0.0

    # -- topic_callback -----------------------------------------------------------------------------
    def receive(self, joint_names: list[str], points: list[Point], start_stamp: float, now: float) -> str | None:
        """A JointTrajectory message; the reason it was refused, or None."""
        reason = self._invalid(joint_names, points, start_stamp, now)
        if reason is None and not self.active:
            reason = "the controller is inactive"
        if reason is not None:
            self.counters.refused += 1
            self.counters.last_refusal = reason
            return reason
        order = [list(joint_names).index(j) for j in self.params.joints]
        pts = [
            Point(
                p.t,
                np.asarray(p.positions, float)[order],
                None if p.velocities is None else np.asarray(p.velocities, float)[order],
            )
            for p in points
        ]
        self._pending = (None, pts, start_stamp)
        self.counters.trajectories += 1
        return None

    def _invalid(self, joint_names, points, start_stamp: float, now: float) -> str | None:
        # validate_trajectory_msg, in its order
        if len(joint_names) != len(self.params.joints):
            return "Joints on incoming trajectory don't match the controller joints."
        if not points:
            return "Empty trajectory received."
        unknown = [j for j in joint_names if j not in self.params.joints]
        if unknown:
            return f"Incoming joint {unknown[0]} doesn't match the controller's joints."
        last = points[-1].velocities
        if last is not None and np.any(np.abs(np.asarray(last, float)) > np.finfo(np.float32).eps):
            return "Velocity of last trajectory point is not zero"
        if start_stamp != 0.0 and start_stamp + points[-1].t < now:
            return "Received trajectory with non-zero start time that ends in the past"
        previous = 0.0
        for i, p in enumerate(points):
            if i > 0 and p.t <= previous:
                return f"Time between points {i - 1} and {i} is not strictly increasing"
            previous = p.t
            positions = np.asarray(p.positions, float)
            if positions.shape != (len(joint_names),) or not np.all(np.isfinite(positions)):
                return f"point {i}: positions must be {len(joint_names)} finite values"
            if p.velocities is not None:
                v = np.asarray(p.velocities, float)
                if v.shape != (len(joint_names),) or not np.all(np.isfinite(v)):
                    return f"point {i}: velocities must be {len(joint_names)} finite values"
        return None

    # -- update -------------------------------------------------------------------------------------
    def _hold(self, q: np.ndarray, now: float) -> None:
        """set_hold_position: stay at the measured position; tolerances are not checked."""
        self._trajectory = Trajectory.at_rest(now, np.asarray(q, float))
        self.holding = True

    def update(self, now: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """One controller cycle at time `now` with the measured state; the effort command."""
        if not self.active:
            return np.zeros_like(self._tau)
        first_sample = False
        if self._pending is not None:
            _, points, stamp = self._pending
            self._pending = None
            start = now if stamp == 0.0 else stamp
            if self.params.interpolate_from_desired_state and self._last_commanded[0] is not None:
                q0, dq0 = self._last_commanded
            else:
                q0, dq0 = q, dq
            self._trajectory = Trajectory(start, q0, dq0, points)
            self.holding = False
            first_sample = True
        traj = self._trajectory
        assert traj is not None, "an active controller holds a trajectory (activate() sets one)"
        q_des, dq_des, _ = traj.sample(now)
        q_next, dq_next, _ = traj.sample(now + self.dt)
        self.desired = q_des
        error, derror = q_des - q, dq_des - dq
        self.error = error
        before_last_point = now < traj.end_time
        violated = False
        if (before_last_point or first_sample) and not self.holding:
            tol = self.params.path_tolerance
            violated = bool(np.any((tol > 0) & (np.abs(error) > tol)))
        within_goal_time = True
        if not before_last_point and not self.holding and self.params.goal_time > 0:
            tol = self.params.goal_tolerance
            outside = bool(np.any((tol > 0) & (np.abs(error) > tol)))
            within_goal_time = not (outside and now - traj.end_time > self.params.goal_time)
        if not violated and within_goal_time:
            p = self.params
            self._i_term = np.clip(self._i_term + p.i * error * self.dt, -p.i_clamp, p.i_clamp)
            self.unclamped = p.p * error + self._i_term + p.d * derror
            self._tau = p.ff_velocity_scale * dq_next + np.clip(self.unclamped, -p.u_clamp, p.u_clamp)
            self._last_commanded = (q_next, dq_next)
        tau = self._tau.copy()  # on a violation the last written command stays this cycle
        if violated:
            self.counters.path_violations += 1
            self._hold(q, now)
        elif not within_goal_time:
            self.counters.goal_time_holds += 1
            self._hold(q, now)
        return tau
