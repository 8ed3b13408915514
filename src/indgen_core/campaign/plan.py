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

from indgen_core.stats import break_search, level_stats, sequential
from indgen_core.store import PlannedTrial

#: level -> (atomic steps from tau_0, side: 0 in distribution, +1 / -1 beyond)
Places = Mapping[int, tuple[int, int]]
#: (policy, level) -> scored outcomes of the level's completed prefix, in trial order
Outcomes = Mapping[tuple[str, int], Sequence[bool]]
#: the trial to run next (None: none now), and the trials that need not run, with why
Choice = tuple[PlannedTrial | None, list[tuple[PlannedTrial, str]]]

INTERLEAVED, SEQUENTIAL = "interleaved", "sequential"


def trial_seed(campaign_seed: int, level: int, index: int) -> int:
    """A 63-bit seed for (level, index), reproducible and independent across levels."""
    state = np.random.SeedSequence(
        [campaign_seed & 0xFFFFFFFF, campaign_seed >> 32 & 0xFFFFFFFF, level + 1_000_000, index]
    ).generate_state(2, np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def trial_id(policy: str, level: int, index: int) -> str:
    return f"{policy}/k{level:+d}/{index:03d}"


def make_plan(
    policies: Sequence[str],
    levels: Sequence[int],
    trials_per_level: int,
    seed: int,
    order: str = INTERLEAVED,
    distance: Mapping[int, int] | None = None,
    seeds: Sequence[int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> list[PlannedTrial]:
    """levels x trials x policies, in `order`. `seeds` (one per trial index) overrides the
    derived seeds, for evaluations that must reuse fixed seed lists. `labels` (a blind
    campaign's policy -> letter) names the trials by letter and, in the sequential order, runs
    the policies of each round in an order fixed by the seed (the interleaved order shuffles
    every round anyway)."""
    if trials_per_level < 1:
        raise ValueError("trials_per_level must be at least 1")
    if seeds is not None and len(seeds) < trials_per_level:
        raise ValueError(f"{len(seeds)} seeds given for {trials_per_level} trials per level")
    distance = distance or {k: abs(k) for k in levels}

    def seed_of(level: int, i: int) -> int:
        return int(seeds[i]) if seeds is not None else trial_seed(seed, level, i)

    cells: list[tuple[int, int, str]] = []
    if order == SEQUENTIAL:
        rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 13]))
        for level in sorted(levels, key=lambda k: (distance[k], k)):
            for i in range(trials_per_level):
                round_policies = [policies[j] for j in rng.permutation(len(policies))] if labels else policies
                cells += [(level, i, p) for p in round_policies]
    elif order == INTERLEAVED:
        rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 7]))
        for i in range(trials_per_level):
            round_cells = [(level, i, p) for level in levels for p in policies]
            cells += [round_cells[j] for j in rng.permutation(len(round_cells))]
    else:
        raise ValueError(f"unknown order '{order}'; expected {INTERLEAVED} or {SEQUENTIAL}")
    labels = labels or {}
    return [
        PlannedTrial(trial_id(labels.get(p, p), level, i), p, level, i, seed_of(level, i), n)
        for n, (level, i, p) in enumerate(cells)
    ]


@dataclass(frozen=True)
class AdaptiveRule:
    """Stop a level once the sequential evidence shows it held or broken, and stop a side of
    the sweep after its first shown break.

    The evidence is the anytime-valid sequence of sequential.py: each claim errs at most
    (1 - confidence) / 2 however often it is looked at (a fixed-n interval re-checked after
    every trial would not: optional stopping calls a level at rate 0.15 "held" in 5.2% of runs,
    not 2.5%). It looks only at the longest completed prefix of
    each level's planned trials (`done`), so that trials finishing out of order (a success
    ends early, a failure runs to the step limit) never steer it."""

    threshold: float = level_stats.DEFAULT_THRESHOLD
    confidence: float = level_stats.DEFAULT_CONFIDENCE
    min_trials: int = 1

    def skip_reason(
        self,
        trial: PlannedTrial,
        done: Mapping[tuple[str, int], tuple[int, int]],
        distance: Mapping[int, tuple[int, int]],
    ) -> str | None:
        """Why `trial` need not run given `done[(policy, level)] = (n, successes)` over the
        level's completed prefix, or None. `distance[k]` is (atomic steps from tau_0, side)."""
        n, s = done.get((trial.policy, trial.level), (0, 0))
        verdict = self.verdict(n, s)
        if verdict != level_stats.UNDECIDED:
            return f"level k={trial.level} already {verdict} after {n} trials"
        d, side = distance[trial.level]
        for (policy, level), (n2, s2) in done.items():
            d2, side2 = distance[level]
            if (
                policy == trial.policy
                and side2 == side
                and side != 0
                and d2 < d
                and self.verdict(n2, s2) == level_stats.BROKEN
            ):
                return f"beyond the shown break at k={level}"
        return None

    def verdict(self, n: int, s: int) -> str:
        if n < self.min_trials:
            return level_stats.UNDECIDED
        return sequential.verdict(s, n, self.threshold, self.confidence)

    def choose(self, pending: Sequence[PlannedTrial], outcomes: Outcomes, places: Places) -> Choice:
        """The first pending trial (plan order) the rule does not skip, and those it skips."""
        done = {key: (len(v), sum(v)) for key, v in outcomes.items()}
        skips: list[tuple[PlannedTrial, str]] = []
        for trial in pending:
            reason = self.skip_reason(trial, done, places)
            if reason is None:
                return trial, skips
            skips.append((trial, reason))
        return None, skips


def chains(places: Places) -> dict[int, list[int]]:
    """Per side of the axis (+1 / -1), its levels from tau_0 outward: the in-distribution
    levels (in the order of k along that side), then the side's levels by distance."""
    inside = [k for k, (_, side) in places.items() if side == 0]
    out = {}
    for side in sorted({s for _, s in places.values() if s != 0}, reverse=True):
        outer = sorted((k for k, (_, s) in places.items() if s == side), key=lambda k: places[k][0])
        out[side] = sorted(inside, key=lambda k: k * side) + outer
    if not out and inside:  # only in-distribution levels: one chain
        out[1] = sorted(inside)
    return out


@dataclass(frozen=True)
class SideSearch:
    """One policy's break search along one side of the axis: the levels (tau_0 outward), the
    search over them, and the break set as levels (None: no level breaks)."""

    side: int
    chain: list[int]
    search: break_search.BreakSearch

    @property
    def found(self) -> break_search.BreakSet:
        return self.search.break_set()

    @property
    def levels(self) -> list[int | None]:
        return [self.chain[b] if b < len(self.chain) else None for b in self.found.candidates]

    def describe(self) -> str:
        found = self.found
        conf = f"{1 - found.alpha:.0%}"
        if found.contradicted:
            return (
                "the data contradict the assumption that success does not rise away from tau_0; "
                "the per-level sweep decides this side"
            )
        names = ["no break" if k is None else f"k={k}" for k in self.levels]
        where = names[0] if len(names) == 1 else " or ".join(names) if len(names) == 2 else f"{names[0]} .. {names[-1]}"
        state = "" if found.decided else " (not narrowed to two adjacent levels yet)"
        return f"breaks at {where}{state} ({conf}, assuming success does not rise away from tau_0)"


def side_searches(
    policy: str, outcomes: Outcomes, places: Places, threshold: float, confidence: float
) -> dict[int, SideSearch]:
    return {
        side: SideSearch(
            side,
            chain,
            break_search.BreakSearch.replay([outcomes.get((policy, k), []) for k in chain], threshold, confidence),
        )
        for side, chain in chains(places).items()
    }


@dataclass(frozen=True)
class BreakSearchRule:
    """Run each next trial where it narrows the set of levels the break may lie at
    (break_search.py), and stop a policy once every side's set holds one level or two adjacent
    ones (or no level with trials left can narrow it). Where the data contradict the monotone
    assumption, that policy falls back to the per-level sweep (AdaptiveRule). trials_per_level
    is the most any one level may take."""

    threshold: float = level_stats.DEFAULT_THRESHOLD
    confidence: float = level_stats.DEFAULT_CONFIDENCE

    def choose(self, pending: Sequence[PlannedTrial], outcomes: Outcomes, places: Places) -> Choice:
        sweep = AdaptiveRule(self.threshold, self.confidence)
        skips: list[tuple[PlannedTrial, str]] = []
        wanted: dict[str, set[int] | None] = {}  # policy -> levels to test next (None: sweep)
        for trial in pending:
            if trial.policy not in wanted:
                wanted[trial.policy] = self._wanted(trial.policy, pending, outcomes, places)
            levels = wanted[trial.policy]
            if levels is None:
                reason = sweep.skip_reason(trial, {k: (len(v), sum(v)) for k, v in outcomes.items()}, places)
                if reason is None:
                    return trial, skips
                skips.append((trial, reason))
            elif trial.level in levels:
                return trial, skips
            elif not levels:
                skips.append((trial, self._done_reason(trial.policy, outcomes, places)))
        return None, skips

    def _wanted(
        self, policy: str, pending: Sequence[PlannedTrial], outcomes: Outcomes, places: Places
    ) -> set[int] | None:
        room: dict[int, int] = {}
        for trial in pending:
            if trial.policy == policy:
                room[trial.level] = room.get(trial.level, 0) + 1
        levels = set()
        for side in side_searches(policy, outcomes, places, self.threshold, self.confidence).values():
            if side.found.contradicted:
                return None
            position = side.search.next_position([room.get(k, 0) for k in side.chain])
            if position is not None:
                levels.add(side.chain[position])
        return levels

    def _done_reason(self, policy: str, outcomes: Outcomes, places: Places) -> str:
        sides = side_searches(policy, outcomes, places, self.threshold, self.confidence)
        return "break search done: " + "; ".join(s.describe() for s in sides.values())
