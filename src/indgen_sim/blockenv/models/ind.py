"""Ind (the paper's model, A.1): Transformer+RoPE with
- an auxiliary legality head: per-cell, per-orientation logits of "this grasp is unobstructed",
  trained on a target computed analytically from the current observation (the same rule at
  every level, no oracle information);
- a factored (r, c, theta) head that scores cells and orientations jointly (a linear read-out
  of the transformer's state).
At inference, unoccupied cells are masked to -inf and the legality head additively gates the
pick logits (its log-probability is added), so blocked grasps are structurally unlikely.

Which network computes the legality logits the paper leaves open; it says the head "learns the
local invariant grasping rule" (section 5.1). IndGen's `ind` reads each cell's logits from its
3 x 3 neighbourhood of occupancy in the current grid, with weights shared by every cell: the
receptive field the rule needs, and nothing that can memorise where blocks sat in the training
levels. It is still learned, from the analytic target, not given the rule.
`ind_linear` keeps the other reading, a linear read-out of the transformer's state, as an
ablation: it learns the rule on L0-L2 grids but, at L3, rates the inner blocks where the L2
tips used to be as graspable (docs/results/table1.md).

The legality loss covers the grasps on occupied cells (the only ones the gate is asked about)
and weights the legal ones up to balance the classes: unweighted, the linear head learned to
call every grasp blocked; over all 2 G^2 grasps, the empty cells swamped the loss and the local
head called every block graspable (both measured on held-out L0-L2 grids).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from indgen_sim.blockenv.env import EMPTY
from indgen_sim.blockenv.models.common import JOINT, joint_index, legality_target
from indgen_sim.blockenv.models.transformer import TransformerRoPEPolicy


class LocalLegality(nn.Module):
    """(N, G, G) grids -> (N, G*G*2) legality logits, each from the cell's 3 x 3 neighbourhood of
    occupancy. Occupancy is what "unobstructed" is about; fed distractor and goal as separate
    channels, the head learned that goals are blocked (they are, in most L1-L2 grids) and called
    the exposed goal blocked too (15% of held-out L0-L2 grids wrong). The zero padding reads as
    empty cells beyond the border, the environment's rule."""

    def __init__(self, channels: int = 16):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.Conv2d(channels, 2, 1))

    def forward(self, grids: torch.Tensor) -> torch.Tensor:
        x = (grids != EMPTY).float()[:, None]
        return self.net(x).permute(0, 2, 3, 1).reshape(len(grids), JOINT)  # theta last, as joint_index


class IndPolicy(TransformerRoPEPolicy):
    name = "ind"
    legality_weight = 1.0
    #: "local": shared 3 x 3 head on the current grid; "linear": read-out of the transformer state
    legality = "local"
    heads: nn.ModuleDict  # "pick" and "legal", from make_heads

    def make_heads(self, d: int) -> nn.ModuleDict:
        heads = nn.ModuleDict({"pick": nn.Linear(d, JOINT)})
        heads["legal"] = LocalLegality() if self.legality == "local" else nn.Linear(d, JOINT)
        return heads

    def param_groups(self, lr: float) -> list[dict]:
        """The local head is a few hundred weights shared by every cell, fed by its own loss: at
        the trunk's learning rate it sat at 0.15 held-out L0-L2 legality accuracy for 14 of the
        20 epochs (0.83 at epoch 17); ten times faster, it is at 1.0 from epoch 2."""
        if self.legality != "local":
            return super().param_groups(lr)
        legal = list(self.heads["legal"].parameters())
        ids = {id(p) for p in legal}
        return [
            {"params": [p for p in self.parameters() if id(p) not in ids], "lr": lr},
            {"params": legal, "lr": 10 * lr},
        ]

    def legality_logits(self, h: torch.Tensor, grids: torch.Tensor) -> torch.Tensor:
        return self.heads["legal"](grids if self.legality == "local" else h)

    def head_loss(self, h, batch):
        mask = batch["mask"]
        grids = batch["grids"]
        pick = F.cross_entropy(self.heads["pick"](h[mask]), joint_index(batch["actions"][mask]))
        # legality is learned on every observed grid (injected failures included, padding not),
        # on its occupied cells: empty ones are masked at inference, and as easy negatives they
        # swamped the loss (the local head then called every block graspable, even at L1). A
        # handful of the grasps are legal, so positives are weighted to balance the classes, never
        # down: an L0 batch (batches hold one level) has only legal grasps, and a weight of 0 there
        # hid every lone, exposed block from the head.
        present = grids.flatten(2).any(-1)
        seen = grids[present]
        occupied = (seen != 0).flatten(1).repeat_interleave(2, dim=1)
        target = legality_target(seen)[occupied]
        positives = target.sum().clamp_min(1)
        legal = F.binary_cross_entropy_with_logits(
            self.legality_logits(h[present], seen)[occupied],
            target,
            pos_weight=((target.numel() - positives) / positives).clamp_min(1),
        )
        return pick + self.legality_weight * legal

    def logits(self, state, grids, prev_actions, step):
        h, current = self.history_logits(state, grids, prev_actions)
        occupied = (current != 0).reshape(len(current), -1).repeat_interleave(2, dim=1)
        joint = self.heads["pick"](h) + F.logsigmoid(self.legality_logits(h, current))
        return {"joint": joint.masked_fill(~occupied, float("-inf"))}

    @torch.no_grad()
    def validation_metrics(self, data: dict[str, torch.Tensor]) -> dict[str, float]:
        """The share of held-out grids whose every grasp on an occupied cell the legality head
        calls right (p > 0.5): the head is checked on the training levels, where a badly
        balanced loss shows, not on the evaluation levels."""
        self.eval()
        grids = data["grids"]
        h = self.hidden(grids, data["levels"], self.shifted(data["actions"]))
        present = grids.flatten(2).any(-1)
        seen = grids[present]
        occupied = (seen != 0).flatten(1).repeat_interleave(2, dim=1)
        right = ((self.legality_logits(h[present], seen) > 0) == legality_target(seen).bool()) | ~occupied
        return {"legality_accuracy": float(right.all(1).float().mean())}

    @torch.no_grad()
    def legal_probability(self, grids: torch.Tensor) -> torch.Tensor:
        """The local legality head on single grids, without history (diagnostics, tests)."""
        if self.legality != "local":
            raise ValueError("the linear legality head needs the transformer's state")
        return torch.sigmoid(self.heads["legal"](grids))


class IndLinearPolicy(IndPolicy):
    name = "ind_linear"
    legality = "linear"
