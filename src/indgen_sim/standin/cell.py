"""The FR3 cell as franka_ros2, ros2_control and the Robotiq driver behave, around the twin's
physics: what the real-robot graph meets when it runs against the stand-in (`robot:=mock`).

Each behaviour follows the named source (franka_ros2 `jazzy` v3.4.0, ros2_control and
ros2_controllers `jazzy`, libfranka 0.20.5, ros2_robotiq_gripper `main`):

- franka's hardware component drives the arm with the torques of the JointTrajectoryController
  (jtc.py) on its effort interface, limited to 1000 Nm/s (franka_hardware robot.cpp,
  writeOnceJointEfforts: franka::limitRate(kMaxTorqueRate, ...), rate limiter always on).
- Reflexes (libfranka raises a ControlException; franka_hardware_interface.cpp read() catches
  it, calls stopRobot() and returns ERROR): a contact (external torque on a joint beyond its
  collision threshold: franka_hardware sets none, the robot keeps those set in Desk or through
  /service_server/set_full_collision_behavior; DROID's FR3 config uses 40 Nm), a joint
  velocity beyond its limit, a joint outside its position limits, and (the stand-in's own,
  stricter than a torque-controlled FR3, which has no motion generator to check) a measured
  joint acceleration beyond libfranka's kMaxJointAcceleration in free space. Injected faults
  (communication_constraints_violation, the robot's own network deadline) take the same path.
- On ERROR, controller_manager read() deactivates every controller using that hardware, the
  broadcasters included, and the component goes unconfigured (controller_manager.cpp read(),
  resource_manager.cpp read(): component.error()). The broadcaster's topic stops; the robot
  holds itself where it stopped.
- Recovery is franka_hardware's documented procedure (doc/index.rst, "Error Recovery"): the
  error recovery action (franka_action_server.cpp: automaticErrorRecovery(), which fails
  while the reflex's cause persists), the hardware component set active again, then the
  controllers activated; the trajectory controller starts by holding the measured position
  (on_activate).
- The Robotiq has its own controller manager (ros2_robotiq_gripper's launch starts one): a
  franka reflex does not touch it. Its forward position controller takes the knuckle target
  (rad); its joint state broadcaster reports the knuckle position (the driver reports
  closed x (state - 3) / 227 of its 0..255 register, hardware_interface.cpp read()).

ROS-free; ros/fr3_stand_in.py publishes and subscribes it on the real topic names.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from indgen_core import topics
from indgen_core.cell.robot_config import RobotConfig
from indgen_core.cell.trajectory import Point
from indgen_core.records import TaskSetup
from indgen_sim.standin.jtc import JointTrajectoryControllerModel, JtcParameters
from indgen_sim.twin.hardware import KNUCKLE_CLOSED, ArmPhysics

#: libfranka rate_limiting.h: kMaxTorqueRate = 1000 - kLimitEps (Nm/s)
MAX_TORQUE_RATE = 1000.0 - 1e-3
#: DROID's FR3 collision thresholds (droid config/fr3/franka_hardware.yaml, collision_behavior)
DROID_CONTACT_THRESHOLDS = (40.0,) * 7
#: time constant of franka's filtered external torque estimate and of the measured acceleration
FILTER_S = 0.01
#: Nm: an external torque this large on any joint is contact, not free space (whatever the
#: collision thresholds; a test that sets them out of reach still hits things)
FREE_SPACE_NM = 10.0
#: how stiffly the robot holds itself while no controller drives it (after a reflex)
SELF_HOLD_P, SELF_HOLD_D = 600.0, 40.0
ARM_CONTROLLERS = ("joint_state_broadcaster", "franka_robot_state_broadcaster")

#: what each robot error means for an episode: motion-caused reflexes vs the system's faults
REFLEX, SYSTEM = "reflex", "system"
ERRORS = {
    "joint_reflex": REFLEX,  # a contact: external torque beyond the collision thresholds
    "joint_velocity_violation": REFLEX,
    "joint_position_limits_violation": REFLEX,
    "joint_acceleration_violation": REFLEX,
    "communication_constraints_violation": SYSTEM,
}


@dataclass
class CellStatus:
    reflexes: int = 0
    faults: int = 0
    last_error: str = ""
    last_error_detail: str = ""
    errors: list[str] = field(default_factory=list)
    #: (wall time, whether the segment is a hold: one point at rest)
    segments: list[tuple[float, bool]] = field(default_factory=list)
    #: per joint: the largest |desired - measured| and |external torque| since the last reset
    peak_lead: np.ndarray = field(default_factory=lambda: np.zeros(7))
    peak_pd_torque: np.ndarray = field(default_factory=lambda: np.zeros(7))
    #: per joint: the largest |torque the controller commanded| and |its PID before the clamp|
    peak_command: np.ndarray = field(default_factory=lambda: np.zeros(7))
    peak_unclamped: np.ndarray = field(default_factory=lambda: np.zeros(7))
    peak_external_torque: np.ndarray = field(default_factory=lambda: np.zeros(7))
    peak_acceleration: np.ndarray = field(default_factory=lambda: np.zeros(7))
    #: per joint, the largest acceleration of the first 0.5 s after each (re)activation
    peak_acceleration_after_activation: np.ndarray = field(default_factory=lambda: np.zeros(7))
    #: how often the stand-in's own thread fell behind the wall clock (the robot's time paused)
    stalls: int = 0
    longest_stall_s: float = 0.0


class StandInCell:
    def __init__(
        self,
        config: RobotConfig,
        builtin: bool = False,
        contact_thresholds: tuple[float, ...] = DROID_CONTACT_THRESHOLDS,
    ):
        self.config = config
        self.physics = ArmPhysics(builtin=builtin)
        self.dt = self.physics.dt
        self.lock = threading.RLock()
        self.jtc = JointTrajectoryControllerModel(JtcParameters.from_robot(config), self.dt)
        arm = config.arm
        self.lower, self.upper = np.array(arm.lower), np.array(arm.upper)
        self.velocity_limits = np.array(arm.velocity_limits)
        self.acceleration_limits = np.array(arm.acceleration_limits)
        self.contact_thresholds = np.asarray(contact_thresholds, float)
        self.driver_running = True
        self.hardware_active = True
        self.error: str | None = None
        #: libfranka's last_motion_errors: what aborted the last motion, until the next one starts
        self.last_motion_errors: list[str] = []
        self.broadcasters = dict.fromkeys(ARM_CONTROLLERS, True)
        self.status = CellStatus()
        self.gripper_target = 0.0  # rad, the Robotiq position controller's command
        self._tau_sent = np.zeros(7)  # libfranka's tau_J_d: what the rate limiter starts from
        self._tau_ext = np.zeros(7)
        self._ddq = np.zeros(7)
        self._hold_q = self.physics.state()[0]
        self._activated_at = 0.0
        self._start = time.monotonic()
        self._steps = 0
        #: how far the robot's clock runs behind the wall clock: the sum of the stalls
        self._lag = 0.0
        self.jtc.activate(self._hold_q, self._now(0))

    def _now(self, steps: int) -> float:
        return self._start + steps * self.dt

    # -- physics on the wall clock ------------------------------------------------------------------
    def advance_to(self, now: float, max_steps: int = 25) -> float:
        """Catch the physics up with the wall clock, at most max_steps steps per call; the
        seconds of a longer stall are returned.

        A stall is the stand-in's own thread falling behind (a busy host, not the robot): the
        robot's time pauses through it, physics and the controller's clock alike, and the
        robot's clock runs that much behind the wall clock from then on. Dropping the steps from the
        physics alone made the controller's reference jump ahead of the arm, and the stand-in
        raised joint_acceleration_violation on a motion planned within limits (CI saw it). A
        real FR3 whose control host misses 20 cycles in a row raises
        communication_constraints_violation instead; tests inject that fault explicitly."""
        with self.lock:
            due = int((now - self._lag - self._start) / self.dt) - self._steps
            for _ in range(min(max(due, 0), max_steps)):
                self._cycle(self._now(self._steps + 1))
            if due <= max_steps:
                return 0.0
            stall = (due - max_steps) * self.dt
            self._lag += stall
            self.status.stalls += 1
            self.status.longest_stall_s = max(self.status.longest_stall_s, stall)
            return stall

    def _cycle(self, t: float) -> None:
        q, dq = self.physics.state()
        if self.hardware_active and self.error is None:
            wanted = self.jtc.update(t, q, dq)
            step = MAX_TORQUE_RATE * self.dt
            tau = np.clip(wanted, self._tau_sent - step, self._tau_sent + step)
            self._tau_sent = tau
            if self.jtc.active:
                s = self.status
                s.peak_command = np.maximum(s.peak_command, np.abs(wanted))
                s.peak_unclamped = np.maximum(s.peak_unclamped, np.abs(self.jtc.unclamped))
                if not self.jtc.holding:
                    s.peak_lead = np.maximum(s.peak_lead, np.abs(self.jtc.error))
                    s.peak_pd_torque = np.maximum(s.peak_pd_torque, np.abs(self.jtc.params.p * self.jtc.error))
        else:  # stopRobot(): the robot holds itself where the error stopped it
            tau = SELF_HOLD_P * (self._hold_q - q) - SELF_HOLD_D * dq
            self._tau_sent = np.zeros(7)
        self.physics.gripper_target = self.gripper_target / self.config.gripper.closed * KNUCKLE_CLOSED
        self.physics.step(tau)
        self._steps += 1
        alpha = self.dt / (FILTER_S + self.dt)
        self._tau_ext += alpha * (self.physics.external_torque() - self._tau_ext)
        self._ddq += alpha * (self.physics.ddq - self._ddq)
        s = self.status
        s.peak_external_torque = np.maximum(s.peak_external_torque, np.abs(self._tau_ext))
        s.peak_acceleration = np.maximum(s.peak_acceleration, np.abs(self._ddq))
        if t - self._activated_at < 0.5:
            s.peak_acceleration_after_activation = np.maximum(s.peak_acceleration_after_activation, np.abs(self._ddq))
        if self.hardware_active and self.error is None:
            self._check_reflexes(t)

    def _check_reflexes(self, t: float) -> None:
        q, dq = self.physics.state()
        names = self.config.arm.joints
        # the acceleration check is for the commanded motion in free space: in contact, the
        # impact decelerates the arm and the collision reflex is franka's verdict
        free = bool(np.all(np.abs(self._tau_ext) < np.minimum(0.25 * self.contact_thresholds, FREE_SPACE_NM)))
        free = free and not self.physics.at_wall()
        checks = (
            ("joint_position_limits_violation", (q < self.lower) | (q > self.upper), q),
            ("joint_velocity_violation", np.abs(dq) > self.velocity_limits, dq),
            ("joint_reflex", np.abs(self._tau_ext) > self.contact_thresholds, self._tau_ext),
            ("joint_acceleration_violation", free & (np.abs(self._ddq) > self.acceleration_limits), self._ddq),
        )
        for error, mask, values in checks:
            if mask.any():
                i = int(np.flatnonzero(mask)[0])
                self._fail(error, f"{names[i]}: {values[i]:.3f}")
                return

    def _fail(self, error: str, detail: str) -> None:
        """read() returned ERROR: the robot stops, every franka controller goes inactive."""
        self.error = error
        self.last_motion_errors = [error]
        self.hardware_active = False
        self.jtc.deactivate()
        self.broadcasters = dict.fromkeys(ARM_CONTROLLERS, False)
        self._hold_q = self.physics.state()[0]
        self.status.errors.append(error)
        if ERRORS.get(error) == REFLEX:
            self.status.reflexes += 1
        else:
            self.status.faults += 1
        self.status.last_error, self.status.last_error_detail = error, detail

    # -- franka's interfaces ------------------------------------------------------------------------
    def receive_trajectory(self, joint_names: list[str], points: list[Point], start_stamp: float) -> str | None:
        with self.lock:
            if not self.driver_running:
                return "nobody subscribes: franka's driver is down"
            now = self._now(self._steps)
            # a stamp is on the wall clock (monotonic); the controller runs on the robot's clock
            start = start_stamp - self._lag if start_stamp else 0.0
            reason = self.jtc.receive(joint_names, points, start, now)
            if reason is None:
                self.last_motion_errors = []  # a new motion
                hold = len(points) == 1 and points[0].velocities is not None and not np.any(points[0].velocities)
                self.status.segments.append((time.monotonic(), hold))
                del self.status.segments[:-2000]
            return reason

    def path_tolerance(self, on: bool) -> None:
        """The trajectory controller's path and goal tolerances on (as configured) or off, for
        tests that measure what the runner alone bounds."""
        with self.lock:
            params = JtcParameters.from_robot(self.config)
            if not on:
                zero = np.zeros(len(params.joints))
                params = dataclasses.replace(params, path_tolerance=zero, goal_tolerance=zero, goal_time=0.0)
            self.jtc.params = params

    def inject(self, error: str) -> None:
        """A fault of the robot itself (not of the policy's motion), for tests."""
        with self.lock:
            if self.hardware_active and self.error is None:
                self._fail(error, "injected")

    def crash_driver(self) -> None:
        """franka's ros2_control_node dies (for tests): nothing of franka's runs any more; the
        robot holds itself; recovery is impossible until the bring-up is started again."""
        with self.lock:
            self.driver_running = False
            self.hardware_active = False
            self.jtc.deactivate()
            self.broadcasters = dict.fromkeys(ARM_CONTROLLERS, False)
            self._hold_q = self.physics.state()[0]
            self.status.faults += 1
            self.status.errors.append("driver_down")
            self.status.last_error, self.status.last_error_detail = "driver_down", "injected"

    def restart_driver(self) -> None:
        """The bring-up started again: hardware active, its controllers spawned and active."""
        with self.lock:
            self.driver_running = True
            self.error = None
            self.hardware_active = True
            self.activate_controllers([*ARM_CONTROLLERS, self.config.arm.controller])

    def error_recovery(self) -> tuple[bool, str]:
        """/action_server/error_recovery: libfranka's automaticErrorRecovery()."""
        with self.lock:
            if not self.driver_running:
                return False, "no action server: franka's driver is down"
            if self.error is None:
                return True, topics.STAND_IN_NO_FAULT
            if np.any(np.abs(self._tau_ext) > self.contact_thresholds):
                return False, "automatic error recovery failed: the reflex's cause persists (still in contact)"
            self.error = None
            return True, "recovered"

    def activate_hardware(self) -> tuple[bool, str]:
        """controller_manager's set_hardware_component_state(active) for FrankaHardwareInterface."""
        with self.lock:
            if not self.driver_running:
                return False, "no controller manager: franka's driver is down"
            if self.error is not None:
                return False, f"the robot is in error ({self.error}): run error recovery first"
            self.hardware_active = True
            self._hold_q = self.physics.state()[0]
            return True, "hardware component active"

    def activate_controllers(self, names: list[str]) -> tuple[bool, str]:
        """controller_manager's switch_controller(activate=names)."""
        with self.lock:
            if not self.hardware_active:
                return False, "the hardware component is not active"
            unknown = [n for n in names if n not in ARM_CONTROLLERS and n != self.config.arm.controller]
            if unknown:
                return False, f"unknown controllers {unknown}"
            now = self._now(self._steps)
            for name in names:
                if name == self.config.arm.controller:
                    if not self.jtc.active:
                        self.jtc.activate(self.physics.state()[0], now)
                        self._tau_sent = np.zeros(7)
                        self._activated_at = now
                        self.status.peak_acceleration_after_activation = np.zeros(7)
                else:
                    self.broadcasters[name] = True
            return True, f"activated {', '.join(names)}"

    # -- what the drivers publish ---------------------------------------------------------------------
    def arm_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(positions, velocities, efforts) as the joint_state_broadcaster reads them; None
        while it is inactive (a fault): it publishes nothing then."""
        with self.lock:
            if not self.broadcasters["joint_state_broadcaster"]:
                return None
            q, dq = self.physics.state()
            return q, dq, self._tau_sent.copy()

    def robot_state_active(self) -> bool:
        return self.broadcasters["franka_robot_state_broadcaster"]

    def knuckle(self) -> float:
        """The Robotiq knuckle position as its driver reports it (rad)."""
        with self.lock:
            return self.physics.knuckle() / KNUCKLE_CLOSED * self.config.gripper.closed

    def command_gripper(self, knuckle: float) -> None:
        """The Robotiq's forward position controller (its own controller manager: a franka
        fault does not stop it)."""
        with self.lock:
            if np.isfinite(knuckle):
                self.gripper_target = float(np.clip(knuckle, 0.0, self.config.gripper.closed))

    def build_scene(self, setup: TaskSetup) -> None:
        with self.lock:
            self.physics.build_scene(setup)

    def reset_peaks(self) -> None:
        with self.lock:
            for name in (
                "peak_lead",
                "peak_pd_torque",
                "peak_command",
                "peak_unclamped",
                "peak_external_torque",
                "peak_acceleration",
            ):
                setattr(self.status, name, np.zeros(7))

    def summary(self) -> dict:
        with self.lock:
            s, j = self.status, self.jtc.counters
            holds = [t for t, hold in s.segments if hold]
            return {
                "driver_running": self.driver_running,
                "hardware_active": self.hardware_active,
                "error": self.error or "",
                "reflexes": s.reflexes,
                "faults": s.faults,
                "errors": s.errors[-20:],
                "last_error": s.last_error,
                "last_error_detail": s.last_error_detail,
                "controllers": {self.config.arm.controller: self.jtc.active, **self.broadcasters},
                "trajectories": j.trajectories,
                "refused_trajectories": j.refused,
                "last_refusal": j.last_refusal,
                "path_tolerance_holds": j.path_violations,
                "goal_time_holds": j.goal_time_holds,
                "holds": len(holds),
                "hold_times": holds[-20:],
                "last_hold_wall": holds[-1] if holds else None,
                "peak_lead": s.peak_lead.round(4).tolist(),
                "peak_pd_torque": s.peak_pd_torque.round(2).tolist(),
                "peak_command": s.peak_command.round(2).tolist(),
                "peak_unclamped": s.peak_unclamped.round(2).tolist(),
                "peak_external_torque": s.peak_external_torque.round(2).tolist(),
                "peak_acceleration": s.peak_acceleration.round(3).tolist(),
                "peak_acceleration_after_activation": s.peak_acceleration_after_activation.round(3).tolist(),
                "sim_steps": self._steps,
                "stalls": s.stalls,
                "longest_stall_s": round(s.longest_stall_s, 3),
                "scenes": self.physics.scenes,
            }

    def close(self) -> None:
        self.physics.close()
