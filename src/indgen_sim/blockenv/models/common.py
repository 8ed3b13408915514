"""Pieces the BlockEnv baselines share: observation encoding, the action heads, pre-norm
RoPE attention, reproducible sampling, and the analytic legality target.

Action selection samples from the policy's distribution (temperature 1) with Gumbel noise
drawn from (episode seed, step): every run, batched or one episode at a time, draws the same.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from indgen_sim.blockenv.env import GRID, K_MAX, free_axes, seed_hash

CELLS = GRID * GRID
JOINT = CELLS * 2  # (row, col, theta) as one index: (row * G + col) * 2 + theta


def obs_vector(grids: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    """The baselines' input (paper A.1): the flattened grid (values 0, 1, 2) and the
    normalised goal scalar g = k / k_max."""
    flat = grids.reshape(*grids.shape[:-2], CELLS).float()
    g = (levels.float() / K_MAX).reshape(*levels.shape, *([1] * (flat.dim() - levels.dim())))
    return torch.cat([flat, g.expand(*flat.shape[:-1], 1)], dim=-1)


def mlp(d_in: int, d: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())


class IndependentHeads(nn.Module):
    """Three independent linear heads: rows, columns, orientations."""

    def __init__(self, d: int):
        super().__init__()
        self.row, self.col, self.theta = nn.Linear(d, GRID), nn.Linear(d, GRID), nn.Linear(d, 2)

    def forward(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"row": self.row(h), "col": self.col(h), "theta": self.theta(h)}

    @staticmethod
    def loss(logits: dict[str, torch.Tensor], actions: torch.Tensor) -> torch.Tensor:
        return (
            F.cross_entropy(logits["row"], actions[:, 0])
            + F.cross_entropy(logits["col"], actions[:, 1])
            + F.cross_entropy(logits["theta"], actions[:, 2])
        )


def joint_index(actions: torch.Tensor) -> torch.Tensor:
    return (actions[..., 0] * GRID + actions[..., 1]) * 2 + actions[..., 2]


def legality_target(grids: torch.Tensor) -> torch.Tensor:
    """(…, G, G) grids -> (…, G*G*2) float: 1 where the grasp is unobstructed (analytic, from the
    observation alone; the same rule at every level)."""
    shape = grids.shape
    g = grids.reshape(-1, GRID, GRID).cpu().numpy()
    vfree, hfree = free_axes(g)
    occ = g != 0
    legal = np.stack([occ & vfree, occ & hfree], axis=-1).reshape(*shape[:-2], JOINT)
    return torch.from_numpy(legal.astype(np.float32)).to(grids.device)


def rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on (B, H, T, Dh)."""
    half = x.shape[-1] // 2
    freq = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
    angles = positions.float()[:, None] * freq[None, :]  # (T, half)
    cos, sin = angles.cos()[None, None], angles.sin()[None, None]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class RopeBlock(nn.Module):
    """Pre-norm causal self-attention with rotary positions, then a feed-forward layer."""

    def __init__(self, d: int, heads: int, ff: int, dropout: float = 0.0):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
        self.dropout = dropout

    def forward(self, x: torch.Tensor, causal: bool = True) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        pos = torch.arange(t, device=x.device)
        q, k = rope(q, pos), rope(k, pos)
        att = F.scaled_dot_product_attention(
            q, k, v, is_causal=causal, dropout_p=self.dropout if self.training else 0.0
        )
        x = x + self.out(att.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.ln2(x))


def gumbel_noise(seeds: np.ndarray, step: int, stream: int, size: int) -> np.ndarray:
    """(n, size) Gumbel(0, 1) noise fixed by (seed, step, stream): a reproducible sample."""
    idx = np.arange(size, dtype=np.uint64)[None, :] + np.uint64((step * 64 + stream) << 20)
    with np.errstate(over="ignore"):
        bits = seed_hash(np.asarray(seeds, dtype=np.uint64)[:, None] * np.uint64(0x2545F4914F6CDD1D) + idx, 17)
    u = ((bits >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 2**53)
    return -np.log(-np.log(u))


def select_actions(logits: dict[str, torch.Tensor], seeds: np.ndarray, step: int, greedy: bool = False) -> np.ndarray:
    """(n, 3) actions from independent heads (row/col/theta) or a joint head (joint)."""

    def pick(name: str, stream: int) -> np.ndarray:
        lg = logits[name].detach().double().cpu().numpy()
        if not greedy:
            lg = lg + gumbel_noise(seeds, step, stream, lg.shape[-1])
        return lg.argmax(-1)

    if "joint" in logits:
        idx = pick("joint", 0)
        cell, theta = np.divmod(idx, 2)
        r, c = np.divmod(cell, GRID)
        return np.stack([r, c, theta], axis=1)
    return np.stack([pick("row", 1), pick("col", 2), pick("theta", 3)], axis=1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum().clamp_min(1)


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def init_seed(seed: int) -> None:
    torch.manual_seed(seed)
