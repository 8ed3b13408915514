"""One real-robot episode on the wall clock: tick, wait for the command that answers exactly
that tick, send it from the measured arm, and stop for the first reason that applies.

Plain Python over three ports, so that tests run it without ROS: `motion` (every segment,
from the measured arm), `robot` (the gripper), `policy` (publish a tick, wait for its
answer), plus `inputs()`, a snapshot of what the runner knows (e-stop, cancel, policy, the
arm's freshness). The runner node (ros/fr3_runner.py) only wires ROS to it.

Per tick, before anything is sent, safety.TickChecks decides whether the episode must end;
a command that is missing, repeated, non-finite, the wrong size or out of range is never sent
(the arm holds in the same tick) and max_missed_ticks of them in a row end the episode as a
system fault, with the policy node's own reason where it sent one (a stale camera frame). A
command that is only late (pi0.5 computing a chunk: DROID's loop blocks on it) is waited for,
the arm holding, up to control.reply_timeout_s from its tick, and then executed, not dropped:
the loop's clock starts again from it; a reply later than that is a missed tick. Before step 0
the loop waits, holding, for the policy to be connected and warmed up (a first request can
compile for seconds), up to control.policy_ready_timeout_s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from indgen_core.cell.robot_config import RobotConfig
from indgen_core.episode import PolicyUnavailable
from indgen_core.specs.droid import GRIPPER_CLOSED_RAD, RAD_PER_S_AT_ONE
from indgen_robot.control import RefusedCommand, check_command
from indgen_robot.episode_timing import TickTimer
from indgen_robot.motion import ArmMotion, NoFreshState
from indgen_robot.reset import RobotPort
from indgen_robot.safety import Stop, StopKind, TickChecks, TickInputs


class PolicyPort(Protocol):
    def ready(self) -> str | None:
        """None when the policy can answer now; else what it is waiting for."""

    def publish_tick(self, step: int) -> None: ...

    def wait(self, timeout: float, abort: Callable[[], str | None], what: str) -> dict: ...


@dataclass(frozen=True)
class Refusal:
    """The policy node's answer to a tick it cannot command, with its reason."""

    reason: str


@dataclass
class EpisodeEnd:
    stop: Stop
    steps: int
    duration_s: float
    timing: dict


class EpisodeLoop:
    def __init__(
        self,
        config: RobotConfig,
        motion: ArmMotion,
        robot: RobotPort,
        policy: PolicyPort,
        inputs: Callable[[], TickInputs],
        fault: Callable[[float], Stop],
        feedback: Callable[[str, int], None] = lambda phase, step: None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.config = config
        self.motion, self.robot, self.policy = motion, robot, policy
        self.inputs, self.fault, self.feedback = inputs, fault, feedback
        self.checks = TickChecks(config)
        self.clock, self.sleep = clock, sleep
        self.timer = TickTimer()

    def _lost_now(self) -> str | None:
        """While a tick waits for its command: an e-stop or a lost policy ends the wait at once
        (the robot holds in this tick, not after command_timeout_s)."""
        now = self.inputs()
        return "operator e-stop" if now.estop else now.policy_lost

    def _answer(self, step: int, tick_time: float) -> dict:
        """The tick's command: within command_timeout_s, or, the arm holding, within
        reply_timeout_s of the tick (PolicyUnavailable when it is lost or later than that)."""
        c = self.config.control
        what = f"tick {step}"
        try:
            return self.policy.wait(c.command_timeout_s, self._lost_now, what)
        except PolicyUnavailable:
            if self._lost_now() or c.reply_timeout_s <= c.command_timeout_s:
                raise
        self.motion.hold()  # late: the arm stops, as DROID's does while its loop waits
        self.timer.late()
        left = c.reply_timeout_s - (self.clock() - tick_time)
        return self.policy.wait(max(left, 0.0), self._lost_now, what)

    def _wait_for_policy(self) -> Stop | None:
        c = self.config.control
        deadline = self.clock() + c.policy_ready_timeout_s
        last = 0.0
        while True:
            stop = self.checks(self.inputs(), self.fault)
            if stop is not None:
                return stop
            waiting = self.policy.ready()
            if waiting is None:
                return None
            if self.clock() > deadline:
                return Stop(
                    StopKind.SYSTEM, f"the policy was not ready within {c.policy_ready_timeout_s:g} s: {waiting}"
                )
            if self.clock() - last > 0.5:
                last = self.clock()
                self.feedback("waiting for the policy", 0)
            self.sleep(0.05)

    def run(self, max_steps: int) -> EpisodeEnd:
        c = self.config.control
        started = self.clock()
        self.timer = TickTimer()
        step, misses, last_refusal = 0, 0, ""
        stop = self._wait_for_policy()
        period = 1.0 / c.rate_hz
        next_tick = self.clock()
        last_feedback = 0.0
        while stop is None and step < max_steps:
            delay = next_tick - self.clock()
            if delay > 0:
                self.sleep(delay)
            now = self.inputs()
            self.timer.state_age(now.arm_age)
            stop = self.checks(now, self.fault)
            if stop is not None:
                break
            tick_time = self.clock()
            self.timer.tick(tick_time)
            self.policy.publish_tick(step)
            try:
                got = self._answer(step, tick_time)
                refused = next((v for v in got.values() if isinstance(v, Refusal)), None)
                if refused is not None:
                    raise RefusedCommand(f"the policy node sent none: {refused.reason}")
                v, g = check_command(
                    np.asarray(got["arm"]) / RAD_PER_S_AT_ONE, np.asarray(got["gripper"]) / GRIPPER_CLOSED_RAD
                )
                answered = self.clock()
                with self.motion.lock:  # an e-stop that came meanwhile wins: nothing more is sent
                    if self.inputs().estop:
                        stop = Stop(StopKind.SYSTEM, "operator e-stop")
                        break
                    self.motion.stream(v)
                    self.robot.gripper_command(self.motion.gate.gripper(g))
                self.timer.command(tick_time, answered, self.clock())
                misses = 0
            except (PolicyUnavailable, RefusedCommand) as exc:
                self.motion.hold()
                self.timer.miss(str(exc))
                misses += 1
                last_refusal = str(exc)
                if misses >= c.max_missed_ticks:
                    stop = Stop(StopKind.SYSTEM, f"no usable command for {misses} ticks in a row ({last_refusal})")
            except NoFreshState:
                pass  # the arm went stale since the check: the next tick's check says why
            step += 1
            # after a late reply the loop's clock starts again from it (DROID's blocking loop)
            next_tick = max(next_tick + period, self.clock())
            if self.clock() - last_feedback >= 0.5:
                last_feedback = self.clock()
                self.feedback("running", step)
        if stop is None:
            stop = Stop(StopKind.STEP_LIMIT, f"step limit {max_steps} reached")
        self.motion.hold()
        return EpisodeEnd(stop, step, self.clock() - started, self.timer.summary())
