"""The scripted oracle (paper A.1): pick one arm of the distractor structure at random, then
remove the tip-most removable block of that arm, inward, until the goal is graspable.

It reads only the observation (and the episode seed, which fixes its coin flip), so the same
code runs batched in-process and behind `indgen serve-policy blockenv_oracle`.
"""

from __future__ import annotations

import numpy as np

from indgen_sim.blockenv.env import DISTRACTOR, GOAL, HORIZONTAL, VERTICAL, free_axes, seed_hash


def arm_choice(seeds) -> np.ndarray:
    """0: the forward arm (below the goal), 1: the flipped arm (right of and above it)."""
    return (seed_hash(np.atleast_1d(seeds), 3) & np.uint64(1)).astype(np.int64)


def oracle_actions(grids: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """(n, 3) actions (r, c, theta) for (n, G, G) grids."""
    n, size, _ = grids.shape
    rows = np.arange(n)
    vfree, hfree = free_axes(grids)
    goal_r, goal_c = np.divmod((grids == GOAL).reshape(n, -1).argmax(1), size)
    goal_v, goal_h = vfree[rows, goal_r, goal_c], hfree[rows, goal_r, goal_c]
    # removable distractors; the forward arm lies below the goal's row, the flipped arm in it and above
    removable = (grids == DISTRACTOR) & (vfree | hfree)
    below = np.arange(size)[None, :] > goal_r[:, None]
    on_arm = removable & np.where(arms[:, None] == 0, below, ~below)[:, :, None]
    flat = on_arm.reshape(n, -1)
    cell = np.where(flat.any(1), flat.argmax(1), removable.reshape(n, -1).argmax(1))
    r, c = np.divmod(cell, size)
    theta = np.where(vfree[rows, r, c], VERTICAL, HORIZONTAL)
    goal_ok = goal_v | goal_h
    return np.stack([np.where(goal_ok, goal_r, r), np.where(goal_ok, goal_c, c),
                     np.where(goal_ok, np.where(goal_v, VERTICAL, HORIZONTAL), theta)], axis=1)
