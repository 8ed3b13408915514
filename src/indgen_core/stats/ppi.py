"""The twin beside the robot: how often the twin agrees with the real trials it shares seeds
with, its point estimate, and a prediction-powered interval that keeps its coverage at ten real
trials, shown beside the real-only exact interval. (It is not a sharper interval: at 10-40
pairs it is 1.2-2.3 times the real-only exact width, narrower in at most 2.2% of runs, with
coverage 99.99-100%; what the twin adds is its estimate and a check that the two agree.)

Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic,
"Prediction-powered inference", Science 382, 2023; for robot policies SureSim, arXiv
2510.04354): the real rate is the twin's rate plus the real-minus-twin difference,

    p_real = p_twin + delta,   delta = E[real - twin] over the same setups,

where p_twin comes from many cheap twin trials and delta from the few real trials whose seeds
the twin also ran (pairs). When the twin agrees with the robot on most setups, real - twin is
mostly 0 and delta is pinned down by fewer real trials than p_real itself.

The published intervals use a normal approximation of the rectifier (ppi_py's `ppi_mean_ci`).
At 10 pairs with 90% agreement all 10 pairs agree about a third of the time, the estimated
variance is 0 and the interval collapses onto a point: coverage fails. Here each part gets an
exact bound (Clopper-Pearson, statsmodels) and the union bound joins them:
- p_twin: at ALPHA_TWIN_SHARE x alpha (the twin's many trials need little of it);
- delta = P(real 1, twin 0) - P(real 0, twin 1): each of the two discordant cells of the paired
  table bounded at half the rest (`difference_bounds`).
Then P(p_real outside [twin_low + delta_low, twin_high + delta_high]) <= alpha at every n. The
split is fixed in advance, never tuned on the data.

What it costs: the bounds add, where the normal approximation adds variances, so exactness
costs width. At 10 to 40 pairs the prediction-powered interval is rarely narrower than the
exact real-only one (bench/stats_coverage.py measures both as a function of n); what the twin
adds there is its point estimate and a check that the two agree. The report shows both
intervals, the real-only one first.
Set aside after measuring: a betting interval for delta (Waudby-Smith and Ramdas, JRSS-B 2024;
its capped bets leave it wider than these bounds when the pairs agree) and Tango's score
interval for delta (up to a tenth narrower at 95-98% agreement, coverage not guaranteed at
small n). Never used for sequential verdicts (the interval is fixed-n).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from indgen_core.errors import IndGenError
from indgen_core.stats.level_stats import DEFAULT_CONFIDENCE, exact_interval

#: share of alpha spent on the twin's own rate (the twin's many trials need little)
ALPHA_TWIN_SHARE = 0.25


def difference_bounds(a_only: int, b_only: int, pairs: int, confidence: float) -> tuple[float, float]:
    """Bounds on delta = P(real 1, twin 0) - P(real 0, twin 1) that hold together with
    probability `confidence` at every n: a Clopper-Pearson interval for each discordant cell's
    probability at half the error, and delta between the lower one of a cell minus the upper
    one of the other. When the pairs all agree, both cells are bounded near 0 and so is delta."""
    half = 1 - (1 - confidence) / 2
    up_low, up_high = exact_interval(a_only, pairs, half)
    down_low, down_high = exact_interval(b_only, pairs, half)
    return up_low - down_high, up_high - down_low


@dataclass(frozen=True)
class TwinBeside:
    """One policy at one level: the real-only interval, and beside it the twin's agreement with the
    real trials, its estimate and the prediction-powered interval."""

    level: int
    real_n: int
    real_successes: int
    twin_n: int
    twin_successes: int
    pairs: int
    agreement: float  # share of pairs where the robot and the twin agreed
    estimate: float  # twin rate + mean(real - twin) over the pairs
    interval: tuple[float, float]
    real_only: tuple[float, float]  # Clopper-Pearson of the real trials alone
    confidence: float

    @property
    def width_ratio(self) -> float:
        """The prediction-powered width over the real-only width (below 1: the twin narrowed it)."""
        real = self.real_only[1] - self.real_only[0]
        return (self.interval[1] - self.interval[0]) / real if real > 0 else math.inf


def twin_beside(
    level: int, real: Mapping[int, bool], twin: Mapping[int, bool], confidence: float = DEFAULT_CONFIDENCE
) -> TwinBeside:
    """`real[seed]`, `twin[seed]`: success per planned seed. Every real seed must have been run
    by the twin too (the pairs); the twin's other trials pin down its own rate."""
    if not real:
        raise IndGenError(f"level k={level}: no real trial to set the twin beside")
    missing = sorted(set(real) - set(twin))
    if missing:
        raise IndGenError(
            f"level k={level}: the twin campaign did not run {len(missing)} of the real trials' seeds; "
            "plan it with the same seed and at least as many trials per level"
        )
    alpha = 1.0 - confidence
    seeds = sorted(real)
    diff = np.array([int(real[s]) - int(twin[s]) for s in seeds])
    twin_successes = sum(bool(v) for v in twin.values())
    twin_low, twin_high = exact_interval(twin_successes, len(twin), 1 - ALPHA_TWIN_SHARE * alpha)
    delta_low, delta_high = difference_bounds(
        int(np.sum(diff > 0)), int(np.sum(diff < 0)), len(seeds), 1 - (1 - ALPHA_TWIN_SHARE) * alpha
    )
    estimate = twin_successes / len(twin) + float(diff.mean())
    real_successes = sum(bool(v) for v in real.values())
    return TwinBeside(
        level=level,
        real_n=len(real),
        real_successes=real_successes,
        twin_n=len(twin),
        twin_successes=twin_successes,
        pairs=len(seeds),
        agreement=float(np.mean(diff == 0)),
        estimate=min(1.0, max(0.0, estimate)),
        interval=(max(0.0, twin_low + delta_low), min(1.0, twin_high + delta_high)),
        real_only=exact_interval(real_successes, len(real), confidence),
        confidence=confidence,
    )
