"""Two policies at each level, compared as the trials were designed.

Every policy of a campaign (and every campaign with the same seed and levels) sees the same
planned setups: trial i of level k has one seed whatever the policy (plan.trial_seed). Trials
of two policies with the same planned seed are therefore **pairs**: the same scene, the same
start. A paired analysis looks only at the discordant pairs (one policy succeeded, the other
did not):
- the exact McNemar test (statsmodels `mcnemar(exact=True)`: a binomial test of the
  discordant pairs' split);
- Tango's score interval of the paired difference (T. Tango, "Equivalence test and confidence
  interval for the difference in proportions for the paired-sample design", Statistics in
  Medicine 17, 1998; written here, no maintained Python library has it; checked against
  Newcombe's worked example and R's PropCIs::scoreci.mp in test_comparisons.py).
Where pairing does not hold (different seeds, or a trial missing on one side), Boschloo's
unconditional exact test (scipy `boschloo_exact`, more powerful than Fisher's) and the
Newcombe hybrid score interval of the difference (statsmodels). Across levels, Holm's
step-down adjustment (statsmodels `multipletests`) keeps the chance of any false "better"
at alpha.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from indgen_core.errors import IndGenError
from indgen_core.stats.level_stats import DEFAULT_CONFIDENCE
from indgen_core.stats.sequential import DEFAULT_ALPHA

PAIRED, UNPAIRED = "paired (exact McNemar, Tango's score interval)", "unpaired (Boschloo, Newcombe's interval)"
SEQUENTIAL = "paired, anytime-valid (a test by betting on the discordant pairs)"


@dataclass(frozen=True)
class Comparison:
    level: int
    a: str
    b: str
    n_a: int
    successes_a: int
    n_b: int
    successes_b: int
    method: str
    difference: float  # rate_a - rate_b
    interval: tuple[float, float]
    p_value: float
    p_adjusted: float = float("nan")
    #: paired: pairs, and the discordant ones (a only, b only)
    pairs: int = 0
    a_only: int = 0
    b_only: int = 0
    alpha: float = 0.05
    #: paired: planned pairs left out because one side was not scored (an invalid label)
    dropped: int = 0

    @property
    def better(self) -> str | None:
        """The policy shown better at this level after Holm's adjustment, else None."""
        if not self.p_adjusted <= self.alpha:
            return None
        return self.a if self.difference > 0 else self.b if self.difference < 0 else None


def tango_interval(a_only: int, b_only: int, pairs: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Tango's score interval for the paired difference rate_a - rate_b = (a_only - b_only) / n.

    The score statistic for a hypothesised difference d is
        Z(d) = (b - c - n d) / sqrt(n (2 q(d) + d (1 - d)))
    with b = a_only, c = b_only and q(d) the restricted maximum-likelihood estimate of the
    probability of a "b only" pair under d (the variance of b - c is n (p_b + p_c - d^2), with
    p_b = q + d and p_c = q), the positive root of
        2n q^2 + (-b - c + (2n - b + c) d) q - c d (1 - d) = 0   (Tango 1998, eq. 5-6).
    The interval is {d : |Z(d)| <= z_(1 - alpha/2)}; Z falls monotonically in d, so each end is
    one root."""
    b, c, n = a_only, b_only, pairs
    if n <= 0:
        return -1.0, 1.0
    if b < 0 or c < 0 or b + c > n:
        raise ValueError(f"discordant pairs {b} + {c} cannot exceed the {n} pairs")
    from scipy import optimize
    from scipy import stats as _sps  # imported when used (stats.py says why)

    z = float(_sps.norm.ppf(1 - (1 - confidence) / 2))

    def score(d: float) -> float:
        quad_a, quad_b, quad_c = 2 * n, -b - c + (2 * n - b + c) * d, -c * d * (1 - d)
        q = (math.sqrt(max(quad_b * quad_b - 4 * quad_a * quad_c, 0.0)) - quad_b) / (2 * quad_a)
        variance = n * (2 * q + d * (1 - d))
        if variance <= 0:
            return math.copysign(math.inf, b - c - n * d) if b - c - n * d else 0.0
        return (b - c - n * d) / math.sqrt(variance)

    eps = 1e-12
    point = (b - c) / n
    low = -1.0 if score(-1 + eps) <= z else optimize.brentq(lambda d: score(d) - z, -1 + eps, point)
    high = 1.0 if score(1 - eps) >= -z else optimize.brentq(lambda d: score(d) + z, point, 1 - eps)
    return float(low), float(high)


def paired(
    a: str,
    b: str,
    level: int,
    outcomes_a: Mapping[int, bool],
    outcomes_b: Mapping[int, bool],
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """a against b at one level over the seeds both ran (`outcomes_*[seed] = success`)."""
    from statsmodels.stats.contingency_tables import mcnemar

    seeds = sorted(set(outcomes_a) & set(outcomes_b))
    if not seeds:
        raise IndGenError(f"level k={level}: no seed that both {a} and {b} ran, so no pair to compare")
    a_only = sum(outcomes_a[s] and not outcomes_b[s] for s in seeds)
    b_only = sum(outcomes_b[s] and not outcomes_a[s] for s in seeds)
    both = sum(outcomes_a[s] and outcomes_b[s] for s in seeds)
    neither = len(seeds) - a_only - b_only - both
    p = 1.0 if a_only + b_only == 0 else float(mcnemar([[both, a_only], [b_only, neither]], exact=True).pvalue)
    n = len(seeds)
    return Comparison(
        level,
        a,
        b,
        n,
        both + a_only,
        n,
        both + b_only,
        PAIRED,
        (a_only - b_only) / n,
        tango_interval(a_only, b_only, n, 1 - alpha),
        p,
        pairs=n,
        a_only=a_only,
        b_only=b_only,
        alpha=alpha,
    )


def unpaired(
    a: str,
    b: str,
    level: int,
    successes_a: int,
    n_a: int,
    successes_b: int,
    n_b: int,
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    if n_a == 0 or n_b == 0:
        raise IndGenError(f"level k={level}: {a if n_a == 0 else b} has no scored trial there")
    from scipy import stats as _sps
    from statsmodels.stats.proportion import confint_proportions_2indep

    # scipy's boschloo_exact takes each column as one binomial sample: [[s_a, s_b], [f_a, f_b]]
    table = [[successes_a, successes_b], [n_a - successes_a, n_b - successes_b]]
    if successes_a * n_b == successes_b * n_a:
        p = 1.0  # the same rate on both sides (scipy gives nan where a row is empty): nothing differs
    else:
        p = float(_sps.boschloo_exact(table, alternative="two-sided").pvalue)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = confint_proportions_2indep(
            successes_a, n_a, successes_b, n_b, method="newcomb", compare="diff", alpha=alpha
        )
    return Comparison(
        level,
        a,
        b,
        n_a,
        successes_a,
        n_b,
        successes_b,
        UNPAIRED,
        successes_a / n_a - successes_b / n_b,
        (float(low), float(high)),
        p,
        alpha=alpha,
    )


def sequential_paired(
    a: str,
    b: str,
    level: int,
    outcomes_a: Mapping[int, bool],
    outcomes_b: Mapping[int, bool],
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """a against b at one level over the seeds both ran, valid however the trials were stopped
    (a level the sequential rule stopped early, a blind A/B stopped once decided) and however
    often it is looked at.

    On the discordant pairs the question is a sign test: is the share theta of them that a wins
    1/2? The evidence against theta <= 1/2 and against theta >= 1/2 is Robbins' mixture
    martingale of sequential.py at 1/2 (a test by betting: a nonnegative supermartingale under
    the null, whatever the stopping time); their mean E is an e-value for theta = 1/2, and
    p = min(1, 1/E) a p-value valid at any stopping time (Ville's inequality), which Holm's
    adjustment then treats as any p-value. The interval maps the anytime-valid confidence
    sequence of theta (each side at alpha / 2) to the difference at the observed share
    of discordant pairs: (2 theta - 1) x discordant / pairs."""
    from indgen_core.stats import sequential

    seeds = sorted(set(outcomes_a) & set(outcomes_b))
    if not seeds:
        raise IndGenError(f"level k={level}: no seed that both {a} and {b} ran, so no pair to compare")
    a_only = sum(outcomes_a[s] and not outcomes_b[s] for s in seeds)
    b_only = sum(outcomes_b[s] and not outcomes_a[s] for s in seeds)
    both = sum(outcomes_a[s] and outcomes_b[s] for s in seeds)
    n, m = len(seeds), a_only + b_only
    if m == 0:
        p, low, high = 1.0, -0.0, 0.0
    else:
        up = sequential.log_evidence(a_only, m, 0.5, sequential.UPPER)
        down = sequential.log_evidence(a_only, m, 0.5, sequential.LOWER)
        top = max(up, down)
        log_mean = top + math.log((math.exp(up - top) + math.exp(down - top)) / 2)
        p = min(1.0, math.exp(-log_mean))
        theta_low, theta_high = sequential.confidence_sequence(a_only, m, 1 - alpha)
        low, high = (2 * theta_low - 1) * m / n, (2 * theta_high - 1) * m / n
    return Comparison(
        level,
        a,
        b,
        n,
        both + a_only,
        n,
        both + b_only,
        SEQUENTIAL,
        (a_only - b_only) / n,
        (float(low), float(high)),
        p,
        pairs=n,
        a_only=a_only,
        b_only=b_only,
        alpha=alpha,
    )


def holm(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons with Holm-adjusted p-values (over all of them: every level, every pair)."""
    from statsmodels.stats.multitest import multipletests

    if not comparisons:
        return []
    adjusted = multipletests([c.p_value for c in comparisons], alpha=comparisons[0].alpha, method="holm")[1]
    return [replace(c, p_adjusted=float(p)) for c, p in zip(comparisons, adjusted, strict=True)]
