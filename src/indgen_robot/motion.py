"""Every segment the runner sends the arm, re-based on the measured arm: the one place where
trajectories leave IndGen for the robot.

The runner keeps no model of where the controller's reference is. After a reflex, a failed
reset or an e-stop such a model is stale, and a hold or reset planned from it is a fast
segment back to where the arm was (or further into what it hit). Instead each segment starts
at the broadcaster's latest sample, which must be fresh (header stamp younger than
control.arm_state_max_age_s); with no fresh sample nothing is sent at all: the controller, if
it still runs, finishes its last segment (which ends at rest within max_lead: control.py), and
a faulted robot holds itself; a hold that could not be sent then is owed, and goes out as soon
as a fresh sample comes back (`hold_if_owed`), so that a controller which ran its last segment
against an obstacle while the state was away stops pushing. The segment last sent is kept as
the reference the controller follows (it starts from the measured state, as ros2_controllers'
JointTrajectoryController does), for the stop classification (safety.classify_fault) and for
tests.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from indgen_core.cell.trajectory import Point, Trajectory
from indgen_robot.arm_state import Sample, StateSource
from indgen_robot.control import CommandGate


class NoFreshState(RuntimeError):
    """The arm's state is stale: nothing may be planned from it."""


class ArmMotion:
    def __init__(
        self,
        gate: CommandGate,
        arm: StateSource,
        publish: Callable[[list[Point]], None],
        clock: Callable[[], float] = time.time,
    ):
        self.gate = gate
        self.arm = arm
        self._publish = publish
        self.clock = clock
        self.lock = threading.RLock()  # the loop and the e-stop (another thread) both send
        self.segment: Trajectory | None = None
        self.moving = False  # the last segment was a streamed motion (not a hold or a reset)
        #: the segments of the last second: (trajectory, whether it was a commanded motion)
        self.recent: deque[tuple[Trajectory, bool]] = deque()
        self.sent = 0
        #: a hold was asked for while the state was stale: it is sent when a fresh sample comes
        self.hold_owed = False
        #: (when, velocity) of the last streamed segment: the next one changes it by at most dv
        self._streamed: tuple[float, np.ndarray] | None = None

    def _base(self) -> tuple[Sample, np.ndarray, np.ndarray, float]:
        sample = self.arm.fresh()
        if sample is None:
            raise NoFreshState(f"the arm's state is {self.arm.age():.2f} s old")
        now = self.clock()
        ahead = float(np.clip(now - sample.stamp, 0.0, self.gate.extrapolation))
        return sample, sample.q + sample.dq * ahead, sample.dq, now

    def _send(self, points: list[Point], q0: np.ndarray, dq0: np.ndarray, now: float, moving: bool) -> None:
        self._publish(points)
        self._streamed = None  # a hold or a rest-to-rest segment: the next stream starts from the arm
        self.segment = Trajectory(now, q0, dq0, points)
        self.moving = moving
        self.hold_owed = False
        self.recent.append((self.segment, moving))
        while self.recent and self.recent[0][0].start_time < now - 1.0:
            self.recent.popleft()
        self.sent += 1

    def stream(self, velocity: np.ndarray) -> np.ndarray:
        """One tick of DROID velocity (checked) from the measured arm; the commanded velocity.
        NoFreshState when there is nothing to base it on (nothing is sent)."""
        return self.drive(np.asarray(velocity, float) * self.gate.droid_gain)

    def drive(self, want: np.ndarray) -> np.ndarray:
        """One tick at `want` rad/s from the measured arm (a policy's tick, a reset's); the
        commanded velocity. NoFreshState when there is nothing to base it on."""
        with self.lock:
            _, q, dq, now = self._base()
            streamed = self._streamed
            # the last streamed velocity while its segment still runs at it (within the look-ahead)
            previous = streamed[1] if streamed is not None and now - streamed[0] < self.gate.lookahead else None
            points, v = self.gate.segment(q, dq, want, previous)
            self._send(points, q, dq, now, moving=bool(np.any(np.abs(v) > 1e-6)))
            self._streamed = (now, v)
            return v

    def hold(self) -> bool:
        """Come to rest from the measured arm; False when the state is stale: nothing is sent
        then, and the hold is owed until a fresh sample comes (hold_if_owed)."""
        with self.lock:
            try:
                _, q, dq, now = self._base()
            except NoFreshState:
                self.hold_owed = True
                return False
            self._send(self.gate.hold(q, dq), q, dq, now, moving=False)
            return True

    def hold_if_owed(self) -> bool:
        """Send the hold that a stale state kept back, now that the state may be fresh again
        (called on every arm sample); True when it went out."""
        if not self.hold_owed:
            return False
        with self.lock:
            return self.hold_owed and self.hold()

    def move_to(self, goal: np.ndarray, max_speed: float) -> float:
        """One smooth segment from the measured arm to `goal` at rest; its duration.
        NoFreshState when there is nothing to base it on (nothing is sent)."""
        with self.lock:
            _, q, dq, now = self._base()
            points = self.gate.move_to(q, np.asarray(goal, float), max_speed)
            self._send(points, q, dq, now, moving=False)
            return points[-1].t

    def segments(self) -> list[tuple[Trajectory, bool]]:
        """The segments sent in the last second, oldest first (the stop classification)."""
        with self.lock:
            return list(self.recent)
