"""The robot's state as its drivers report it, judged by the stamps the drivers put on it.

Why stamps, and why each driver's own topic: franka's joint_state_publisher merges the
broadcaster's joint states into /joint_states and republishes the last positions **and
velocities** with fresh stamps every 1/30 s whether or not its sources still talk
(joint_state_publisher `ros2`, joint_state_publisher.py timer_callback). After a reflex the
broadcaster stops (controller_manager deactivates it), so the merged topic shows a robot that
is fine and, if it stopped mid-motion, still moving. The runner therefore reads the arm only
from the broadcaster's own topic and the gripper from its driver's, and a sample counts only
while its header stamp is younger than the configured age.

Stamps are the robot computer's clock; ages are taken on this one. `ClockCheck` looks at the
first samples of a source: the smallest (arrival - stamp) is the clock offset plus the least
transport delay. Stamps from the future (beyond the tolerance) can only be a clock that runs
ahead; samples that all arrive later than the age limit mean every one would be judged stale,
a clock behind or a link that slow. Either way: synchronise the clocks (chrony or PTP).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sample:
    """Named joints of one message: positions, velocities (zeros where not given), the
    header stamp and the arrival time, both seconds on the wall clock."""

    q: np.ndarray
    dq: np.ndarray
    stamp: float
    received: float


class BadJointState(ValueError):
    """A joint state message that cannot be used (a joint missing, NaN, mismatched arrays)."""


def pick(
    names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], wanted: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The wanted joints' positions and velocities from a JointState's arrays, in `wanted`'s
    order whatever the message's; BadJointState when one is missing or not finite."""
    index = {n: i for i, n in enumerate(names)}
    missing = [n for n in wanted if n not in index]
    if missing:
        raise BadJointState(f"joint state lacks {', '.join(missing)}")
    if len(positions) != len(names) or (len(velocities) and len(velocities) != len(names)):
        raise BadJointState(
            f"joint state has {len(names)} names, {len(positions)} positions and {len(velocities)} velocities"
        )
    q = np.array([positions[index[n]] for n in wanted], dtype=np.float64)
    dq = np.array([velocities[index[n]] for n in wanted], dtype=np.float64) if len(velocities) else np.zeros(len(q))
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
        raise BadJointState("joint state is not finite")
    return q, dq


class ClockCheck:
    """Whether a remote clock agrees with this one, from the first `needed` samples."""

    def __init__(self, tolerance_s: float, needed: int = 20):
        self.tolerance_s = tolerance_s
        self.needed = needed
        self.offsets: list[float] = []

    def add(self, stamp: float, received: float) -> None:
        if len(self.offsets) < self.needed:
            self.offsets.append(received - stamp)

    @property
    def ready(self) -> bool:
        return len(self.offsets) >= self.needed

    @property
    def offset(self) -> float:
        """Seconds this clock is ahead of the stamps' (plus the least delay)."""
        return min(self.offsets) if self.offsets else 0.0

    def problem(self, source: str, max_age: float) -> str | None:
        """One sentence when the stamps cannot be judged on this clock, else None."""
        if not self.ready:
            return None
        offset = self.offset
        if offset < -self.tolerance_s:
            return (
                f"{source} is stamped {-offset:.3f} s ahead of this computer's clock: synchronise the clocks "
                "(chrony or PTP); every age check would be wrong by that much"
            )
        if offset > max_age:
            return (
                f"{source} arrives at least {offset:.3f} s after its stamps, more than its age limit "
                f"({max_age:g} s): the clocks disagree or the link is that slow; synchronise the clocks (chrony "
                "or PTP) before running"
            )
        return None


class StateSource:
    """The latest sample of one joint-state topic, its age by stamp, and the last second of
    samples (what the stop classification looks at)."""

    def __init__(
        self,
        name: str,
        joints: Sequence[str],
        max_age_s: float,
        clock_tolerance_s: float,
        clock: Callable[[], float] = time.time,
        keep_s: float = 1.0,
    ):
        self.name = name
        self.joints = list(joints)
        self.max_age_s = max_age_s
        self.clock = clock
        self.keep_s = keep_s
        self.check = ClockCheck(clock_tolerance_s)
        self._lock = threading.Lock()
        self._latest: Sample | None = None
        self._history: deque[Sample] = deque()
        self.received = 0

    def update(self, names, positions, velocities, stamp: float) -> Sample:
        """A message arrived; BadJointState when it cannot be used (it is then ignored)."""
        q, dq = pick(names, positions, velocities, self.joints)
        now = self.clock()
        sample = Sample(q, dq, float(stamp), now)
        with self._lock:
            if self._latest is not None and sample.stamp <= self._latest.stamp:
                return self._latest  # a repeat or an older message delivered late: nothing new
            self.check.add(sample.stamp, now)
            self._latest = sample
            self._history.append(sample)
            while self._history and self._history[0].stamp < sample.stamp - self.keep_s:
                self._history.popleft()
            self.received += 1
        return sample

    def latest(self) -> Sample | None:
        with self._lock:
            return self._latest

    def age(self, now: float | None = None) -> float:
        """Seconds since the latest sample's stamp (inf when none came)."""
        sample = self.latest()
        if sample is None:
            return float("inf")
        return (self.clock() if now is None else now) - sample.stamp

    def fresh(self, now: float | None = None) -> Sample | None:
        """The latest sample when it is younger than max_age_s, else None."""
        sample = self.latest()
        if sample is None or (self.clock() if now is None else now) - sample.stamp > self.max_age_s:
            return None
        return sample

    def history(self, since: float = -float("inf")) -> list[Sample]:
        with self._lock:
            return [s for s in self._history if s.stamp >= since]

    def forget(self) -> None:
        """A fault ended the source's stream: what it said before is history only."""
        with self._lock:
            self._history.clear()
