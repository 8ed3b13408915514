"""A policy of your own for BlockEnv (docs/guides/own-policy.md): grasp the goal block along
the axis whose two neighbours are free. It reads only `observation/grid` and answers one grasp
(row, col, theta) per request, the BlockEnv spec's reply. It solves tau_0, where the goal
stands alone, and breaks as soon as one chain of blocks touches it: the rule it learned is not
the inductive one (clear the chain first)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from indgen_core.policy import Policy

GOAL = 2  # the grid's cell values: 0 empty, 1 a distractor block, 2 the goal block


class GoalGrasper(Policy):
    metadata: Mapping[str, Any] = {"policy": "goal_grasper", "spec": "blockenv"}

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        grid = np.asarray(obs["observation/grid"])
        row, col = (int(v) for v in np.argwhere(grid == GOAL)[0])
        above = row == 0 or grid[row - 1, col] == 0
        below = row == grid.shape[0] - 1 or grid[row + 1, col] == 0
        theta = 0 if above and below else 1  # 0: from top/bottom, 1: from left/right
        return {"actions": np.array([[row, col, theta]], dtype=np.int64)}
