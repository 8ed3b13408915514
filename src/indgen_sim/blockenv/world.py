"""BlockEnv behind the world interface (one episode at a time, for the sim bridge and the
in-process runner; the batched evaluation uses BlockEnvBatch directly, same code)."""

from __future__ import annotations

import numpy as np

from indgen_core.records import Outcome, TaskSetup
from indgen_core.world import Evaluation, StepResult, World
from indgen_sim.blockenv.env import DISTRACTOR, GRID, BlockEnvBatch, step_limit


def level_of(setup: TaskSetup) -> int:
    return round(setup.value("depth", float(setup.level)))


def evaluation(success: bool, steps: int, removed: int, k: int) -> Evaluation:
    """The verdict on one episode; the batched evaluation uses the same function."""
    details = {"removed": removed, "level": k}
    if success:
        return Evaluation(Outcome.SUCCESS, f"goal grasped after {steps} grasps", 1.0, details)
    return Evaluation(
        Outcome.FAILURE,
        f"goal not grasped; {removed} of {2 * k} distractors removed",
        min(removed, k) / (k + 1),
        details,
    )


class BlockEnvWorld(World):
    name = "blockenv"
    spec = "blockenv"
    control_dt = 0.1  # one grasp attempt per 0.1 s of simulated time

    def __init__(self, grid: int = GRID):
        self.env = BlockEnvBatch(1, grid)
        self.k = 0

    def max_steps(self, setup: TaskSetup) -> int:
        return setup.max_steps or step_limit(level_of(setup))

    def reset(self, setup: TaskSetup):
        self.k = level_of(setup)
        self.env.reset([self.k], [setup.seed], max_steps=[self.max_steps(setup)])
        return self._obs()

    def _obs(self):
        return {"grid": self.env.grids[0].copy(), "level": self.k}

    def step(self, action):
        self.env.step(np.array([[action["row"], action["col"], action["theta"]]], dtype=np.int64))
        return StepResult(self._obs(), done=bool(self.env.done[0]))

    def evaluate(self) -> Evaluation:
        return evaluation(bool(self.env.success[0]), int(self.env.steps[0]), int(self.env.removed[0]), self.k)

    def final_state(self) -> dict:
        """The final grid, the grasp count and whether the goal was grasped: BlockEnv decides a
        goal grasp when it is made (the goal stays in the grid), so that flag is recorded;
        the distractors removed (the partial score) are counted again from the grid."""
        e = self.env
        return {"k": self.k, "success": bool(e.success[0]), "steps": int(e.steps[0]), "grid": e.grids[0].tolist()}

    def restore(self, setup: TaskSetup, state: dict) -> None:
        self.reset(setup)
        e = self.env
        start = int((e.grids[0] == DISTRACTOR).sum())
        grid = np.asarray(state["grid"], dtype=e.grids.dtype)
        if grid.shape != e.grids[0].shape:
            raise ValueError(f"the recorded grid is {grid.shape}, this world's is {e.grids[0].shape}")
        e.grids[0] = grid
        e.success[0], e.steps[0] = bool(state["success"]), int(state["steps"])
        e.removed[0] = start - int((grid == DISTRACTOR).sum())

    def describe(self):
        return super().describe() | {"grid": self.env.size}
