"""The scripted oracle (paper A.1): pick one arm of the distractor structure at random, then
remove the tip-most removable block of that arm, inward, until the goal is graspable.

It reads only the observation (and the episode seed, which fixes its coin flip), so the same
code runs batched in-process and behind `indgen serve-policy blockenv_oracle`.
"""

from __future__ import annotations

import numpy as np

from indgen_sim.blockenv.env import DISTRACTOR, GOAL, HORIZONTAL, VERTICAL, free_axes, legal_grasps, seed_hash

RANDOM_LEGAL = "random_legal"
_RANDOM_STREAM = 7_000  # + step: the control's draws, disjoint from the reset's and the oracle's


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
    return np.stack(
        [
            np.where(goal_ok, goal_r, r),
            np.where(goal_ok, goal_c, c),
            np.where(goal_ok, np.where(goal_v, VERTICAL, HORIZONTAL), theta),
        ],
        axis=1,
    )


def random_legal_actions(grids: np.ndarray, seeds, step: int) -> np.ndarray:
    """The "random legal grasp" control: uniformly one of the grasps that would succeed
    (an occupied cell with both neighbours free along the approach axis), the draw fixed by
    (episode seed, step). It knows the paper's inductive rule exactly and nothing else, so
    its curve shows what legality alone achieves under the step limit 3(k + 1) + 3."""
    n, size, _ = grids.shape
    legal = legal_grasps(grids).reshape(n, -1)
    count = legal.sum(1)
    pick = (
        seed_hash(np.asarray(seeds, dtype=np.uint64), _RANDOM_STREAM + int(step))
        % np.maximum(count, 1).astype(np.uint64)
    ).astype(np.int64)
    # index of the pick-th legal grasp in each row
    flat = np.argmax(np.cumsum(legal, axis=1) > pick[:, None], axis=1)
    cell, theta = np.divmod(flat, 2)
    r, c = np.divmod(cell, size)
    return np.stack([r, c, theta], axis=1).astype(np.int64)
