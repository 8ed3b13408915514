"""Moving the arm to the reset pose before a trial, and checking that it got there.

`direct` (the default): hold, then one smooth segment to the reset pose through the
trajectory controller, no faster than reset.max_speed and the runner's acceleration limit.
`moveit`: a collision-aware plan and execution through moveit_py, which comes with a ROS 2
install (ros-jazzy-moveit-py, not on PyPI) and is imported only here. Either way the reset
counts only when the joint states say the arm is within reset.tolerance of the pose and at
rest, within reset.timeout_s; otherwise the trial is not started (the robot holds).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from indgen_core.errors import MissingDependencyError
from indgen_core.robot_config import RobotConfig


def _wait_until(check: Callable[[], tuple[bool, str]], timeout: float,
                progress: Callable[[], None] | None) -> tuple[bool, str]:
    deadline = time.monotonic() + timeout
    ok, message = check()
    last = 0.0
    while not ok and time.monotonic() < deadline:
        time.sleep(0.02)
        ok, message = check()
        if progress is not None and time.monotonic() - last > 0.5:
            last = time.monotonic()
            progress()
    return ok, message


def _at_rest(runner) -> tuple[bool, str]:
    joints = runner._state_now()
    if joints is None:
        return False, "no joint states"
    moving = float(np.max(np.abs(joints[1])))
    return moving < 0.05, f"the arm still moves at {moving:.2f} rad/s"


def _moveit_reset(runner, config: RobotConfig) -> None:
    try:
        from moveit.core.robot_state import RobotState
        from moveit.planning import MoveItPy
    except ImportError:
        raise MissingDependencyError("moveit.planning", "a ROS 2 install with ros-jazzy-moveit-py",
                                     "reset.method: moveit") from None
    robot = MoveItPy(node_name="indgen_reset")
    component = robot.get_planning_component(config.reset.moveit_group)
    component.set_start_state_to_current_state()
    goal = RobotState(robot.get_robot_model())
    goal.set_joint_group_positions(config.reset.moveit_group, np.array(config.reset.pose))
    component.set_goal_state(robot_state=goal)
    plan = component.plan()
    if not plan:
        raise RuntimeError("MoveIt found no collision-free plan to the reset pose")
    robot.execute(plan.trajectory, controllers=[])


def reset_arm(runner, config: RobotConfig, progress: Callable[[], None] | None = None) -> tuple[bool, str]:
    """Move `runner`'s arm to the reset pose; (reached, one sentence)."""
    _wait_until(lambda: (runner._state_now() is not None, ""), 5.0, progress)
    if runner._state_now() is None:
        return False, "no joint states from the robot: is its bring-up running?"
    runner._hold()
    _wait_until(lambda: _at_rest(runner), 3.0, progress)
    if config.reset.method == "moveit":
        try:
            _moveit_reset(runner, config)
        except MissingDependencyError as exc:
            return False, str(exc)
        except Exception as exc:
            return False, f"MoveIt reset failed: {exc}"
        runner.reference = None  # MoveIt moved the controller's reference; start from the measured state
        duration = 0.0
    else:
        q_ref, dq_ref = runner._reference_now(time.monotonic())
        points = runner.gate.move_to(q_ref, dq_ref, np.array(config.reset.pose), config.reset.max_speed)
        runner._send(points)
        duration = points[-1].t
    ok, message = _wait_until(runner.at_reset_pose, duration + config.reset.timeout_s, progress)
    return (True, "at the reset pose") if ok else (False, f"reset not reached within {config.reset.timeout_s:g} s: "
                                                          f"{message}")
