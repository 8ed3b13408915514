"""The order trials run in, their seeds, and the optional adaptive stopping rule.

Seeds depend only on (campaign seed, level, trial index), not on the policy: every policy
sees the same setups (a paired comparison), and a resumed campaign the same ones again.
The interleaved order shuffles levels within each round of trials, so that drift over a
session (a warming motor, a tired operator, changing light) spreads over all levels instead
of masquerading as a level effect. The sequential order (level by level, nearest to tau_0
first) suits physical resets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from indgen_core import stats
from indgen_core.store import PlannedTrial

INTERLEAVED, SEQUENTIAL = "interleaved", "sequential"


def trial_seed(campaign_seed: int, level: int, index: int) -> int:
    """A 63-bit seed for (level, index), reproducible and independent across levels."""
    state = np.random.SeedSequence([campaign_seed & 0xFFFFFFFF, campaign_seed >> 32 & 0xFFFFFFFF,
                                    level + 1_000_000, index]).generate_state(2, np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def trial_id(policy: str, level: int, index: int) -> str:
    return f"{policy}/k{level:+d}/{index:03d}"


def make_plan(policies: Sequence[str], levels: Sequence[int], trials_per_level: int, seed: int,
              order: str = INTERLEAVED, distance: Mapping[int, int] | None = None,
              seeds: Sequence[int] | None = None) -> list[PlannedTrial]:
    """levels x trials x policies, in `order`. `seeds` (one per trial index) overrides the
    derived seeds, for evaluations that must reuse fixed seed lists."""
    if trials_per_level < 1:
        raise ValueError("trials_per_level must be at least 1")
    if seeds is not None and len(seeds) < trials_per_level:
        raise ValueError(f"{len(seeds)} seeds given for {trials_per_level} trials per level")
    distance = distance or {k: abs(k) for k in levels}

    def seed_of(level: int, i: int) -> int:
        return int(seeds[i]) if seeds is not None else trial_seed(seed, level, i)

    cells: list[tuple[int, int, str]] = []
    if order == SEQUENTIAL:
        for level in sorted(levels, key=lambda k: (distance[k], k)):
            for i in range(trials_per_level):
                cells += [(level, i, p) for p in policies]
    elif order == INTERLEAVED:
        rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 7]))
        for i in range(trials_per_level):
            round_cells = [(level, i, p) for level in levels for p in policies]
            cells += [round_cells[j] for j in rng.permutation(len(round_cells))]
    else:
        raise ValueError(f"unknown order '{order}'; expected {INTERLEAVED} or {SEQUENTIAL}")
    return [PlannedTrial(trial_id(p, level, i), p, level, i, seed_of(level, i), n)
            for n, (level, i, p) in enumerate(cells)]


@dataclass(frozen=True)
class AdaptiveRule:
    """Stop a level once its interval lies wholly above or below the threshold (after at
    least `min_trials`), and stop a side of the sweep after its first confirmed break."""

    threshold: float = stats.DEFAULT_THRESHOLD
    confidence: float = stats.DEFAULT_CONFIDENCE
    min_trials: int = 5

    def skip_reason(self, trial: PlannedTrial, done: Mapping[tuple[str, int], tuple[int, int]],
                    distance: Mapping[int, tuple[int, int]]) -> str | None:
        """Why `trial` need not run given `done[(policy, level)] = (n, successes)`, or None.
        `distance[k]` is (atomic steps from tau_0, side)."""
        n, s = done.get((trial.policy, trial.level), (0, 0))
        verdict = self._verdict(n, s)
        if verdict != stats.UNDECIDED:
            return f"level k={trial.level} already {verdict} after {n} trials"
        d, side = distance[trial.level]
        for (policy, level), (n2, s2) in done.items():
            d2, side2 = distance[level]
            if policy == trial.policy and side2 == side and side != 0 and d2 < d \
                    and self._verdict(n2, s2) == stats.BROKEN:
                return f"beyond the confirmed break at k={level}"
        return None

    def _verdict(self, n: int, s: int) -> str:
        if n < self.min_trials:
            return stats.UNDECIDED
        return stats.LevelStat(0, n, s, confidence=self.confidence, threshold=self.threshold).verdict
