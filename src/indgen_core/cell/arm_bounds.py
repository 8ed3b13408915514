"""The two bounds the FR3 runner promises for every segment it sends the arm's trajectory
controller, derived once here so that the configuration loader, the runner and the tests
compute the same numbers.

**Reach.** A segment starts where the arm was measured (the JointTrajectoryController starts
every new trajectory from the measured state) and ends at rest. However the arm moves next
(blocked, or carried on by a controller whose runner has died), the controller's reference
can lead it by no more than the segment's reach: the distance from the sampled pose to the
segment's end, plus the motion of the arm between its sample and the segment's start that
the runner extrapolates. A streamed segment at joint speed v runs `lookahead` seconds at v
and then stops at the tail deceleration `a` (over at least `least` seconds):

    reach(v) = v (lookahead + extrapolation) + v max(v / a, least) / 2

The runner caps each joint's speed so that reach(v) <= arm.max_lead. With no new command (a
stalled, killed or late runner) the arm therefore moves at most max_lead further, and a
blocked joint is pushed by a reference at most max_lead ahead, whether or not the
controller's own path tolerance is on.

**Torque.** ros2_controllers' JTC on an effort interface commands
`ff_velocity_scale x v_ref + PID(position error, velocity error)` (joint_trajectory_controller.cpp
`update()`, jazzy). Against a joint blocked while it moved at top speed, the position error is
at most max_lead, the velocity error at most the reference's speed, which a cubic segment
planned at v from an arm found at rest overshoots by a third (its velocity v0 + (v - v0)(4s -
3s^2) peaks at 4/3 v), and the integral term at most its clamp:

    worst = p max_lead + (d + ff_velocity_scale) 4/3 v_max + |i clamp|

The configuration loader refuses gains whose worst case exceeds arm.max_torque_fraction of a
joint's torque limit, naming the joint; the controller file also clamps the PID's output there
(`u_clamp_max/min`, ros2_controllers >= 4.27.0), a second layer where the installed controller
has it.
"""

from __future__ import annotations

import numpy as np

#: a segment's reference velocity peaks at 4/3 of its end velocity when the arm it starts from
#: is at rest (the cubic from (q, 0) to (q + vH, v) over H)
CUBIC_OVERSHOOT = 4.0 / 3.0


def reach(v: np.ndarray, lookahead: float, extrapolation: float, stop_acceleration: np.ndarray, least: float):
    """How far (rad) one streamed segment at speed v can carry the reference ahead of the pose
    the arm was sampled at: its look-ahead, the extrapolation, and its tail to rest."""
    v = np.abs(np.asarray(v, float))
    return v * (lookahead + extrapolation) + v * np.maximum(v / stop_acceleration, least) / 2


def speed_caps(
    max_lead: np.ndarray,
    velocity_cap: np.ndarray,
    lookahead: float,
    extrapolation: float,
    stop_acceleration: np.ndarray,
    least: float,
) -> np.ndarray:
    """The largest joint speeds (rad/s, at most velocity_cap) whose reach stays within max_lead
    (reach is increasing in v: bisection)."""
    lo, hi = np.zeros_like(np.asarray(max_lead, float)), np.asarray(velocity_cap, float).copy()
    fits = reach(hi, lookahead, extrapolation, stop_acceleration, least) <= max_lead
    for _ in range(60):
        mid = (lo + hi) / 2
        ok = reach(mid, lookahead, extrapolation, stop_acceleration, least) <= max_lead
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(fits, velocity_cap, lo)


def worst_torques(p, d, ff_velocity_scale, i_clamp, max_lead, v_max) -> np.ndarray:
    """Nm per joint: the most the JTC's command can reach against a joint blocked at top speed
    (module docstring), before any output clamp."""
    v_ref = CUBIC_OVERSHOOT * np.asarray(v_max, float)
    return (
        np.asarray(p, float) * np.asarray(max_lead, float)
        + (np.abs(np.asarray(d, float)) + np.abs(np.asarray(ff_velocity_scale, float))) * v_ref
        + np.abs(np.asarray(i_clamp, float))
    )
