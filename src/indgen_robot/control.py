"""What the FR3 runner sends the arm's trajectory controller, and why it can never be garbage.

DROID's semantics: a normalised joint velocity v (7 values in [-1, 1]) asks each joint to
move 0.2 v rad in one 15 Hz tick (3 v rad/s), from where the arm is measured to be (DROID
commands q_measured + 0.2 v). Streaming raw position steps makes libfranka reflex; the runner
instead sends, each tick, a short JointTrajectory that the controller interpolates at its own
rate (1 kHz on franka_ros2). ros2_controllers' JointTrajectoryController starts every new
trajectory from the **measured** state, and so does every segment here:

    point 1 (a look-ahead H, 1.5 ticks):  q_meas + v_cmd H   at velocity v_cmd
    point 2 (the stop):                   v_cmd decays to 0 at the tail deceleration

v_cmd is DROID's velocity limited to the runner's speed caps, changed from the measured
velocity by at most what the allowed acceleration permits (the controller's cubic spline
then stays within it: its peak acceleration is 4 |dv| / H), and slowed wherever the stop point
would come closer to a position limit than the margin. The next tick's segment replaces this
one after one tick, so the arm moves at v_cmd: 0.2 v rad per tick, as DROID asks.

The bound (indgen_core/cell/arm_bounds.py): no segment reaches further than `arm.max_lead` from
the pose it was planned from. The speed caps make a streamed segment's look-ahead, the
sample's extrapolation and its tail fit; a hold stops within it; a reset is streamed towards
its pose like a policy's motion (reset.py), and only its last stretch, within max_lead of the
pose, goes as one rest-to-rest segment. So whatever happens after a segment is sent (the arm blocked, the runner
stalled or killed, the policy late), the controller's reference leads the arm by at most
max_lead, the arm moves at most max_lead further, and a blocked joint is pushed with at most
the configuration's stated torque, without relying on the controller's path tolerance.

A command is refused (the runner holds) unless it has 7 finite velocities in [-1, 1] and a
finite gripper value in [0, 1]; `CommandGate` is plain Python so that a property test can
throw arbitrary arrays at it.
"""

from __future__ import annotations

import numpy as np

from indgen_core.cell.robot_config import MIN_STOP_S, RobotConfig
from indgen_core.cell.trajectory import Point
from indgen_core.specs.droid import DELTA_PER_TICK

#: a hold (e-stop, lost policy, end of episode) stops over at least this long where the reach
#: allows. A hold comes at any moment, often when the machine is busiest, and the controller
#: starts it from where the arm has moved on meanwhile: started d late, the stop's spline asks
#: 6 v d / T^2 more acceleration than planned (test_fr3_control measures 0-200 ms late).
HOLD_MIN_S = 0.5
#: 1/s: near its pose a reset's speed is this times the remaining distance (its deceleration
#: then stays at RESET_GAIN x the reset's speed)
RESET_GAIN = 2.0


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
        self.extrapolation = config.control.max_extrapolation_s
        self.lower = np.array(arm.lower) + arm.position_margin
        self.upper = np.array(arm.upper) - arm.position_margin
        self.max_lead = np.array(arm.max_lead)
        #: rad/s: a fraction of the robot's limits, and slow enough that a segment's reach stays
        #: within max_lead (arm_bounds)
        self.v_max = config.speed_caps()
        self.a_max = np.array(arm.acceleration_limits) * arm.acceleration_fraction
        self.a_stop = config.stop_accelerations()
        #: the most a segment changes the velocity: the spline's peak acceleration is 4 dv / H
        self.dv = self.a_max * self.lookahead / 4
        self.gripper_closed = config.gripper.closed
        #: rad/s at DROID velocity 1 (0.2 rad per tick)
        self.droid_gain = DELTA_PER_TICK * config.control.rate_hz

    def _braking_limit(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The largest velocity (per joint, towards the upper and the lower limit) from which
        one look-ahead of motion plus a full stop still ends inside the limits."""
        t, a = self.lookahead, self.a_stop
        up, down = np.maximum(self.upper - q, 0.0), np.maximum(q - self.lower, 0.0)
        root = lambda d: a * (-t + np.sqrt(t * t + 2 * d / a))  # noqa: E731  (v T + v^2 / 2a = d)
        return root(up), root(down)

    def stop_points(self, q: np.ndarray, v: np.ndarray, after: float = 0.0, least: float = MIN_STOP_S) -> Point:
        """Decelerate from velocity v at q to rest at the tail deceleration, over at least
        `least` seconds."""
        stop = max(float(np.max(np.abs(v) / self.a_stop)), least)
        return Point(after + stop, np.clip(q + v * stop / 2, self.lower, self.upper), np.zeros(7))

    def _clean(self, q: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = np.clip(np.nan_to_num(np.asarray(q, float)), self.lower, self.upper)
        return q, np.clip(np.nan_to_num(np.asarray(dq, float)), -self.v_max, self.v_max)

    def stream(
        self, q: np.ndarray, dq: np.ndarray, velocity: np.ndarray, previous: np.ndarray | None = None
    ) -> tuple[list[Point], np.ndarray]:
        """The segment for one tick of DROID velocity `velocity` (already checked), from the
        measured arm (q, dq). Returns the points and the commanded velocity (rad/s)."""
        return self.segment(q, dq, np.asarray(velocity, float) * self.droid_gain, previous)

    def segment(
        self, q: np.ndarray, dq: np.ndarray, want: np.ndarray, previous: np.ndarray | None = None
    ) -> tuple[list[Point], np.ndarray]:
        """The segment that moves at `want` (rad/s) for one look-ahead and then stops, from the
        measured arm, within the speed caps, the acceleration and the position limits.

        The velocity changes by at most dv from `previous`, the velocity the last streamed
        segment commanded (the measured one when there is none): the reference's own spline
        stays within the allowed acceleration, and a joint that static friction holds (or an
        obstacle blocks) sees the reference draw ahead tick by tick until the controller's
        push frees it, up to the bound. Limited from the measured velocity instead, such a
        joint would be asked for dv x H of lead (0.005 rad) for ever and never start."""
        q, dq = self._clean(q, dq)
        base = dq if previous is None else np.clip(np.nan_to_num(np.asarray(previous, float)), -self.v_max, self.v_max)
        want = np.clip(np.nan_to_num(np.asarray(want, float)), -self.v_max, self.v_max)
        v = np.clip(want, base - self.dv, base + self.dv)
        up, down = self._braking_limit(q)
        v = np.clip(v, -down, up)
        # the tail stops every joint over one time, set by the joint that needs longest: a
        # joint that could stop sooner travels further in it, so its speed is held to what that
        # tail and the sample's extrapolation (at the measured speed) leave of its reach
        stop = max(float(np.max(np.abs(v) / self.a_stop)), MIN_STOP_S)
        fit = (self.max_lead - np.abs(dq) * self.extrapolation) / (self.lookahead + stop / 2)
        v = np.clip(v, -fit, fit)
        q1 = np.clip(q + v * self.lookahead, self.lower, self.upper)
        return [Point(self.lookahead, q1, v), self.stop_points(q1, v, after=self.lookahead)], v

    def hold(self, q: np.ndarray, dq: np.ndarray) -> list[Point]:
        """Come to rest from the measured arm: over HOLD_MIN_S where that stays within each
        joint's reach, faster where it does not, never faster than the tail deceleration."""
        q, dq = self._clean(q, dq)
        speed = np.abs(dq)
        shortest = max(float(np.max(speed / self.a_stop)), MIN_STOP_S)
        room = self.max_lead - speed * self.extrapolation  # what is left of the reach for the stop
        with np.errstate(divide="ignore"):
            longest = float(np.min(np.where(speed > 0, 2 * room / np.maximum(speed, 1e-12), np.inf)))
        stop = max(shortest, min(HOLD_MIN_S, longest))
        travel = np.sign(dq) * np.minimum(speed * stop / 2, np.maximum(room, 0.0))
        return [Point(stop, np.clip(q + travel, self.lower, self.upper), np.zeros(7))]

    def toward(self, q: np.ndarray, goal: np.ndarray, max_speed: float) -> np.ndarray:
        """The velocity (rad/s) a reset streams this tick: along the straight line in joint
        space to `goal`, the slowest joint at min(max_speed, its cap), slowing in proportion to
        the distance left near the pose (RESET_GAIN)."""
        error = np.asarray(goal, float) - np.clip(np.nan_to_num(np.asarray(q, float)), self.lower, self.upper)
        speed = np.minimum(self.v_max, max_speed)
        needed = float(np.max(np.abs(error) / speed))  # s at full speed
        rate = RESET_GAIN if needed <= 1.0 / RESET_GAIN else 1.0 / needed
        return error * rate

    def move_to(self, q: np.ndarray, goal: np.ndarray, max_speed: float) -> list[Point]:
        """One smooth rest-to-rest segment from the measured arm to `goal`, no faster than
        max_speed and the allowed acceleration (a cubic over T peaks at 1.5 d / T in velocity
        and 6 d / T^2 in acceleration); only for a goal within reach (ValueError otherwise):
        the last stretch of a reset."""
        q, _ = self._clean(q, np.zeros(7))
        goal = np.clip(np.asarray(goal, float), self.lower, self.upper)
        distance = np.abs(goal - q)
        if np.any(distance > self.max_lead + 1e-9):
            raise ValueError(f"a segment to a goal {distance.max():.3f} rad away would reach beyond max_lead")
        speed = np.minimum(self.v_max, max_speed)
        duration = max(
            float(np.max(1.5 * distance / speed)),
            float(np.max(np.sqrt(6 * distance / self.a_max))),
            0.5 if distance.max() > 1e-4 else 0.1,
        )
        return [Point(duration, goal, np.zeros(7))]

    def reach(self, q0: np.ndarray, points: list[Point]) -> np.ndarray:
        """rad per joint: how far a segment planned from q0 goes from it (the bound's measure)."""
        return np.max([np.abs(np.asarray(p.positions) - q0) for p in points], axis=0)

    def gripper(self, droid_gripper: float) -> float:
        """DROID's gripper value (0 open .. 1 closed) as the knuckle joint's target (rad)."""
        return float(np.clip(droid_gripper, 0.0, 1.0)) * self.gripper_closed
