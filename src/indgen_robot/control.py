"""What the FR3 runner sends the arm's trajectory controller, and why it can never be garbage.

DROID's semantics: a normalised joint velocity v (7 values in [-1, 1]) asks each joint to
move 0.2 v rad in one 15 Hz tick (3 v rad/s), from where the arm is measured to be (DROID
commands q_measured + 0.2 v). Streaming raw position steps makes libfranka reflex; the runner
instead sends, each tick, a short JointTrajectory that the controller interpolates at its own
rate (1 kHz on franka_ros2). ros2_controllers' JointTrajectoryController starts every new
trajectory from the **measured** state, and so does every segment here:

    point 1 (a look-ahead H):  q_meas + v_cmd H   at velocity v_cmd
    point 2 (the stop):        v_cmd decays to 0 at the allowed deceleration

v_cmd is DROID's velocity limited to a fraction of the robot's velocity limits, changed from
the measured velocity by at most what the allowed acceleration permits (the controller's cubic
spline then stays within it: its peak acceleration is 4 |dv| / H), and slowed wherever the stop
point would come closer to a position limit than the margin. The next tick's segment replaces
this one after one tick, so the arm moves at v_cmd: 0.2 v rad per tick, as DROID asks.

The bound. Because each segment starts at the measured arm, the controller's reference can
lead a blocked arm only by the motion of one segment before the next re-bases it: v_cmd is
capped at max_lead / (lead_ticks x period) per joint, so the lead stays within max_lead
(robot configuration) even for a segment half a tick late, and the PD pushes a blocked joint
with at most p x max_lead. The controller's path tolerance (= max_lead) holds the arm if
anything else (a dead runner) lets the reference run further. Because every segment ends at
rest, a tick whose command does not come lets the arm finish decelerating: a runner that
stops, crashes or loses its policy leaves the arm still, never moving on.

A command is refused (the runner holds) unless it has 7 finite velocities in [-1, 1] and a
finite gripper value in [0, 1]; `CommandGate` is plain Python so that a property test can
throw arbitrary arrays at it.
"""

from __future__ import annotations

import numpy as np

from indgen_core.robot_config import RobotConfig
from indgen_core.specs.droid import DELTA_PER_TICK
from indgen_core.trajectory import Point

MIN_STOP_S = 0.1
#: a hold (e-stop, lost policy, end of episode) stops over at least this long. A hold comes at
#: any moment, often when the machine is busiest, and the controller starts it from where the
#: arm has moved on meanwhile: started d late, the stop's spline asks 6 v d / T^2 more
#: acceleration than planned. Over T >= 0.5 s a hold that arrives 0.2 s late stays under 80% of
#: libfranka's acceleration limits (test_fr3_control); the arm travels at most v T / 2 + v d.
HOLD_MIN_S = 0.5


class RefusedCommand(ValueError):
    """A command that must not reach the robot."""


def check_command(velocity, gripper) -> tuple[np.ndarray, float]:
    """(7 velocities, gripper) as DROID values, or RefusedCommand saying why not."""
    try:
        v = np.asarray(velocity, dtype=np.float64)
        g = float(np.asarray(gripper, dtype=np.float64).reshape(-1)[0]) if np.size(gripper) == 1 else None
    except (TypeError, ValueError):
        raise RefusedCommand("the command is not numeric") from None
    if v.shape != (7,):
        raise RefusedCommand(f"the arm command has {v.size} values, not 7")
    if not np.all(np.isfinite(v)):
        raise RefusedCommand("the arm command is not finite")
    if np.any(np.abs(v) > 1.0 + 1e-9):
        raise RefusedCommand(f"the arm command leaves DROID's range [-1, 1] (max |v| {np.abs(v).max():.3g})")
    if g is None or not np.isfinite(g) or not -1e-9 <= g <= 1.0 + 1e-9:
        raise RefusedCommand("the gripper command is not one finite value in [0, 1]")
    return v, float(np.clip(g, 0.0, 1.0))


class CommandGate:
    def __init__(self, config: RobotConfig):
        arm = config.arm
        self.period = 1.0 / config.control.rate_hz
        self.lookahead = config.control.lookahead_ticks * self.period
        self.lower = np.array(arm.lower) + arm.position_margin
        self.upper = np.array(arm.upper) - arm.position_margin
        #: rad/s: a fraction of the robot's limits, and slow enough that one tick of motion
        #: (times lead_ticks) stays within max_lead (the bound, module docstring)
        self.lead_bound = np.array(arm.max_lead)
        self.v_max = np.minimum(
            np.array(arm.velocity_limits) * arm.velocity_fraction, self.lead_bound / (arm.lead_ticks * self.period)
        )
        self.a_max = np.array(arm.acceleration_limits) * arm.acceleration_fraction
        self.gripper_closed = config.gripper.closed
        #: rad/s at DROID velocity 1 (0.2 rad per tick)
        self.droid_gain = DELTA_PER_TICK * config.control.rate_hz

    def _braking_limit(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The largest velocity (per joint, towards the upper and the lower limit) from which
        one tick of motion plus a full stop still ends inside the limits."""
        t, a = self.lookahead, self.a_max
        up, down = np.maximum(self.upper - q, 0.0), np.maximum(q - self.lower, 0.0)
        root = lambda d: a * (-t + np.sqrt(t * t + 2 * d / a))  # noqa: E731  (v T + v^2 / 2a = d)
        return root(up), root(down)

    def stop_points(self, q: np.ndarray, v: np.ndarray, after: float = 0.0, least: float = MIN_STOP_S) -> Point:
        """Decelerate from velocity v at q to rest, at the allowed deceleration, over at least
        `least` seconds."""
        stop = max(float(np.max(np.abs(v) / self.a_max)), least)
        return Point(after + stop, np.clip(q + v * stop / 2, self.lower, self.upper), np.zeros(7))

    def stream(self, q: np.ndarray, dq: np.ndarray, velocity: np.ndarray) -> tuple[list[Point], np.ndarray]:
        """The segment for one tick of DROID velocity `velocity` (already checked), from the
        measured arm (q, dq). Returns the points and the commanded velocity."""
        q = np.clip(np.nan_to_num(q), self.lower, self.upper)
        dq = np.clip(np.nan_to_num(dq), -self.v_max, self.v_max)
        want = np.clip(velocity * self.droid_gain, -self.v_max, self.v_max)
        dv = self.a_max * self.lookahead / 4  # the spline's peak acceleration is 4 dv / H
        v = np.clip(want, dq - dv, dq + dv)
        up, down = self._braking_limit(q)
        v = np.clip(v, -down, up)
        q1 = np.clip(q + v * self.lookahead, self.lower, self.upper)
        return [Point(self.lookahead, q1, v), self.stop_points(q1, v, after=self.lookahead)], v

    def hold(self, q: np.ndarray, dq: np.ndarray) -> list[Point]:
        """Come to rest as soon as the allowed deceleration permits, from the measured arm."""
        q = np.clip(np.nan_to_num(q), self.lower, self.upper)
        dq = np.clip(np.nan_to_num(dq), -self.v_max, self.v_max)
        return [self.stop_points(q, dq, least=HOLD_MIN_S)]

    def move_to(self, q: np.ndarray, goal: np.ndarray, max_speed: float) -> list[Point]:
        """One smooth segment from the measured arm, at rest, to `goal` at rest (the reset), no
        faster than max_speed (rad/s) and the allowed acceleration (a rest-to-rest cubic over T
        peaks at 1.5 d / T in velocity and 6 d / T^2 in acceleration)."""
        q = np.clip(np.nan_to_num(q), self.lower, self.upper)
        goal = np.clip(goal, self.lower, self.upper)
        distance = np.abs(goal - q)
        speed = np.minimum(self.v_max, max_speed)
        duration = max(
            float(np.max(1.5 * distance / speed)),
            float(np.max(np.sqrt(6 * distance / self.a_max))),
            0.5 if distance.max() > 1e-4 else 0.1,
        )
        return [Point(duration, goal, np.zeros(7))]

    def gripper(self, droid_gripper: float) -> float:
        """DROID's gripper value (0 open .. 1 closed) as the knuckle joint's target (rad)."""
        return float(np.clip(droid_gripper, 0.0, 1.0)) * self.gripper_closed
