"""BlockEnv (paper Appendix A), batched in numpy.

A G x G occupancy grid: 0 empty, 1 distractor, 2 goal. Level k surrounds the goal with two
chains of k distractors; a grasp (r, c, theta) succeeds only when the cell is occupied and
neither neighbour along the approach axis is (theta 0: the cells above and below; theta 1:
left and right; cells outside the grid count as free). Grasping a distractor removes it;
grasping the goal ends the episode with success; the step limit ends it with failure.

The paper grows the chains "by alternating row and column offsets", with the flipped chain
"vice versa"; read literally (swap down and left) the two chains overlap at (1, -1). IndGen's
construction, relative to the goal at (0, 0) (rows grow downwards):
- the forward chain steps down on odd i and left on even i: (1,0), (1,-1), (2,-1), (2,-2), ...
- the flipped chain is its mirror image in the diagonal through the goal (row and column
  offsets swapped): right on odd i, up on even i: (0,1), (-1,1), (-1,2), (-2,2), ...
so each chain blocks one approach axis of the goal, every inner block is blocked on both
axes by its two neighbours, and only the two tips are graspable (tested at every level).
The whole structure is translated to a uniformly random position where it fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GRID = 16  # level 10 spans 11 x 11 cells: 6 x 6 = 36 placements at L10, 256 at L0
K_MAX = 10
EMPTY, DISTRACTOR, GOAL = 0, 1, 2
VERTICAL, HORIZONTAL = 0, 1  # theta: approach from top/bottom, from left/right


def step_limit(k: int) -> int:
    """Three times the oracle's k + 1 grasps, plus three: room to recover from a failed grasp,
    not for blind search (a grasp at an unseen offset is rare for a policy that never saw one)."""
    return 3 * (k + 1) + 3


def chains(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets from the goal of the forward and the flipped chain, goal-side first, (k, 2) each."""
    forward = np.zeros((k, 2), dtype=np.int64)
    r = c = 0
    for i in range(1, k + 1):
        if i % 2:
            r += 1
        else:
            c -= 1
        forward[i - 1] = (r, c)
    return forward, forward[:, ::-1].copy()


def tip_orientation(k_index: int, arm: int) -> int:
    """The approach that grasps the tip of a chain of length k_index (1-based): a tip reached by a
    row step is blocked vertically, so it is grasped horizontally, and vice versa."""
    reached_by_row = (k_index % 2 == 1) if arm == 0 else (k_index % 2 == 0)
    return HORIZONTAL if reached_by_row else VERTICAL


@dataclass(frozen=True)
class Layout:
    """Level k relative to the goal: every block offset, and the translation range."""

    k: int
    forward: np.ndarray
    flipped: np.ndarray
    r_range: tuple[int, int]  # goal row can be r_range[0] .. r_range[1]
    c_range: tuple[int, int]

    @staticmethod
    def of(k: int, grid: int = GRID) -> Layout:
        fwd, flp = chains(k)
        pts = np.vstack([[0, 0], fwd, flp])
        rmin, cmin = pts.min(0)
        rmax, cmax = pts.max(0)
        if rmax - rmin + 1 > grid or cmax - cmin + 1 > grid:
            raise ValueError(f"level {k} does not fit a {grid} x {grid} grid")
        return Layout(k, fwd, flp, (-rmin, grid - 1 - rmax), (-cmin, grid - 1 - cmax))


def seed_hash(seeds, stream: int) -> np.ndarray:
    """splitmix64 of (seed, stream): independent, reproducible uint64 draws for a whole batch of
    seeds at once (one numpy expression instead of one generator per episode)."""
    x = np.asarray(seeds, dtype=np.uint64) ^ np.uint64((stream * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniform_int(seeds, stream: int, low, high) -> np.ndarray:
    """Integers uniform in [low, high] (inclusive, per element) drawn from the seeds."""
    span = (np.asarray(high, dtype=np.int64) - np.asarray(low, dtype=np.int64) + 1).astype(np.uint64)
    return np.asarray(low, dtype=np.int64) + (seed_hash(seeds, stream) % span).astype(np.int64)


def placements(seeds, levels, grid: int = GRID) -> np.ndarray:
    """(n, 2) goal positions: uniform over the placements where the level's structure fits."""
    levels = np.asarray(levels, dtype=np.int64)
    ranges = np.array([[*Layout.of(int(k), grid).r_range, *Layout.of(int(k), grid).c_range] for k in range(K_MAX + 1)])[
        levels
    ]
    return np.stack(
        [uniform_int(seeds, 1, ranges[:, 0], ranges[:, 1]), uniform_int(seeds, 2, ranges[:, 2], ranges[:, 3])], axis=1
    )


def free_axes(grids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertical_free, horizontal_free), each (n, G, G) bool: both neighbours along the axis
    are empty (or outside the grid)."""
    occ = grids != EMPTY
    vblocked = np.zeros_like(occ)
    vblocked[:, 1:] = occ[:, :-1]
    vblocked[:, :-1] |= occ[:, 1:]
    hblocked = np.zeros_like(occ)
    hblocked[:, :, 1:] = occ[:, :, :-1]
    hblocked[:, :, :-1] |= occ[:, :, 1:]
    return ~vblocked, ~hblocked


def legal_grasps(grids: np.ndarray) -> np.ndarray:
    """(n, G, G, 2) bool: which (cell, theta) grasps would succeed on each grid."""
    vfree, hfree = free_axes(grids)
    occ = grids != EMPTY
    return np.stack([occ & vfree, occ & hfree], axis=-1)


_STEP_LIMITS = np.array([step_limit(k) for k in range(K_MAX + 1)], dtype=np.int64)


class BlockEnvBatch:
    """n independent BlockEnv episodes stepped together. Grids live in a padded int8 array so
    that neighbour look-ups need no bounds checks."""

    def __init__(self, n: int, grid: int = GRID):
        self.n, self.size = n, grid
        self._pad = np.zeros((n, grid + 2, grid + 2), dtype=np.int8)
        self.levels = np.zeros(n, dtype=np.int64)
        self.goal = np.zeros((n, 2), dtype=np.int64)
        self.steps = np.zeros(n, dtype=np.int64)
        self.max_steps = np.zeros(n, dtype=np.int64)
        self.done = np.ones(n, dtype=bool)
        self.success = np.zeros(n, dtype=bool)
        self.removed = np.zeros(n, dtype=np.int64)
        self._rows = np.arange(n)

    @property
    def grids(self) -> np.ndarray:
        """(n, G, G) int8 view of the current grids (0 empty, 1 distractor, 2 goal)."""
        return self._pad[:, 1:-1, 1:-1]

    def reset(self, levels, seeds, max_steps=None, which=None) -> np.ndarray:
        """Start new episodes at `levels` with `seeds` (arrays over the batch, or over `which`,
        the indices of the episodes to restart; by default all)."""
        idx = np.arange(self.n) if which is None else np.asarray(which, dtype=np.int64)
        levels = np.broadcast_to(np.asarray(levels, dtype=np.int64), idx.shape)
        seeds = np.broadcast_to(np.asarray(seeds, dtype=np.uint64), idx.shape)
        self._pad[idx] = EMPTY
        self.levels[idx] = levels
        self.goal[idx] = placements(seeds, levels, self.size)
        for k in np.unique(levels):
            sub = idx[levels == k]
            layout = Layout.of(int(k), self.size)
            blocks = np.vstack([layout.forward, layout.flipped])
            if len(blocks):
                rr = self.goal[sub, None, 0] + blocks[None, :, 0] + 1
                cc = self.goal[sub, None, 1] + blocks[None, :, 1] + 1
                self._pad[sub[:, None], rr, cc] = DISTRACTOR
        self._pad[idx, self.goal[idx, 0] + 1, self.goal[idx, 1] + 1] = GOAL
        self.steps[idx] = 0
        self.max_steps[idx] = _STEP_LIMITS[levels] if max_steps is None else max_steps
        self.done[idx] = False
        self.success[idx] = False
        self.removed[idx] = 0
        return self.grids

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Apply one grasp per running episode; returns which grasps succeeded. Finished
        episodes ignore their action."""
        actions = np.asarray(actions)
        r = np.clip(actions[:, 0], 0, self.size - 1) + 1
        c = np.clip(actions[:, 1], 0, self.size - 1) + 1
        theta = actions[:, 2]
        rows = self._rows
        cell = self._pad[rows, r, c]
        vertical = theta == VERTICAL
        n1 = np.where(vertical, self._pad[rows, r - 1, c], self._pad[rows, r, c - 1])
        n2 = np.where(vertical, self._pad[rows, r + 1, c], self._pad[rows, r, c + 1])
        ok = (cell != EMPTY) & (n1 == EMPTY) & (n2 == EMPTY) & ~self.done & (theta >= 0) & (theta <= 1)
        ok &= (actions[:, 0] >= 0) & (actions[:, 0] < self.size) & (actions[:, 1] >= 0) & (actions[:, 1] < self.size)
        hit_goal = ok & (cell == GOAL)
        remove = ok & (cell == DISTRACTOR)
        self._pad[rows[remove], r[remove], c[remove]] = EMPTY
        self.removed += remove
        running = ~self.done
        self.steps += running
        self.success |= hit_goal
        self.done |= hit_goal | (running & (self.steps >= self.max_steps))
        return ok
