"""Transformer baselines (A.1), one class with the paper's three variants:

- "transformer": causal encoder, learned absolute positions, post-norm (PyTorch's layer);
- "transformer_rope": rotary positions inside attention, pre-norm;
- "transformer_goal_action": RoPE + o_0 prepended as a goal token + the previous action
  (normalised to [0, 1]^3) appended to every observation token.
The full history is re-processed at every step and the action read from the last position.
"""

from __future__ import annotations

import torch
from torch import nn

from indgen_sim.blockenv.env import GRID
from indgen_sim.blockenv.models.base import BlockEnvModel
from indgen_sim.blockenv.models.common import CELLS, IndependentHeads, RopeBlock, mlp, obs_vector

MAX_LEN = 64


class TransformerPolicy(BlockEnvModel):
    name = "transformer"
    rope = False
    goal_action = False

    def __init__(self, d: int = 128, layers: int = 2, heads: int = 4, ff: int = 256):
        super().__init__(d=d, layers=layers, heads=heads, ff=ff)
        extra = 3 if self.goal_action else 0
        self.enc = mlp(CELLS + 1 + extra, d)
        if self.rope:
            self.blocks = nn.ModuleList(RopeBlock(d, heads, ff) for _ in range(layers))
            self.norm = nn.LayerNorm(d)
        else:
            self.pos = nn.Embedding(MAX_LEN, d)
            layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        if self.goal_action:
            self.goal_type = nn.Parameter(torch.zeros(d))
        self.heads = self.make_heads(d)

    def make_heads(self, d: int) -> nn.Module:
        return IndependentHeads(d)

    def tokens(self, grids: torch.Tensor, levels: torch.Tensor, prev: torch.Tensor | None) -> torch.Tensor:
        """(B, T, G, G) grids -> (B, T', d) tokens (T' = T + 1 with the goal token)."""
        b, t = grids.shape[:2]
        x = obs_vector(grids, levels[:, None].expand(b, t))
        if self.goal_action:
            assert prev is not None, "the goal/action model reads the previous actions"
            prev_norm = prev.float() / torch.tensor([GRID - 1, GRID - 1, 1.0])
            x = torch.cat([x, prev_norm], dim=-1)
        h = self.enc(x)
        if self.goal_action:
            goal = self.enc(torch.cat([obs_vector(grids[:, 0], levels), torch.zeros(b, 3)], dim=-1))
            h = torch.cat([(goal + self.goal_type)[:, None], h], dim=1)
        return h

    def body(self, h: torch.Tensor) -> torch.Tensor:
        if self.rope:
            for block in self.blocks:
                h = block(h)
            return self.norm(h)
        t = h.shape[1]
        h = h + self.pos(torch.arange(t))[None]
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.encoder(h, mask=mask, is_causal=True)

    def hidden(self, grids, levels, prev) -> torch.Tensor:
        h = self.body(self.tokens(grids, levels, prev))
        return h[:, 1:] if self.goal_action else h

    @staticmethod
    def shifted(actions: torch.Tensor) -> torch.Tensor:
        """The previous action at each step (zeros before the first)."""
        return torch.cat([torch.zeros_like(actions[:, :1]), actions[:, :-1]], dim=1)

    def head_loss(self, h, batch):
        mask = batch["mask"]
        logits = self.heads(h[mask])
        return IndependentHeads.loss(logits, batch["actions"][mask])

    def loss(self, batch):
        h = self.hidden(batch["grids"], batch["levels"], self.shifted(batch["actions"]))
        loss = self.head_loss(h, batch)
        return loss, {"loss": loss.item()}

    def start(self, n, levels):
        return {"levels": levels, "grids": [], "prev": []}

    def history_logits(self, state, grids, prev_actions):
        state["grids"].append(grids)
        state["prev"].append(torch.zeros(len(grids), 3, dtype=torch.long) if prev_actions is None else prev_actions)
        g = torch.stack(state["grids"], dim=1)
        p = torch.stack(state["prev"], dim=1)
        return self.hidden(g, state["levels"], p)[:, -1], g[:, -1]

    def logits(self, state, grids, prev_actions, step):
        h, _ = self.history_logits(state, grids, prev_actions)
        return self.heads(h)


class TransformerRoPEPolicy(TransformerPolicy):
    name = "transformer_rope"
    rope = True


class TransformerGoalActionPolicy(TransformerPolicy):
    name = "transformer_goal_action"
    rope = True
    goal_action = True
