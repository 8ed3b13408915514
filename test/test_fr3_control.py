"""What the FR3 runner may send the arm: never garbage, never past the limits, never reaching
further than max_lead from where it was planned (property tests over arbitrary command arrays
and arm states), smooth enough for franka's motion generator; the torque bound the robot
configuration's loader checks; and the controller-side interpolation both the runner and the
stand-in use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from indgen_core.cell.robot_config import load_robot_config
from indgen_core.cell.trajectory import Point, Trajectory
from indgen_robot.control import CommandGate, RefusedCommand, check_command

CONFIG = load_robot_config("fr3_robotiq_zed")
GATE = CommandGate(CONFIG)
LOWER = np.array(CONFIG.arm.lower) + CONFIG.arm.position_margin
UPPER = np.array(CONFIG.arm.upper) - CONFIG.arm.position_margin
V_LIMIT = GATE.v_max  # a fraction of the robot's limits, capped so that a segment's reach stays within max_lead

anything = st.one_of(
    hnp.arrays(np.float64, st.integers(0, 12), elements=st.floats(allow_nan=True, allow_infinity=True, width=64)),
    hnp.arrays(np.float64, 7, elements=st.floats(-5, 5)),
    st.lists(st.floats(allow_nan=True), max_size=9),
    st.just("seven"), st.none(),
)
state = hnp.arrays(np.float64, 7, elements=st.floats(-6, 6))
speed = hnp.arrays(np.float64, 7, elements=st.floats(-4, 4))


def _points_ok(points: list[Point]) -> None:
    for p in points:
        assert np.all(np.isfinite(p.positions)) and np.all(np.isfinite(p.velocities))
        assert np.all(p.positions >= LOWER - 1e-9) and np.all(p.positions <= UPPER + 1e-9), p.positions
        assert np.all(np.abs(p.velocities) <= V_LIMIT + 1e-9), p.velocities
        assert p.t > 0


@settings(max_examples=400, deadline=None)
@given(command=anything, gripper=st.one_of(st.floats(allow_nan=True), st.just([0.3, 0.4]), st.none()),
       q=state, dq=speed)
def test_no_published_point_is_ever_non_finite_or_outside_the_limits(command, gripper, q, dq):
    try:
        v, g = check_command(command, gripper)
    except RefusedCommand:
        points = GATE.hold(q, dq)  # what the runner sends instead
    else:
        assert v.shape == (7,) and np.all(np.abs(v) <= 1) and 0 <= g <= 1
        points, _ = GATE.stream(q, dq, v)
    _points_ok(points)
    _points_ok(GATE.segment(q, dq, GATE.toward(q, np.array(CONFIG.reset.pose), CONFIG.reset.max_speed))[0])


def _start(q, dq):
    """Where a segment is planned from, as ArmMotion does: the sample, within the limits."""
    return np.clip(q, LOWER, UPPER), np.clip(dq, -V_LIMIT, V_LIMIT)


@settings(max_examples=600, deadline=None)
@given(q=state, dq=speed, command=hnp.arrays(np.float64, 7, elements=st.floats(-1, 1)),
       goal=hnp.arrays(np.float64, 7, elements=st.floats(-3, 3)))
def test_no_segment_reaches_further_than_max_lead_from_the_sampled_arm(q, dq, command, goal):
    """The bound (indgen_core/cell/arm_bounds.py): a streamed tick, a hold and a reset's tick each
    end within max_lead of the pose the arm was sampled at, counting the extrapolation of the
    sample by its velocity (up to max_extrapolation_s). So a blocked joint is pushed by a
    reference at most max_lead ahead, and with no further command the arm goes at most max_lead
    further, whatever the controller's path tolerance."""
    q0, dq0 = _start(q, dq)
    slack = np.abs(dq0) * GATE.extrapolation  # the sample extrapolated before planning
    for points in (GATE.stream(q0, dq0, command)[0], GATE.hold(q0, dq0),
                   GATE.segment(q0, dq0, GATE.toward(q0, goal, CONFIG.reset.max_speed))[0]):
        assert np.all(GATE.reach(q0, points) + slack <= GATE.max_lead + 1e-9), (GATE.reach(q0, points), points)
    near = q0 + np.clip(goal - q0, -GATE.max_lead, GATE.max_lead)
    assert np.all(GATE.reach(q0, GATE.move_to(q0, near, 1.0)) <= GATE.max_lead + 1e-9)
    with pytest.raises(ValueError, match="beyond max_lead"):
        GATE.move_to(q0, q0 + GATE.max_lead * 1.5 * np.where(q0 < (LOWER + UPPER) / 2, 1.0, -1.0), 1.0)


def test_the_speed_caps_and_the_torque_bound_are_what_the_docs_state():
    """The figures docs/real-robot.md and the robot configuration state: the speed caps that
    keep each segment's reach within max_lead, and the controller's worst-case torque against a
    joint blocked at that speed (P, D, feed-forward, integral) within 0.4 of the torque limits
    and under DROID's 40 Nm collision thresholds on joints 1-4."""
    caps, worst = CONFIG.speed_caps(), CONFIG.worst_torques()
    print(f"speed caps {caps.round(3).tolist()} rad/s; worst-case torque {worst.round(2).tolist()} Nm against "
          f"{CONFIG.torque_budget().round(1).tolist()} Nm")  # pytest -s
    assert np.allclose(caps, [0.566] * 4 + [0.764] * 3, atol=5e-4)
    assert np.allclose(worst, [33.59] * 4 + [4.53] * 3, atol=5e-3)
    assert np.all(worst <= CONFIG.torque_budget()) and np.all(worst[:4] < 40.0)
    assert np.all(np.asarray(CONFIG.controller.u_clamp) <= CONFIG.torque_budget())


@pytest.mark.parametrize("command, gripper, why", [
    ([np.nan] * 7, 0.0, "not finite"), ([0.1] * 6, 0.0, "6 values"), ([2.0] + [0.0] * 6, 0.0, "range"),
    ([0.0] * 7, 1.5, "gripper"), ([0.0] * 7, float("inf"), "gripper"), ("abc", 0.0, "not numeric"),
])
def test_refused_commands_say_why(command, gripper, why):
    with pytest.raises(RefusedCommand, match=why):
        check_command(command, gripper)


def test_streamed_segments_stay_within_the_robots_acceleration_even_when_started_late():
    """The controller starts a segment a few ms after the runner planned it; the spline the
    stand-in then follows stays under franka's acceleration limits (its reflex line)."""
    rng = np.random.default_rng(0)
    a_limit = np.array(CONFIG.arm.acceleration_limits)
    ref = Trajectory.at_rest(0.0, np.array(CONFIG.reset.pose))
    now, worst = 0.0, 0.0
    for tick in range(600):
        v = np.clip(rng.normal(0, 0.6, 7), -1, 1) if tick % 40 < 30 else np.zeros(7)  # jerky commands, then stops
        q, dq, _ = ref.sample(now)
        points, _ = GATE.stream(q, dq, v)
        late = now + rng.uniform(0.0, 0.008)  # the controller's start
        q0, dq0, _ = ref.sample(late)
        ref = Trajectory(late, q0, dq0, points)
        for t in np.linspace(late, late + GATE.period, 12):
            worst = max(worst, float(np.max(np.abs(ref.sample(t)[2]) / a_limit)))
        now += GATE.period
    assert worst < 0.8, f"peak acceleration {worst:.2f} of the limit"


@pytest.mark.parametrize("late", [0.0, 0.05, 0.1, 0.2])
def test_a_hold_that_reaches_the_controller_late_stays_within_the_robots_acceleration(late):
    """An e-stop or a lost policy comes while the arm streams at speed, often when the
    machine is busiest: the controller starts the hold `late` seconds after the runner
    planned it, from a reference that has moved on. The stop still stays under franka's
    acceleration limits (the stand-in's reflex line), and it ends at rest."""
    rng = np.random.default_rng(1)
    a_limit = np.array(CONFIG.arm.acceleration_limits)
    worst = 0.0
    for _ in range(200):
        ref = Trajectory.at_rest(0.0, np.array(CONFIG.reset.pose))
        now = 0.0
        for _tick in range(int(rng.integers(3, 30))):  # stream at random speeds first
            q, dq, _ = ref.sample(now)
            ref = Trajectory(now, q, dq, GATE.stream(q, dq, np.clip(rng.normal(0, 0.7, 7), -1, 1))[0])
            now += GATE.period
        q, dq, _ = ref.sample(now)
        hold = GATE.hold(q, dq)
        q0, dq0, _ = ref.sample(now + late)
        held = Trajectory(now + late, q0, dq0, hold)
        for t in np.linspace(now + late, held.end_time, 60):
            worst = max(worst, float(np.max(np.abs(held.sample(t)[2]) / a_limit)))
        assert np.all(held.sample(held.end_time + 0.1)[1] == 0)
    print(f"hold {late * 1000:.0f} ms late: peak acceleration {worst:.2f} of franka's limit")  # pytest -s
    assert worst < 0.8, f"peak acceleration {worst:.2f} of the limit, {late * 1000:.0f} ms late"


def test_a_stream_that_stops_comes_to_rest_inside_the_limits():
    q = np.array(CONFIG.reset.pose)
    q[0] = UPPER[0] - 0.1  # close to a limit, moving towards it at full speed
    dq = np.zeros(7)
    dq[0] = V_LIMIT[0]
    ref = Trajectory(0.0, q, dq, GATE.stream(q, dq, np.eye(7)[0])[0])
    end = ref.end_time
    final, v_end, _ = ref.sample(end + 1.0)
    assert final[0] <= UPPER[0] + 1e-9 and np.all(v_end == 0)
    peak = max(float(ref.sample(t)[0][0]) for t in np.linspace(0, end, 200))
    assert peak <= UPPER[0] + 1e-6


def test_trajectory_follows_points_and_holds_after_the_end():
    traj = Trajectory(10.0, np.zeros(2), np.zeros(2), [Point(1.0, np.array([1.0, -1.0]), np.array([0.5, 0.0])),
                                                          Point(2.0, np.array([1.5, -1.0]), np.zeros(2))])
    q, dq, _ = traj.sample(11.0)
    assert np.allclose(q, [1.0, -1.0]) and np.allclose(dq, [0.5, 0.0])
    q, dq, ddq = traj.sample(20.0)
    assert np.allclose(q, [1.5, -1.0]) and not dq.any() and not ddq.any()
    assert np.allclose(traj.sample(9.0)[0], 0)
    linear = Trajectory(0.0, np.zeros(1), np.zeros(1), [Point(2.0, np.array([2.0]))])
    assert np.allclose(linear.sample(1.0)[:2], [[1.0], [1.0]])
    with pytest.raises(ValueError, match="increase"):
        Trajectory(0.0, np.zeros(1), np.zeros(1), [Point(1.0, np.ones(1)), Point(1.0, np.ones(1))])


def test_a_robot_configuration_with_bad_values_is_one_sentence(tmp_path):
    from indgen_core.cell.robot_config import load_robot_config
    from indgen_core.configfile import ConfigError

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\narm:\n  lower: [0, 0, 0, 0, 0, 0]\n  upper: [1, 1, 1, 1, 1, 1, 1]\n"
                   "  velocity_limits: [1, 1, 1, 1, 1, 1, 1]\n  acceleration_limits: [1, 1, 1, 1, 1, 1, 1]\n")
    with pytest.raises(ConfigError, match="7 values"):
        load_robot_config(str(bad))
    with pytest.raises(ConfigError, match="no robot configuration 'nope'"):
        load_robot_config("nope")
    shipped = (Path(__file__).resolve().parents[1] / "config" / "robots" / "fr3_robotiq_zed.yaml").read_text()
    assert "'moveit' was removed" in _error(tmp_path, shipped.replace("  method: direct", "  method: moveit"))
    assert "republishing the last values" in _error(tmp_path, shipped.replace("state_topic: /franka/joint_states",
                                                                              "state_topic: /joint_states"))
    gains = (Path(__file__).resolve().parents[1] / "config" / "robots" / "fr3_robotiq_zed" /
             "fr3_arm_controller.yaml").read_text()
    (tmp_path / "fr3_robotiq_zed").mkdir()
    controller = tmp_path / "fr3_robotiq_zed" / "fr3_arm_controller.yaml"
    # the D term counts: the gains of the earlier configuration (p 300, d 25: 30 Nm of P alone)
    # reach 30 + 25 x 4/3 x 0.566 = 48.9 Nm against a joint blocked at top speed
    controller.write_text(gains.replace("p: 200.0, d: 18.0", "p: 300.0, d: 25.0", 1))
    message = _error(tmp_path, shipped)
    assert ("fr3_joint1: worst-case torque against a blocked joint 48.9 Nm (p 300 x max_lead 0.1 rad + (d 25 + ff 0) "
            "x 0.75 rad/s + i clamp 0) exceeds 0.4 of its torque limit (34.8 Nm)") in message, message
    controller.write_text(gains.replace("fr3_joint6: {p: 20.0, d: 1.5, i: 0.0, ff_velocity_scale: 0.0",
                                        "fr3_joint6: {p: 20.0, d: 1.5, i: 0.0, ff_velocity_scale: 1.0", 1))
    assert "fr3_joint6: worst-case torque" in _error(tmp_path, shipped)
    controller.write_text(gains.replace("fr3_joint2: {p: 200.0, d: 18.0, i: 0.0,", "fr3_joint2: {p: 200.0, d: 18.0, "
                                        "i: 5.0,", 1))
    assert "fr3_joint2: an integral gain (5) needs a finite i_clamp" in _error(tmp_path, shipped)
    controller.write_text(gains.replace(", u_clamp_max: 34.0, u_clamp_min: -34.0}", "}", 1))
    assert "output clamp for fr3_joint1 (u_clamp_max/u_clamp_min inf Nm) must be set" in _error(tmp_path, shipped)
    controller.write_text(gains)
    assert load_robot_config(str(tmp_path / "robot.yaml")).controller.u_clamp[0] == 34.0


def _error(folder, text: str) -> str:
    from indgen_core.configfile import ConfigError

    path = folder / "robot.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_robot_config(str(path))
    return str(err.value)
