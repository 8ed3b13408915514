"""TRM baseline (A.1): a Tiny Recursive Model that treats each single-step grid as a puzzle.

Two latent tensors over the cells, y (the current answer) and z (the reasoning state):
z <- f(z, x + y) for L cycles, then y <- f(y, z); this is repeated for T - 1 outer cycles
without gradients and one with gradients (deep recursion). Deep supervision carries (y, z)
over several supervision steps, each with its own loss; a halting head (adaptive computation
time, trained on whether the current answer is right) decides at run time how many steps to
take. The action is read from the output grid: every cell is classified as no-action, grasp
vertically or grasp horizontally, and the cell marked most strongly with an action wins.
f is a tiny MLP-mixer over the G x G cells (the TRM choice for fixed-size grids).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from indgen_sim.blockenv.models.base import BlockEnvModel
from indgen_sim.blockenv.models.common import CELLS, joint_index


class Mixer(nn.Module):
    def __init__(self, d: int, tokens: int, hidden: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.token = nn.Sequential(nn.Linear(tokens, hidden), nn.GELU(), nn.Linear(hidden, tokens))
        self.channel = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        # post-norm, as in TRM: the recursion applies f many times, so every output is normalised
        x = self.ln1(x + self.token(x.transpose(1, 2)).transpose(1, 2))
        return self.ln2(x + self.channel(x))


class TRMPolicy(BlockEnvModel):
    name = "trm"
    data = "steps"

    def __init__(
        self,
        d: int = 32,
        token_hidden: int = CELLS,
        inner_cycles: int = 2,
        outer_cycles: int = 2,
        supervision_steps: int = 2,
        max_inference_steps: int = 4,
    ):
        super().__init__(
            d=d,
            token_hidden=token_hidden,
            inner_cycles=inner_cycles,
            outer_cycles=outer_cycles,
            supervision_steps=supervision_steps,
            max_inference_steps=max_inference_steps,
        )
        self.embed = nn.Embedding(3, d)
        self.pos = nn.Parameter(torch.randn(CELLS, d) * 0.02)
        self.y0 = nn.Parameter(torch.zeros(d))
        self.z0 = nn.Parameter(torch.zeros(d))
        self.f = Mixer(d, CELLS, token_hidden)
        self.out = nn.Linear(d, 3)
        self.halt = nn.Linear(d, 1)

    def latent_recursion(self, x, y, z):
        for _ in range(self.config["inner_cycles"]):
            z = self.f(z + x + y)
        return self.f(y + z), z

    def deep_recursion(self, x, y, z):
        with torch.no_grad():
            for _ in range(self.config["outer_cycles"] - 1):
                y, z = self.latent_recursion(x, y, z)
        y, z = self.latent_recursion(x, y, z)
        return y, z, self.out(y), self.halt(y.mean(1)).squeeze(-1)

    def init(self, grids):
        x = self.embed(grids.reshape(len(grids), CELLS).long()) + self.pos
        y = self.y0.expand_as(x).contiguous()
        z = self.z0.expand_as(x).contiguous()
        return x, y, z

    @staticmethod
    def action_scores(cells: torch.Tensor) -> torch.Tensor:
        """(N, G*G, 3) cell classes -> (N, G*G*2) scores of (cell, theta) carrying the action token."""
        return (cells[..., 1:] - cells[..., :1]).reshape(len(cells), -1)

    def loss(self, batch):
        x, y, z = self.init(batch["grids"])
        target_joint = joint_index(batch["actions"])
        cell_target = torch.zeros(len(x), CELLS, dtype=torch.long)
        cell_target[torch.arange(len(x)), target_joint // 2] = target_joint % 2 + 1
        total = 0.0
        for _ in range(self.config["supervision_steps"]):
            y, z, cells, q = self.deep_recursion(x, y, z)
            scores = self.action_scores(cells)
            correct = (scores.argmax(-1) == target_joint).float()
            step_loss = (
                F.cross_entropy(cells.reshape(-1, 3), cell_target.reshape(-1))
                + F.cross_entropy(scores, target_joint)
                + F.binary_cross_entropy_with_logits(q, correct)
            )
            total = total + step_loss
            y, z = y.detach(), z.detach()
        loss = total / self.config["supervision_steps"]
        return loss, {"loss": loss.item()}

    def logits(self, state, grids, prev_actions, step):
        x, y, z = self.init(grids)
        halted = torch.zeros(len(x), dtype=torch.bool)
        scores = torch.zeros(len(x), CELLS * 2)
        for _ in range(self.config["max_inference_steps"]):
            y, z, cells, q = self.deep_recursion(x, y, z)
            new = self.action_scores(cells)
            scores = torch.where(halted[:, None], scores, new)
            halted |= torch.sigmoid(q) > 0.5
            if halted.all():
                break
        return {"joint": scores}
