"""Bringing the arm to the reset pose before a trial, from wherever and however it is.

The sequence, every step from the measured arm (motion.py):
1. A robot in a fault (its arm state stale: a reflex or a driver fault deactivated franka's
   controllers) is recovered first: franka's error recovery, the hardware component active,
   the controllers activated (the port does it the way the robot configuration says), and the
   runner waits for the arm's state to come back. The trajectory controller then holds where
   the arm is, and the next segment starts there.
2. Hold and wait until the arm is at rest.
3. Open the gripper (DROID's reset opens it before moving).
4. One smooth segment to the reset pose (control.CommandGate.move_to), then verify: within
   reset.tolerance of the pose and at rest, by fresh samples, for reset.settle_s without a
   break (one quiet sample at the end of the segment proves nothing: the controller still
   settles the arm, and it may move again), within reset.timeout_s.
Before an episode starts the runner asks `settled()` again: the arm must still be at the pose
and at rest for reset.settle_s (a person building the scene may have bumped it); it waits,
holding, up to SETTLE_S for that, and the trial is aborted (re-run, never scored) if not.
A fault, an e-stop or a stop request at any point ends the sequence with the arm holding and
one sentence saying why; the trial is then not started.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

from indgen_core.robot_config import RobotConfig
from indgen_robot.arm_state import Sample, StateSource
from indgen_robot.motion import ArmMotion, NoFreshState
from indgen_robot.safety import Recovery

#: how long to wait for the robot's first joint states when none came yet
FIRST_STATE_S = 5.0
#: how long the arm may take to come to rest before the reset segment
SETTLE_S = 3.0


class RobotPort(Protocol):
    """What the reset needs of the robot besides the arm's motion (the runner node over ROS,
    a test's fake)."""

    gripper: StateSource

    def gripper_command(self, knuckle_rad: float) -> None: ...

    def recover(self) -> Recovery: ...


def at_rest(sample: Sample | None, speed: float) -> tuple[bool, str]:
    if sample is None:
        return False, "no current joint state"
    moving = float(np.max(np.abs(sample.dq)))
    return moving < speed, f"the arm still moves at {moving:.2f} rad/s"


def at_pose(config: RobotConfig, sample: Sample | None) -> tuple[bool, str]:
    """Whether a fresh sample shows the arm at the reset pose, at rest; one sentence."""
    if sample is None:
        return False, "no current joint state (the arm's state is stale)"
    error = np.abs(sample.q - np.array(config.reset.pose))
    worst = int(np.argmax(error))
    if error[worst] > config.reset.tolerance:
        return False, f"{config.arm.joints[worst]} is {error[worst]:.3f} rad from the reset pose"
    ok, message = at_rest(sample, config.reset.at_rest_speed)
    return (True, "at the reset pose") if ok else (False, message)


class ResetSequence:
    def __init__(
        self,
        config: RobotConfig,
        motion: ArmMotion,
        port: RobotPort,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.config = config
        self.motion = motion
        self.arm: StateSource = motion.arm
        self.port = port
        self.sleep, self.clock = sleep, clock

    def _wait(
        self, check: Callable[[], tuple[bool, str]], timeout: float, progress, should_stop, dwell: float = 0.0
    ) -> tuple[bool, str]:
        """Until `check` holds for `dwell` seconds without a break, up to `timeout`."""
        deadline = self.clock() + timeout
        last = self.clock()
        since: float | None = None
        problem = ""
        while True:
            ok, message = check()
            if not ok:
                since, problem = None, message
            else:
                since = self.clock() if since is None else since
                if self.clock() - since >= dwell:
                    return True, message
            stop = should_stop()
            if stop:
                return False, stop
            if self.clock() >= deadline:
                return False, problem or message
            if progress is not None and self.clock() - last > 0.5:
                last = self.clock()
                progress()
            self.sleep(0.02)

    def run(
        self, progress: Callable[[], None] | None = None, should_stop: Callable[[], str | None] = lambda: None
    ) -> tuple[bool, str]:
        """(at the reset pose, one sentence)."""
        arm, config = self.arm, self.config
        if arm.latest() is None:
            self._wait(lambda: (arm.latest() is not None, ""), FIRST_STATE_S, progress, should_stop)
            if arm.latest() is None:
                return False, f"no joint states from the arm on {config.arm.state_topic}: is its bring-up running?"
        if arm.fresh() is None:
            recovery = self.port.recover()
            message = recovery.message
            if not recovery.ok:
                return (
                    False,
                    f"the robot is in a fault ({arm.age():.1f} s without arm state) and recovery failed: {message}",
                )
            ok, _ = self._wait(lambda: (arm.fresh() is not None, ""), config.recovery.timeout_s, progress, should_stop)
            if not ok:
                return (
                    False,
                    f"the arm's state did not come back within {config.recovery.timeout_s:g} s of the "
                    f"recovery ({message})",
                )
        clock_problem = arm.check.problem(f"the arm's state ({config.arm.state_topic})", arm.max_age_s)
        if clock_problem:
            return False, clock_problem
        stop = should_stop()
        if stop:
            return False, stop
        self.motion.hold()
        self._wait(lambda: at_rest(arm.fresh(), config.reset.at_rest_speed), SETTLE_S, progress, should_stop)
        stop = should_stop()
        if stop:
            self.motion.hold()
            return False, stop
        self.port.gripper_command(0.0)
        try:
            duration = self.motion.move_to(np.array(config.reset.pose), config.reset.max_speed)
        except NoFreshState as exc:
            return False, f"reset not started: {exc}"

        def reached() -> tuple[bool, str]:
            if arm.fresh() is None:
                return False, "the arm's state went stale during the reset (a reflex or a fault)"
            return at_pose(config, arm.fresh())

        ok, message = self._wait(
            reached,
            duration + config.reset.timeout_s,
            progress,
            lambda: (
                should_stop()
                or (None if arm.fresh() else "the arm's state went stale during the reset (a reflex or a fault)")
            ),
            dwell=config.reset.settle_s,
        )
        if not ok:
            self.motion.hold()
            return False, f"reset not reached: {message}"
        return True, "at the reset pose"

    def settled(
        self, progress: Callable[[], None] | None = None, should_stop: Callable[[], str | None] = lambda: None
    ) -> tuple[bool, str]:
        """Whether the arm stays at the reset pose, at rest, for reset.settle_s (waiting up to
        SETTLE_S; nothing is sent): the last check before an episode's first command."""
        return self._wait(
            lambda: at_pose(self.config, self.arm.fresh()),
            max(SETTLE_S, self.config.reset.settle_s),
            progress,
            should_stop,
            dwell=self.config.reset.settle_s,
        )
