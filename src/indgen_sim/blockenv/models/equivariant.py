"""IndGen's own variant ("going beyond" the paper): a translation-equivariant legality and
policy head.

Every cell is scored by the same small convolutional network from what lies around it (its
own content, and whether each approach axis is free, computed analytically from the grid),
so a pattern learned at one place and depth is recognised at every other. At inference,
grasps that the legality rule says are blocked are masked out. Memoryless: the rule "grasp
the goal if you can, else remove a graspable distractor" needs no history.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from indgen_sim.blockenv.env import free_axes
from indgen_sim.blockenv.models.base import BlockEnvModel
from indgen_sim.blockenv.models.common import joint_index


def cell_features(grids: torch.Tensor) -> torch.Tensor:
    """(N, G, G) -> (N, 5, G, G): distractor, goal, occupied, vertical axis free, horizontal axis free."""
    g = grids.cpu().numpy()
    vfree, hfree = free_axes(g)
    feats = np.stack([g == 1, g == 2, g != 0, vfree, hfree], axis=1).astype(np.float32)
    return torch.from_numpy(feats)


class EquivariantPolicy(BlockEnvModel):
    name = "equivariant"
    data = "steps"

    def __init__(self, channels: int = 32):
        super().__init__(channels=channels)
        self.net = nn.Sequential(
            nn.Conv2d(5, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 1),
            nn.ReLU(),
            nn.Conv2d(channels, 2, 1),
        )

    def scores(self, grids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feats = cell_features(grids)
        logits = self.net(feats).permute(0, 2, 3, 1).reshape(len(grids), -1)  # (N, G*G*2), theta last
        legal = torch.stack([feats[:, 2] * feats[:, 3], feats[:, 2] * feats[:, 4]], dim=-1).reshape(len(grids), -1)
        return logits, legal.bool()

    def loss(self, batch):
        logits, _ = self.scores(batch["grids"])
        loss = F.cross_entropy(logits, joint_index(batch["actions"]))
        return loss, {"loss": loss.item()}

    def logits(self, state, grids, prev_actions, step):
        logits, legal = self.scores(grids)
        return {"joint": logits.masked_fill(~legal, float("-inf"))}
