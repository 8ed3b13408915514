"""Anytime-valid evidence about a success rate: verdicts that stay right however often they
are looked at, and whenever the looking stops.

A 95% interval for a sample size fixed in advance loses its 95% when it is re-checked after
every trial and the trials stop once it clears the threshold (optional stopping: IndGen's old
adaptive rule called a level at rate 0.15 "held" in 5.2% of runs against the 2.5% it claimed).
Here, Robbins' mixture martingale (H. Robbins, "Statistical methods related to the law of the
iterated logarithm", Ann. Math. Statist. 41, 1970; the construction as in Howard, Ramdas,
McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence sequences",
Ann. Statist. 49, 2021): for H0 "the rate is at most p0" and Bernoulli outcomes, the likelihood
ratio of every alternative p > p0 against p0, averaged over a Beta(a, b) prior restricted to
(p0, 1],

    E_n(p0) = [B(a + S, b + n - S) Q(a + S, b + n - S; p0)] / [B(a, b) Q(a, b; p0) p0^S (1 - p0)^(n - S)]

(Q the regularised upper incomplete beta function), is a nonnegative supermartingale under
every p <= p0. By Ville's inequality it ever reaches 1/alpha with probability at most alpha,
whatever the stopping rule: "the rate exceeds p0" is claimed when E_n(p0) >= 1/alpha. The mirror
(alternatives p < p0) claims "the rate is below p0". Each one-sided claim is made at alpha/2, so a
95% verdict errs at most 2.5% each way (bench/stats_coverage.py measures it); the bounds that
invert the two tests form a 95% confidence sequence, valid at every n at once. The price of
validity at every n is width at any one n; what it buys is fewer trials on clear levels
(stopping as soon as the evidence is there): the planner and the bench compare expected trials.
"""

from __future__ import annotations

import math

import numpy as np

#: the mixing prior: Beta(1, 1), Robbins' uniform choice
PRIOR = (1.0, 1.0)
UPPER, LOWER = "upper", "lower"
HELD, BROKEN, UNDECIDED = "held", "broken", "undecided"
#: every test's error and interval's confidence unless a caller says otherwise (stats.py
#: re-exports them): a comparison is at alpha, its interval at 1 - alpha
DEFAULT_ALPHA = 0.05
DEFAULT_CONFIDENCE = 0.95
#: the success rate below which a level counts as broken: the paper's 20% (an axis or a campaign
#: may set its own)
DEFAULT_THRESHOLD = 0.2


def _log_e(s, f, p0: float, side: str, prior: tuple[float, float] = PRIOR):
    """log E(p0) after s successes and f failures (numpy arrays or numbers)."""
    from scipy import special  # imported when used (stats.py says why)

    a, b = prior
    tail = special.betaincc if side == UPPER else special.betainc
    with np.errstate(divide="ignore"):
        return (
            special.betaln(a + s, b + f)
            - special.betaln(a, b)
            + np.log(tail(a + s, b + f, p0))
            - np.log(tail(a, b, p0))
            - s * np.log(p0)
            - f * np.log1p(-p0)
        )


def log_evidence(successes: int, n: int, p0: float, side: str, prior: tuple[float, float] = PRIOR) -> float:
    """log E_n(p0): evidence that the rate is above p0 (side UPPER) or below it (LOWER)."""
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"p0 must be inside (0, 1), got {p0}")
    if n == 0:
        return 0.0
    return float(_log_e(successes, n - successes, p0, side, prior))


def claims(successes: int, n: int, p0: float, side: str, alpha: float) -> bool:
    """Whether the evidence shows the rate above (UPPER) or below (LOWER) p0 at level alpha."""
    return log_evidence(successes, n, p0, side) >= math.log(1.0 / alpha)


def _bound(successes: int, n: int, alpha: float, side: str) -> float:
    """The lower (side UPPER: the rate is shown above every p0 below it) or upper (LOWER)
    confidence bound at alpha: the edge of the set of p0 the evidence does not reject."""
    from scipy import optimize

    target = math.log(1.0 / alpha)
    mle = successes / n
    eps = 1e-9
    if side == UPPER:
        lo, hi = eps, min(max(mle, eps), 1 - eps)
        f = lambda p0: log_evidence(successes, n, p0, UPPER) - target  # noqa: E731 (decreasing towards the MLE)
        if f(lo) < 0:
            return 0.0
        if f(hi) >= 0:
            return hi
        return float(optimize.brentq(f, lo, hi, xtol=1e-7))
    lo, hi = max(min(mle, 1 - eps), eps), 1 - eps
    f = lambda p0: log_evidence(successes, n, p0, LOWER) - target  # noqa: E731 (increasing away from the MLE)
    if f(hi) < 0:
        return 1.0
    if f(lo) >= 0:
        return lo
    return float(optimize.brentq(f, lo, hi, xtol=1e-7))


def confidence_sequence(successes: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """The interval of the 95% (`confidence`) confidence sequence after n trials: each side at
    (1 - confidence) / 2, valid at every n at once. (0, 1) with no trials."""
    if n == 0:
        return 0.0, 1.0
    alpha = (1.0 - confidence) / 2.0
    return _bound(successes, n, alpha, UPPER), _bound(successes, n, alpha, LOWER)


def verdict(successes: int, n: int, threshold: float, confidence: float = DEFAULT_CONFIDENCE) -> str:
    """held (the rate is shown at or above the threshold), broken (below) or undecided, each
    claim at (1 - confidence) / 2 and valid however often it is looked at."""
    if n == 0:
        return UNDECIDED
    alpha = (1.0 - confidence) / 2.0
    if claims(successes, n, threshold, UPPER, alpha):
        return HELD
    if claims(successes, n, threshold, LOWER, alpha):
        return BROKEN
    return UNDECIDED


def boundaries(
    threshold: float, max_trials: int, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """For n = 1..max_trials (index n - 1): the fewest successes that show the rate held (at or
    above the threshold; n + 1 when none can) and the most that show it broken (-1 when none
    can). The evidence above the threshold grows with the successes, below it shrinks, so one
    bisection per side and n finds each edge; the rule is then a lookup."""
    n = np.arange(1, max_trials + 1)
    target = math.log(2.0 / (1.0 - confidence))

    def edge(side: str) -> np.ndarray:
        # invariant: lo fails, hi passes (held: successes rising; broken: falling)
        if side == UPPER:
            lo, hi = np.full(n.shape, -1), n + 1
            passes = lambda s: _log_e(s, n - s, threshold, UPPER) >= target  # noqa: E731
        else:
            lo, hi = n + 1, np.full(n.shape, -1)
            passes = lambda s: _log_e(s, n - s, threshold, LOWER) >= target  # noqa: E731
        while np.any(np.abs(hi - lo) > 1):
            mid = (lo + hi) // 2
            ok = passes(np.clip(mid, 0, n))
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        return hi

    held = edge(UPPER)
    held = np.where(
        (held <= n) & (_log_e(np.minimum(held, n), n - np.minimum(held, n), threshold, UPPER) >= target), held, n + 1
    )
    broken = edge(LOWER)
    broken = np.where(
        (broken >= 0) & (_log_e(np.maximum(broken, 0), n - np.maximum(broken, 0), threshold, LOWER) >= target),
        broken,
        -1,
    )
    return held, broken


def first_decision(
    outcomes, threshold: float, confidence: float = DEFAULT_CONFIDENCE, max_trials: int | None = None
) -> tuple[str, int]:
    """(verdict, trials used) of the rule that looks after every trial and stops at the first
    claim, over `outcomes` (0/1, in the planned order); undecided after all of them (or
    max_trials) otherwise."""
    verdicts, used = first_decisions(np.asarray(outcomes, dtype=int)[None, :max_trials], threshold, confidence)
    return verdicts[0], int(used[0])


def first_decisions(
    outcomes: np.ndarray,
    threshold: float,
    confidence: float = DEFAULT_CONFIDENCE,
    edges: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list[str], np.ndarray]:
    """first_decision for many runs at once: `outcomes` is runs x trials (0/1). The planner and
    bench/stats_coverage.py simulate the rule with it; `edges` reuses `boundaries`."""
    runs, cap = outcomes.shape
    held_at, broken_at = edges if edges is not None else boundaries(threshold, cap, confidence)
    s = np.cumsum(outcomes, axis=1)
    up = s >= held_at[:cap]
    down = s <= broken_at[:cap]
    hit = up | down
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), cap - 1)
    rows = np.arange(runs)
    verdicts = [HELD if up[r, i] else BROKEN if down[r, i] else UNDECIDED for r, i in zip(rows, first, strict=True)]
    return verdicts, first + 1
