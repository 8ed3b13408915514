"""Statistics of a campaign's levels, from maintained libraries (statsmodels, scipy) and the
anytime-valid sequence of `sequential.py`.

- per-level success with an interval that says what it guarantees: for a campaign whose n was
  fixed in advance and is reported once, the exact Clopper-Pearson interval (statsmodels
  `proportion_confint(method="beta")`: at least 95% coverage at every n and rate, where
  Wilson's falls to about 90% at n = 10 for a rate of 0.01); for a level decided by the
  sequential rule, or any view looked at while trials still come in, the confidence sequence
  (valid at every n at once);
- each level's verdict: held (the rate is shown at or above the threshold), broken (shown
  below it) or undecided, each claim at 2.5% (exact binomial tests for a fixed n, the
  sequence's evidence otherwise);
- the break level: the paper's point estimate (the first level, walking away from the
  in-distribution levels, whose rate is below the threshold; k*, the last level before it),
  and the claims with a family-wise guarantee (`guarantee`): "held at every level through
  k*", by fixed-sequence testing outward from tau_0, and "broken at k", the next level, as its
  own test;
- monotonicity across levels (Appendix B, black-box regime).

Comparisons of policies live in comparisons.py.

scipy.stats and statsmodels are imported inside the functions that use them, here and in
sequential.py, planner.py and comparisons.py: every node and command imports these modules
(the records name their verdicts), and importing those two libraries costs about a second of
CPU per process start, paid again by every node a graph starts or respawns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from indgen_core.stats import sequential
from indgen_core.stats.sequential import BROKEN, DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD, HELD, UNDECIDED

EXACT = "exact (Clopper-Pearson), n fixed in advance"
SEQUENCE = "confidence sequence (Robbins' mixture), valid at every n"


def exact_interval(successes: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson interval of successes / n (each tail at (1 - confidence) / 2); (0, 1)
    with no trials."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return 0.0, 1.0
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="beta")
    return max(0.0, float(low)), min(1.0, float(high))


def exact_p(successes: int, n: int, p0: float, side: str) -> float:
    """One-sided exact binomial p-value for "the rate is above p0" (UPPER: P(S >= s | p0)) or
    "below p0" (LOWER: P(S <= s | p0))."""
    from scipy import stats as _sps

    if side == sequential.UPPER:
        return float(_sps.binom.sf(successes - 1, n, p0))
    return float(_sps.binom.cdf(successes, n, p0))


def shows(successes: int, n: int, threshold: float, side: str, alpha: float, anytime: bool) -> bool:
    """Whether the level's trials show its rate above (UPPER) or below (LOWER) the threshold
    at `alpha`: an exact test for a fixed n, the sequence's evidence when n was not fixed."""
    if n == 0:
        return False
    if anytime:
        return sequential.claims(successes, n, threshold, side, alpha)
    return exact_p(successes, n, threshold, side) <= alpha


@dataclass(frozen=True)
class LevelStat:
    level: int
    n: int
    successes: int
    invalid: int = 0
    in_distribution: bool = False
    distance: int = 0
    side: int = 0
    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_THRESHOLD
    #: the level's n was not fixed in advance (the sequential rule decided it) or the numbers are
    #: looked at while trials still come in: the confidence sequence, not a fixed-n interval
    anytime: bool = False

    @property
    def rate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        if self.anytime:
            return sequential.confidence_sequence(self.successes, self.n, self.confidence)
        return exact_interval(self.successes, self.n, self.confidence)

    @property
    def interval_kind(self) -> str:
        return SEQUENCE if self.anytime else EXACT

    @property
    def verdict(self) -> str:
        """held / broken when the trials show the rate above / below the threshold, each claim
        at (1 - confidence) / 2."""
        alpha = (1 - self.confidence) / 2
        if shows(self.successes, self.n, self.threshold, sequential.UPPER, alpha, self.anytime):
            return HELD
        if shows(self.successes, self.n, self.threshold, sequential.LOWER, alpha, self.anytime):
            return BROKEN
        return UNDECIDED


def _sides(levels: Sequence[LevelStat]) -> dict[int, list[LevelStat]]:
    """Levels away from the in-distribution ones, per side (+1 / -1), nearest first."""
    out: dict[int, list[LevelStat]] = {}
    for s in sorted(levels, key=lambda s: s.distance):
        if s.side != 0 and s.n > 0:
            out.setdefault(s.side, []).append(s)
    return out


@dataclass(frozen=True)
class BreakReport:
    """Per side of the axis: the break level (point / conservative) and k* (last level held)."""

    point: dict[int, int | None]
    conservative: dict[int, int | None]
    k_star: dict[int, int | None]
    threshold: float

    def describe(self, side: int) -> str:
        point = self.point.get(side)
        return "held to the last level" if point is None else f"breaks at k={point}"


def break_levels(levels: Sequence[LevelStat], threshold: float = DEFAULT_THRESHOLD) -> BreakReport:
    """The first level below `threshold` on each side, and the last level held before it.

    Each side is walked from the in-distribution levels outward (in-distribution levels
    first, in the order of k along that side), so a policy that already fails in distribution
    breaks there. Point: the first level whose success rate is below the threshold (the
    paper's "breaks at"). Conservative: the first level whose whole interval lies below it. k*:
    the last level before the point break (None when the very first level breaks; the last
    tested level when nothing breaks). These are estimates; `guarantee` makes the claims that
    come with a stated error.
    """
    point: dict[int, int | None] = {}
    conservative: dict[int, int | None] = {}
    k_star: dict[int, int | None] = {}
    ids = [s for s in levels if s.side == 0 and s.n > 0]
    for side, outer in _sides(levels).items():
        chain = sorted(ids, key=lambda s: s.level * side) + outer
        point[side] = next((s.level for s in chain if s.rate < threshold), None)
        conservative[side] = next((s.level for s in chain if s.interval[1] < threshold), None)
        held = None
        for s in chain:
            if s.rate < threshold:
                break
            held = s.level
        k_star[side] = held
    return BreakReport(point, conservative, k_star, threshold)


@dataclass(frozen=True)
class SideGuarantee:
    """One side of an axis, claims that hold together with probability 1 - 2 x alpha_each."""

    side: int
    held_through: int | None  # k*: every level from tau_0 out to it shown held (None: not even tau_0)
    broken_at: int | None  # the next level, shown broken by its own test (None: not shown)
    next_level: int | None  # the first level not shown held (not called broken unless broken_at says so)
    alpha_each: float

    def describe(self) -> str:
        conf = 1 - 2 * self.alpha_each
        held = (
            f"held at every level through k={self.held_through}"
            if self.held_through is not None
            else "not shown held even in distribution"
        )
        if self.broken_at is not None:
            broken = f"broken at k={self.broken_at}"
        elif self.next_level is not None:
            broken = f"k={self.next_level} not shown held, nor broken"
        else:
            broken = "no level left untested beyond it"
        return f"{held}; {broken} ({conf:.0%} for both claims on this side)"


def guarantee(
    levels: Sequence[LevelStat], threshold: float = DEFAULT_THRESHOLD, confidence: float = DEFAULT_CONFIDENCE
) -> dict[int, SideGuarantee]:
    """Per side of the axis, "held at every level through k*" and "broken at k", with a
    family-wise guarantee: alpha = 1 - confidence is split between the two claims (alpha/2
    each). Held: fixed-sequence testing (Maurer, Hothorn and Lehmacher 1995) from the
    in-distribution levels outward, each level's "at or above the threshold" at alpha/2,
    stopping at the first level not shown held; testing in a fixed order at the full alpha/2
    keeps the chance of any false "held" at alpha/2. Broken: that first level's own test of
    "below the threshold" at alpha/2; the first level not shown held is not called broken
    otherwise. Each side's pair of claims holds at `confidence`; on a two-sided axis both sides
    at once hold at 1 - 2 x alpha (the union bound), said as such."""
    alpha_each = (1 - confidence) / 2
    ids = [s for s in levels if s.side == 0 and s.n > 0]
    out = {}
    for side, outer in _sides(levels).items():
        chain = sorted(ids, key=lambda s: s.level * side) + outer
        held, next_level = None, None
        for s in chain:
            if shows(s.successes, s.n, threshold, sequential.UPPER, alpha_each, s.anytime):
                held = s.level
                continue
            next_level = s
            break
        broken = None
        if next_level is not None and shows(
            next_level.successes, next_level.n, threshold, sequential.LOWER, alpha_each, next_level.anytime
        ):
            broken = next_level.level
        out[side] = SideGuarantee(side, held, broken, next_level.level if next_level is not None else None, alpha_each)
    return out


@dataclass(frozen=True)
class Reversal:
    """Success went up one step further out: level `outer` beat level `inner`."""

    inner: int
    outer: int
    p_value: float  # one-sided Fisher: is the outer level really better?

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


@dataclass(frozen=True)
class Monotonicity:
    """Appendix B: in the black-box regime the progression is validated post hoc by
    success decreasing as the task moves away from tau_0."""

    reversals: tuple[Reversal, ...]
    tau: float  # Kendall tau between distance and success over all scored trials
    p_value: float  # one-sided: success decreases with distance
    per_side: dict[int, bool] = field(default_factory=dict)

    @property
    def monotone(self) -> bool:
        """No reversal that is significant, and an overall downward trend (or nothing to test)."""
        return not any(r.significant for r in self.reversals)

    @property
    def strictly_monotone(self) -> bool:
        return not self.reversals

    def describe(self) -> str:
        if self.strictly_monotone:
            trend = "non-increasing away from tau_0"
        elif self.monotone:
            trend = f"{len(self.reversals)} reversal(s), none significant"
        else:
            bad = [f"k={r.outer} > k={r.inner} (p={r.p_value:.3f})" for r in self.reversals if r.significant]
            trend = "significant reversal: " + ", ".join(bad)
        tau = "" if math.isnan(self.tau) else f"; Kendall tau={self.tau:.2f}, one-sided p={self.p_value:.3g}"
        return trend + tau


def monotonicity(levels: Iterable[LevelStat]) -> Monotonicity:
    from scipy import stats as _sps

    levels = [s for s in levels if s.n > 0]
    reversals = []
    per_side = {}
    ids = [s for s in levels if s.side == 0]
    for side, chain in _sides(levels).items():
        start = [max(ids, key=lambda s: s.level * side)] if ids else []
        ok = True
        for inner, outer in itertools.pairwise(start + chain):
            if outer.rate > inner.rate:
                table = [[outer.successes, outer.n - outer.successes], [inner.successes, inner.n - inner.successes]]
                _, p = _sps.fisher_exact(table, alternative="greater")
                reversals.append(Reversal(inner.level, outer.level, float(p)))
                ok = False
        per_side[side] = ok
    distance, success = [], []
    for s in levels:
        distance += [s.distance] * s.n
        success += [1] * s.successes + [0] * (s.n - s.successes)
    if len(set(distance)) > 1 and len(set(success)) > 1:
        res = _sps.kendalltau(distance, success, alternative="less")
        tau, p = float(res.statistic), float(res.pvalue)
    else:
        tau, p = float("nan"), float("nan")
    return Monotonicity(tuple(reversals), tau, p, per_side)
