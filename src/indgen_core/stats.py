"""Statistics of a campaign, from maintained libraries (statsmodels, scipy).

- per-level success with the Wilson score interval (statsmodels `proportion_confint`);
- the break level: the first level, walking away from the in-distribution levels, whose
  success rate is below the threshold (20% in the paper), by point estimate and, more
  conservatively, by the interval's upper bound; k*, the last level held before it;
- two policies at one level: Fisher's exact test and the Newcombe interval of the difference;
- monotonicity across levels (Appendix B, black-box regime): does success fall as the task
  moves away from tau_0? Point-estimate reversals, each tested with a one-sided Fisher test,
  and an overall Kendall tau trend test on the trial outcomes.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scipy import stats as _sps
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

DEFAULT_CONFIDENCE = 0.95
DEFAULT_THRESHOLD = 0.2

HELD, BROKEN, UNDECIDED = "held", "broken", "undecided"


def wilson(successes: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of successes / n; (0, 1) when there are no trials."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return 0.0, 1.0
    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    return max(0.0, float(low)), min(1.0, float(high))


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

    @property
    def rate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.successes, self.n, self.confidence)

    @property
    def verdict(self) -> str:
        """held / broken when the whole interval lies on one side of the threshold."""
        if self.n == 0:
            return UNDECIDED
        low, high = self.interval
        if low >= self.threshold:
            return HELD
        if high < self.threshold:
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
    paper's "breaks at"). Conservative: the first level whose whole Wilson interval lies below
    it. k*: the last level before the point break (None when the very first level breaks; the
    last tested level when nothing breaks).
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
class Comparison:
    level: int
    a: tuple[int, int]
    b: tuple[int, int]
    difference: float
    interval: tuple[float, float]
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


def compare(a_successes: int, a_n: int, b_successes: int, b_n: int, level: int = 0,
            confidence: float = DEFAULT_CONFIDENCE) -> Comparison:
    """Policy A vs policy B at one level: Fisher's exact test (two-sided) and the Newcombe
    hybrid-score interval of rate_A - rate_B."""
    if a_n == 0 or b_n == 0:
        raise ValueError("both policies need at least one scored trial at the level")
    table = [[a_successes, a_n - a_successes], [b_successes, b_n - b_successes]]
    _, p = _sps.fisher_exact(table, alternative="two-sided")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = confint_proportions_2indep(a_successes, a_n, b_successes, b_n, method="newcomb",
                                               compare="diff", alpha=1 - confidence)
    return Comparison(level, (a_successes, a_n), (b_successes, b_n), a_successes / a_n - b_successes / b_n,
                      (float(low), float(high)), float(p))


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
