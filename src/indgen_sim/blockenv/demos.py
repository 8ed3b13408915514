"""Oracle demonstrations at the training levels (L0-L2), cached on disk with their seeds.

Episode e at level k uses seed DEMO_SEED_BASE * (k + 1) + e: disjoint from the evaluation
seeds (EVAL_SEED_BASE + ...), so no evaluation episode is ever a training episode.

Recovery steps (DART-style noise injection): before each oracle grasp the demonstration
contains failed grasps at random blocked or empty cells, each with probability `noise` (so
0, 1, 2, ... of them, at most MAX_SLIPS in a row);
the grid does not change, the failed action is never a training target (`target` is False
there), but history-based models see what a repeated observation looks like and learn to act
on the grid rather than on the step count. Without them, an RNN that misses once at L1 reads
the unchanged grid as "step 2" and tries to grasp the still-blocked goal forever.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indgen_core import paths
from indgen_sim.blockenv.env import GRID, BlockEnvBatch, legal_grasps
from indgen_sim.blockenv.oracle import arm_choice, oracle_actions

DEMO_SEED_BASE = 1_000_000
MAX_SLIPS = 3
EVAL_SEED_BASE = 900_000_000


def eval_seeds(n: int) -> np.ndarray:
    """The fixed evaluation seeds: episode i of every level uses EVAL_SEED_BASE + i."""
    return EVAL_SEED_BASE + np.arange(n)


@dataclass
class Demos:
    """Padded episodes: grids (E, T, G, G) int8 (the observation before each action),
    actions (E, T, 3), target (E, T) bool (False: an injected failed grasp, not to be imitated),
    lengths (E,), levels (E,), seeds (E,)."""

    grids: np.ndarray
    actions: np.ndarray
    target: np.ndarray
    lengths: np.ndarray
    levels: np.ndarray
    seeds: np.ndarray

    def __len__(self) -> int:
        return len(self.lengths)

    def select(self, idx) -> Demos:
        return Demos(
            self.grids[idx], self.actions[idx], self.target[idx], self.lengths[idx], self.levels[idx], self.seeds[idx]
        )

    def steps(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every oracle (grid, action, level) step, flattened, for memoryless models."""
        mask = self.target & (np.arange(self.grids.shape[1])[None, :] < self.lengths[:, None])
        return self.grids[mask], self.actions[mask], np.broadcast_to(self.levels[:, None], mask.shape)[mask]


def _failed_grasps(grids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One grasp per grid that would fail (a blocked or empty cell), uniformly among those."""
    n, size, _ = grids.shape
    legal = legal_grasps(grids).reshape(n, -1)
    scores = rng.random(legal.shape)
    scores[legal] = -1.0
    cell, theta = np.divmod(scores.argmax(1), 2)
    r, c = np.divmod(cell, size)
    return np.stack([r, c, theta], axis=1)


def generate(levels, per_level: int, grid: int = GRID, seed_base: int = DEMO_SEED_BASE, noise: float = 0.0) -> Demos:
    chunks = []
    for k in levels:
        seeds = seed_base * (k + 1) + np.arange(per_level)
        rng = np.random.default_rng([seed_base, k, 7])
        env = BlockEnvBatch(per_level, grid)
        env.reset(k, seeds, max_steps=10**6)
        arms = arm_choice(seeds)
        t_max = (k + 1) * (1 + MAX_SLIPS) if noise > 0 else k + 1
        grids = np.zeros((per_level, t_max, grid, grid), dtype=np.int8)
        actions = np.zeros((per_level, t_max, 3), dtype=np.int64)
        target = np.zeros((per_level, t_max), dtype=bool)
        lengths = np.zeros(per_level, dtype=np.int64)
        rows = np.arange(per_level)
        for _ in range(k + 1):
            slipping = np.ones(per_level, dtype=bool)
            for _ in range(MAX_SLIPS if noise > 0 else 0):
                slipping &= rng.random(per_level) < noise
                idx = rows[slipping]
                grids[idx, lengths[idx]] = env.grids[idx]
                actions[idx, lengths[idx]] = _failed_grasps(env.grids[idx], rng)
                lengths[idx] += 1
            grids[rows, lengths] = env.grids
            act = oracle_actions(env.grids, arms)
            actions[rows, lengths] = act
            target[rows, lengths] = True
            lengths += 1
            env.step(act)
        if not env.success.all():
            raise RuntimeError(f"the oracle failed a demonstration at level {k}")
        used = int(lengths.max())
        chunks.append((grids[:, :used], actions[:, :used], target[:, :used], lengths, np.full(per_level, k), seeds))
    t_all = max(c[0].shape[1] for c in chunks)

    def pad(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a, np.zeros((a.shape[0], t_all - a.shape[1], *a.shape[2:]), a.dtype)], 1)

    def joined(i: int) -> np.ndarray:
        return np.concatenate([c[i] for c in chunks])

    def joined_padded(i: int) -> np.ndarray:
        return np.concatenate([pad(c[i]) for c in chunks])

    return Demos(
        grids=joined_padded(0),
        actions=joined_padded(1),
        target=joined_padded(2),
        lengths=joined(3),
        levels=joined(4),
        seeds=joined(5).astype(np.uint64),
    )


def cache_dir() -> Path:
    return paths.data_dir() / "blockenv"


FIELDS = ("grids", "actions", "target", "lengths", "levels", "seeds")


def load_or_generate(
    levels=(0, 1, 2), per_level: int = 3000, grid: int = GRID, noise: float = 0.0, directory: Path | None = None
) -> tuple[Demos, Path]:
    """The cached demonstrations (generated and saved on first use), and their file."""
    directory = Path(directory or cache_dir())
    path = directory / f"demos-g{grid}-L{'-'.join(map(str, levels))}-n{per_level}-noise{noise:g}-slips{MAX_SLIPS}.npz"
    if path.is_file():
        with np.load(path) as f:
            return Demos(*(f[k] for k in FIELDS)), path
    demos = generate(levels, per_level, grid, noise=noise)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(tmp, **{k: getattr(demos, k) for k in FIELDS})
    tmp.replace(path)
    return demos, path
