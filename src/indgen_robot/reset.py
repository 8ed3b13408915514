"""Bringing the arm to the reset pose before a trial, from wherever and however it is.

The sequence, every step from the measured arm (motion.py):
1. A robot in a fault (its arm state stale: a reflex or a driver fault deactivated franka's
   controllers) is recovered first: franka's error recovery, the hardware component active,
   the controllers activated (the port does it the way the robot configuration says), and the
   runner waits for the arm's state to come back. The trajectory controller then holds where
   the arm is, and the next segment starts there.
2. Hold and wait until the arm is at rest.
3. Open the gripper (DROID's reset opens it before moving).
4. Stream towards the reset pose tick by tick, as a policy's motion is streamed (each segment
   from the measured arm, within max_lead: control.py), along the straight line in joint space
   and slowing near the pose; the rest of the way is one rest-to-rest segment once every joint
   is within max_lead of the pose. The
   reset's measured progress is watched like an episode's: a reset whose distance to the pose
   stops shrinking for reset.stall_s is blocked (something is in the way) and holds at the
   measured pose; a state that stops during the reset is waited for up to STATE_BACK_S, and
   when it comes back the arm holds at once and the reset goes on; one that does not come back
   abandons the reset, and the hold it was owed goes out as soon as the state returns. So a
   reset pushes an obstacle no harder than an episode can, whatever the controller's path
   tolerance.
5. Verify: within reset.tolerance of the pose and at rest, by fresh samples, for
   reset.settle_s without a break (one quiet sample at the end of the segment proves nothing:
   the controller still settles the arm, and it may move again), within reset.timeout_s.
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

from indgen_core.cell.robot_config import RobotConfig
from indgen_robot.arm_state import Sample, StateSource
from indgen_robot.motion import ArmMotion, NoFreshState
from indgen_robot.safety import STATE_BACK_S, Recovery

#: how long to wait for the robot's first joint states when none came yet
FIRST_STATE_S = 5.0
#: how long the arm may take to come to rest before the reset segment
SETTLE_S = 3.0
#: rad: a reset that brings its farthest joint this much closer to the pose makes progress
STALL_PROGRESS = 0.005
#: s between two looks at the arm's state while a reset streams (its segments go at the tick rate)
POLL_S = 0.02


STALE_DURING_RESET = "the arm's state went stale during the reset (a reflex or a fault)"


class RobotPort(Protocol):
    """What the reset needs of the robot besides the arm's motion (the runner node over ROS,
    a test's fake)."""

    gripper: StateSource

    def gripper_command(self, knuckle_rad: float) -> None: ...

    def recover(self) -> Recovery: ...

    def enable_torque(self) -> Recovery:
        """Torque control on (a no-op while it is): after a stop, only once the operator has
        acknowledged it (torque_control.py)."""


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
        #: s: the last state gap a reset waited out (its stamps)
        self.paused_s = 0.0

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
            # a state that comes back by itself was only delayed (the middleware, a busy host)
            self._wait(lambda: (arm.fresh() is not None, ""), STATE_BACK_S, progress, should_stop)
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
        enabled = self.port.enable_torque()  # on already, or off after a stop: only once acknowledged
        if not enabled.ok:
            return False, enabled.message
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
        ok, message = self._stream_to_pose(progress, should_stop)
        if not ok:
            self.motion.hold()  # owed until the state returns where it is stale
            return False, message
        ok, message = self._wait(
            self._reached,
            config.reset.timeout_s,
            progress,
            lambda: should_stop() or (None if arm.fresh() else STALE_DURING_RESET),
            dwell=config.reset.settle_s,
        )
        if not ok:
            self.motion.hold()
            return False, f"reset not reached: {message}"
        return True, "at the reset pose"

    def _reached(self) -> tuple[bool, str]:
        sample = self.arm.fresh()
        if sample is None:
            return False, STALE_DURING_RESET
        return at_pose(self.config, sample)

    def _stream_to_pose(self, progress, should_stop) -> tuple[bool, str]:
        """Tick by tick towards the pose until the last rest-to-rest segment is sent (True), or
        why not (the caller holds)."""
        config, arm, gate = self.config, self.arm, self.motion.gate
        goal = np.array(config.reset.pose)
        sample = arm.fresh()
        if sample is None:
            return False, "reset not started: the arm's state is stale"
        speed = np.minimum(gate.v_max, config.reset.max_speed)
        deadline = self.clock() + float(np.max(np.abs(goal - sample.q) / speed)) + config.reset.timeout_s
        best, best_at = float("inf"), self.clock()
        last_progress = next_tick = self.clock()
        while True:
            stop = should_stop()
            if stop:
                return False, stop
            sample = arm.fresh()
            if sample is None:
                ok, message = self._state_gap(progress, should_stop)
                if not ok:
                    return False, message
                best_at = next_tick = self.clock()  # the pause is not the obstacle's
                continue
            if self.clock() < next_tick:  # the state is watched between ticks too (a gap is held at once)
                self.sleep(min(POLL_S, next_tick - self.clock()))
                continue
            next_tick += gate.period
            error = np.abs(goal - sample.q)
            worst = int(np.argmax(error))
            # the rest of the way as one segment once it is within reach: a slow stream would
            # push a joint that friction holds with too little to free it
            if np.all(error + np.abs(sample.dq) * gate.extrapolation <= gate.max_lead):
                try:
                    self.motion.move_to(goal, config.reset.max_speed)
                except (NoFreshState, ValueError) as exc:
                    return False, f"reset not finished: {exc}"
                return True, "at the reset pose"
            if error[worst] < best - STALL_PROGRESS:
                best, best_at = float(error[worst]), self.clock()
            elif self.clock() - best_at >= config.reset.stall_s:
                return False, (
                    f"the reset is blocked: {config.arm.joints[worst]} is {error[worst]:.3f} rad from the reset pose "
                    f"and came no closer for {config.reset.stall_s:g} s (something in the way?); the arm holds where "
                    "it is"
                )
            if self.clock() >= deadline:
                return False, f"reset not reached: {config.arm.joints[worst]} is {error[worst]:.3f} rad from the pose"
            try:
                self.motion.drive(gate.toward(sample.q, goal, config.reset.max_speed))
            except NoFreshState:
                continue
            if progress is not None and self.clock() - last_progress > 0.5:
                last_progress = self.clock()
                progress()

    def _state_gap(self, progress, should_stop) -> tuple[bool, str]:
        """The arm's state stopped during the reset: wait up to STATE_BACK_S. Back: hold at the
        measured pose at once (the controller ran its last segment meanwhile) and go on."""
        before = self.arm.latest()
        ok, _ = self._wait(lambda: (self.arm.fresh() is not None, ""), STATE_BACK_S, progress, should_stop)
        if not ok:
            stop = should_stop()
            return False, stop or (
                f"reset abandoned: the arm's state stopped for more than {STATE_BACK_S:g} s (a reflex or a fault); "
                "the arm holds as soon as its state comes back"
            )
        after = self.arm.latest()
        self.motion.hold()
        self.paused_s = after.stamp - before.stamp if after is not None and before is not None else float("nan")
        return True, f"the arm's state paused for {self.paused_s:.2f} s during the reset; held, then went on"

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
