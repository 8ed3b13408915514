"""What the FR3 runner may send the arm: never garbage, never past the limits (property tests
over arbitrary command arrays), smooth enough for franka's motion generator, and the
controller-side interpolation both the runner and the stand-in use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from indgen_core.robot_config import load_robot_config
from indgen_core.trajectory import Point, Trajectory
from indgen_robot.control import CommandGate, RefusedCommand, check_command

CONFIG = load_robot_config("fr3_robotiq_zed")
GATE = CommandGate(CONFIG)
LOWER = np.array(CONFIG.arm.lower) + CONFIG.arm.position_margin
UPPER = np.array(CONFIG.arm.upper) - CONFIG.arm.position_margin
V_LIMIT = GATE.v_max  # a fraction of the robot's limits, capped so one tick of motion stays within max_lead

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
    _points_ok(GATE.move_to(q, np.array(CONFIG.reset.pose), CONFIG.reset.max_speed))


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
    from indgen_core.configfile import ConfigError
    from indgen_core.robot_config import load_robot_config

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
    (tmp_path / "fr3_robotiq_zed" / "fr3_arm_controller.yaml").write_text(gains.replace("p: 300.0", "p: 900.0", 1))
    message = _error(tmp_path, shipped)
    assert "fr3_joint1: p 900 x max_lead 0.1 rad = 90.0 Nm exceeds 0.4 of its torque limit" in message, message


def _error(folder, text: str) -> str:
    from indgen_core.configfile import ConfigError

    path = folder / "robot.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_robot_config(str(path))
    return str(err.value)
