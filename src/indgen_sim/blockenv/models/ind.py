"""Ind (the paper's model, A.1): Transformer+RoPE with
- an auxiliary legality head: per-cell, per-orientation logits of "this grasp is unobstructed",
  trained on a target computed analytically from the current observation (the same rule at
  every level, no oracle information);
- a factored (r, c, theta) head that scores cells and orientations jointly.
At inference, unoccupied cells are masked to -inf and the legality head additively gates the
pick logits (its log-probability is added), so blocked grasps are structurally unlikely.

Legal grasps are a handful of the 2 G^2 (cell, orientation) pairs, so the legality loss
weights positives up to balance the classes; unweighted, the head learned to call every grasp
blocked (probability 0.03 on the legal ones, measured on held-out L0-L2 grids).
"""

from __future__ import annotations

from torch import nn
from torch.nn import functional as F

from indgen_sim.blockenv.models.common import JOINT, joint_index, legality_target
from indgen_sim.blockenv.models.transformer import TransformerRoPEPolicy


class IndHeads(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.pick = nn.Linear(d, JOINT)
        self.legal = nn.Linear(d, JOINT)

    def forward(self, h):
        return {"pick": self.pick(h), "legal": self.legal(h)}


class IndPolicy(TransformerRoPEPolicy):
    name = "ind"
    legality_weight = 1.0

    def make_heads(self, d: int) -> nn.Module:
        return IndHeads(d)

    def head_loss(self, h, batch):
        mask = batch["mask"]
        grids = batch["grids"]
        pick = F.cross_entropy(self.heads.pick(h[mask]), joint_index(batch["actions"][mask]))
        # legality is learned on every observed grid (injected failures included, padding not);
        # a handful of the 2 G^2 grasps are legal, so positives are weighted to balance the classes
        present = grids.flatten(2).any(-1)
        target = legality_target(grids[present])
        positives = target.sum().clamp_min(1)
        legal = F.binary_cross_entropy_with_logits(self.heads.legal(h[present]), target,
                                                   pos_weight=(target.numel() - positives) / positives)
        return pick + self.legality_weight * legal

    def logits(self, state, grids, prev_actions, step):
        h, current = self.history_logits(state, grids, prev_actions)
        out = self.heads(h)
        occupied = (current != 0).reshape(len(current), -1).repeat_interleave(2, dim=1)
        joint = out["pick"] + F.logsigmoid(out["legal"])
        return {"joint": joint.masked_fill(~occupied, float("-inf"))}
