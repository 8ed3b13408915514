"""What every BlockEnv model provides, so one trainer, one evaluator and one policy server
serve them all:

- `loss(batch)`: the behaviour-cloning loss on a batch of demonstration episodes;
- `start(n, levels)`: fresh per-episode state for n episodes (history, hidden state);
- `logits(state, grids, prev_actions, step)`: action logits for the current step, which the
  actor turns into actions (reproducible sampling, see common.select_actions).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from indgen_sim.blockenv.models.common import select_actions


class BlockEnvModel(nn.Module):
    name: ClassVar[str] = "model"
    #: "episodes": trained on padded episodes; "steps": on independent steps (memoryless)
    data: ClassVar[str] = "episodes"

    def __init__(self, **config: Any):
        super().__init__()
        self.config = config

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        raise NotImplementedError

    def start(self, n: int, levels: torch.Tensor) -> dict[str, Any]:
        return {"levels": levels}

    def logits(
        self, state: dict[str, Any], grids: torch.Tensor, prev_actions: torch.Tensor | None, step: int
    ) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def param_groups(self, lr: float) -> list[dict[str, Any]]:
        """Optimiser parameter groups (one, at the configured learning rate, unless a model
        has a part that needs its own)."""
        return [{"params": list(self.parameters()), "lr": lr}]

    def validation_metrics(self, data: dict[str, torch.Tensor]) -> dict[str, float]:
        """Extra figures on held-out training-level data, logged per epoch (never used to pick)."""
        return {}

    def adapt(self, support) -> BlockEnvModel:
        """A copy adapted to a level before rollout (only MAML does anything here)."""
        return self


class Actor:
    """Runs a model for n episodes in lock-step: one call per control step."""

    def __init__(self, model: BlockEnvModel, levels, seeds, greedy: bool = False):
        self.model = model.eval()
        self.seeds = np.asarray(seeds, dtype=np.uint64)
        self.levels = torch.as_tensor(np.asarray(levels), dtype=torch.long)
        self.state = model.start(len(self.seeds), self.levels)
        self.prev: torch.Tensor | None = None
        self.greedy = greedy

    @torch.no_grad()
    def act(self, grids: np.ndarray, step: int) -> np.ndarray:
        g = torch.as_tensor(np.asarray(grids, dtype=np.int64))
        logits = self.model.logits(self.state, g, self.prev, step)
        actions = select_actions(logits, self.seeds, step, self.greedy)
        self.prev = torch.as_tensor(actions, dtype=torch.long)
        return actions
