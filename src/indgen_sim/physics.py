"""Physics checks that every MuJoCo world shares (the twin, LIBERO): how deep bodies
interpenetrate, whether bodies are at rest, and settle-then-check, so that "the object is
placed" always means "and it stays there for a moment"."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import mujoco
import numpy as np


def max_penetration(model: mujoco.MjModel, data: mujoco.MjData, bodies: Iterable[int] | None = None) -> float:
    """Deepest contact (m) involving `bodies` (all contacts when None)."""
    wanted = None if bodies is None else set(bodies)
    deepest = 0.0
    for i in range(data.ncon):
        c = data.contact[i]
        if wanted is not None and (
            model.geom_bodyid[c.geom1] not in wanted and model.geom_bodyid[c.geom2] not in wanted
        ):
            continue
        deepest = max(deepest, -float(c.dist))
    return deepest


def body_speeds(model: mujoco.MjModel, data: mujoco.MjData, bodies: Iterable[int]) -> np.ndarray:
    """(n, 2) linear (m/s) and angular (rad/s) speed of each body."""
    out = []
    vel = np.zeros(6)
    for b in bodies:
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, b, vel, 0)
        out.append((np.linalg.norm(vel[3:]), np.linalg.norm(vel[:3])))
    return np.array(out).reshape(-1, 2)


def at_rest(model, data, bodies: Iterable[int], linear: float = 0.01, angular: float = 0.1) -> bool:
    speeds = body_speeds(model, data, bodies)
    return bool(np.all(speeds[:, 0] < linear) and np.all(speeds[:, 1] < angular))


def in_contact(model: mujoco.MjModel, data: mujoco.MjData, body_a: Iterable[int], body_b: Iterable[int]) -> bool:
    a, b = set(body_a), set(body_b)
    for i in range(data.ncon):
        c = data.contact[i]
        ba, bb = model.geom_bodyid[c.geom1], model.geom_bodyid[c.geom2]
        if (ba in a and bb in b) or (ba in b and bb in a):
            return True
    return False


def settle_then_check(
    advance: Callable[[], None], check: Callable[[], bool], settle_ticks: int, hold_ticks: int
) -> bool:
    """Let the world run `settle_ticks` (nothing commanded), then require `check()` on each of
    `hold_ticks` further ticks: placed, and staying placed."""
    for _ in range(settle_ticks):
        advance()
    for _ in range(hold_ticks):
        advance()
        if not check():
            return False
    return True
