"""Joint trajectories as ros2_controllers' JointTrajectoryController interpolates them: from
the state the controller is in when a trajectory arrives, through each point, piecewise
cubic where a point gives positions and velocities (linear where it gives positions only),
holding the last point's position after the end.

Both sides of the real robot's arm interface use it: the FR3 runner, to know where the
controller's reference is when it plans the next segment; the hardware stand-in, to be the
controller. ROS-free, so either side imports it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

#: (c0, c1, c2, c3) of one segment's polynomial in s
_Coefficients = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Point:
    """One trajectory point: `t` seconds after the trajectory starts."""

    t: float
    positions: np.ndarray
    velocities: np.ndarray | None = None


class Trajectory:
    def __init__(self, start_time: float, q0: np.ndarray, dq0: np.ndarray, points: list[Point]):
        if not points:
            raise ValueError("a trajectory needs at least one point")
        times = [0.0, *(float(p.t) for p in points)]
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise ValueError(f"point times must increase from 0, got {times[1:]}")
        self.start_time = float(start_time)
        self.times = np.array(times)
        self.q = np.vstack([np.asarray(q0, float), *(np.asarray(p.positions, float) for p in points)])
        cubic = [p.velocities is not None for p in points]
        self.dq = np.vstack(
            [
                np.asarray(dq0, float),
                *(
                    np.asarray(p.velocities, float) if p.velocities is not None else np.zeros_like(self.q[0])
                    for p in points
                ),
            ]
        )
        self.cubic = np.array(cubic)
        self._coefficients: list[_Coefficients | None] = [None] * len(points)

    @classmethod
    def at_rest(cls, now: float, q: np.ndarray) -> Trajectory:
        q = np.asarray(q, float)
        return cls(now, q, np.zeros_like(q), [Point(1e-3, q, np.zeros_like(q))])

    @property
    def end_time(self) -> float:
        return self.start_time + float(self.times[-1])

    @property
    def final(self) -> np.ndarray:
        return self.q[-1].copy()

    def _segment(self, i: int) -> _Coefficients:
        """Coefficients (c0, c1, c2, c3) of segment i's polynomial in s, computed once: a
        controller model samples the same segment hundreds of times."""
        coefficients = self._coefficients[i]
        if coefficients is None:
            h = self.times[i + 1] - self.times[i]
            q0, q1 = self.q[i], self.q[i + 1]
            if not self.cubic[i]:
                zero = np.zeros_like(q0)
                coefficients = (q0, (q1 - q0) / h, zero, zero)
            else:
                v0, v1 = self.dq[i], self.dq[i + 1]
                coefficients = (
                    q0,
                    v0,
                    (3 * (q1 - q0) - (2 * v0 + v1) * h) / h**2,
                    (2 * (q0 - q1) + (v0 + v1) * h) / h**3,
                )
            self._coefficients[i] = coefficients
        return coefficients

    def sample(self, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Reference (position, velocity, acceleration) at wall time `now`."""
        t = now - self.start_time
        if t <= 0:
            return self.q[0].copy(), self.dq[0].copy(), np.zeros_like(self.q[0])
        if t >= self.times[-1]:
            return self.q[-1].copy(), np.zeros_like(self.q[0]), np.zeros_like(self.q[0])
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        s = t - self.times[i]
        c0, c1, c2, c3 = self._segment(i)
        return c0 + s * (c1 + s * (c2 + s * c3)), c1 + s * (2 * c2 + 3 * s * c3), 2 * c2 + 6 * c3 * s
