"""The comparison parts of bench/stats_coverage.py (run them there: `--only boschloo compare`).

  boschloo   the size of `indgen compare`'s unpaired test (Boschloo's, scipy's boschloo_exact in
             its layout) at a nominal 5%, n 4-30 per arm: exact, by enumerating every table and
             maximising the rejection probability over the common rate (a grid of 2,001 rates)
  compare    two equal policies, each level run under the sequential rule (caps 30, 60, 100):
             how often the comparison says "better", for the anytime-valid paired test (stated:
             at most 5% + 3 Monte Carlo standard errors) and, for contrast, the fixed-size exact
             McNemar test on the same pairs (the seeds both ran; `indgen compare` used to apply
             Boschloo's test to the unequal arms, which an independent check measured at 7.5-13.6%
             false "better"); then the pairs an A/B that stops once the
             anytime-valid test decides takes for differences 0.2, 0.4 and 0.6, against the
             fixed McNemar design of the same error and 80% power
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from indgen_core.stats import comparisons, sequential

ALPHA = 0.05
THRESHOLD = 0.2


def _se(p: float, runs: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / runs)


def boschloo_size(n: int, grid: int = 2001) -> float:
    """The largest probability, over the common rate, that Boschloo's two-sided p-value (as
    `indgen compare` computes it) is at most ALPHA for two samples of n."""
    p = np.ones((n + 1, n + 1))
    for x in range(n + 1):
        for y in range(x + 1, n + 1):  # p(x, y) = p(y, x) = p(n - x, n - y): compute one of each
            if p[x, y] < 1.0 or (x, y) != min((x, y), (n - y, n - x)):
                continue
            value = comparisons.unpaired("a", "b", 0, x, n, y, n).p_value
            for i, j in ((x, y), (y, x), (n - x, n - y), (n - y, n - x)):
                p[i, j] = value
    reject = p <= ALPHA
    rates = np.linspace(0, 1, grid)
    pmf = sps.binom.pmf(np.arange(n + 1)[None, :], n, rates[:, None])
    return float(np.max(np.einsum("ri,rj,ij->r", pmf, pmf, reject)))


def bench_boschloo(runs: int, rng) -> bool:
    print(f"\n== Boschloo's test (indgen compare, unpaired): exact size at a nominal {ALPHA:.0%}, n per arm ==")
    worst = 0.0
    sizes = []
    for n in range(4, 31):
        size = boschloo_size(n)
        sizes.append(f"{n}: {size:.4f}")
        worst = max(worst, size)
    for i in range(0, len(sizes), 9):
        print("  " + "  ".join(sizes[i : i + 9]))
    passed = worst <= ALPHA + 1e-9
    print(f"largest size {worst:.4f} (limit {ALPHA}) {'ok' if passed else 'FAILS'}")
    return passed


def _sequential_arm(outcomes: np.ndarray, cap: int) -> np.ndarray:
    """Trials each run of a level takes under the sequential rule (runs x cap outcomes)."""
    _, used = sequential.first_decisions(outcomes[:, :cap], THRESHOLD)
    return used


def _anytime_p(a_only: np.ndarray, b_only: np.ndarray) -> np.ndarray:
    """The anytime-valid paired p-value (comparisons.sequential_paired), vectorised."""
    m = a_only + b_only
    safe = np.maximum(m, 1)
    up = sequential._log_e(a_only, safe - a_only, 0.5, sequential.UPPER)
    down = sequential._log_e(a_only, safe - a_only, 0.5, sequential.LOWER)
    top = np.maximum(up, down)
    log_mean = top + np.log((np.exp(up - top) + np.exp(down - top)) / 2)
    return np.where(m == 0, 1.0, np.minimum(1.0, np.exp(-log_mean)))


def _mcnemar_p(a_only: np.ndarray, b_only: np.ndarray) -> np.ndarray:
    m = a_only + b_only
    low = np.minimum(a_only, b_only)
    return np.where(m == 0, 1.0, np.minimum(1.0, 2 * sps.binom.cdf(low, np.maximum(m, 1), 0.5)))


def bench_compare(runs: int, rng) -> bool:
    print(f"\n== two equal policies under the sequential rule: false 'better' at a nominal {ALPHA:.0%} "
          f"({runs} runs per setting) ==")
    print(f"{'rate':>6} {'cap':>5} {'pairs':>7} {'anytime-valid':>14} {'limit':>6} {'fixed McNemar':>14}")
    passed = True
    for cap in (30, 60, 100):
        for rate in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 0.95):
            a = (rng.random((runs, cap)) < rate).astype(int)
            b = (rng.random((runs, cap)) < rate).astype(int)
            pairs = np.minimum(_sequential_arm(a, cap), _sequential_arm(b, cap))  # the seeds both ran
            mask = np.arange(cap)[None, :] < pairs[:, None]
            a_only = ((a == 1) & (b == 0) & mask).sum(axis=1)
            b_only = ((a == 0) & (b == 1) & mask).sum(axis=1)
            anytime = float(np.mean(_anytime_p(a_only, b_only) <= ALPHA))
            fixed = float(np.mean(_mcnemar_p(a_only, b_only) <= ALPHA))
            bound = ALPHA + 3 * _se(ALPHA, runs)
            passed &= anytime <= bound
            print(f"{rate:>6.2f} {cap:>5} {pairs.mean():>7.1f} {anytime:>14.4f} {bound:>6.3f} {fixed:>14.4f}")
    print("\n== an A/B that stops once the anytime-valid test decides (at most 400 pairs), against the fixed "
          "exact McNemar design of the same error and 80% power ==")
    print(f"{'rates':>12} {'difference':>11} {'mean pairs':>11} {'decided':>8} {'fixed n':>8} {'ratio':>6}")
    for pa, pb in ((0.6, 0.4), (0.7, 0.3), (0.8, 0.2)):
        cap = 400
        a = rng.random((runs, cap)) < pa
        b = rng.random((runs, cap)) < pb
        a_only = np.cumsum(a & ~b, axis=1)
        b_only = np.cumsum(~a & b, axis=1)
        decided = _anytime_p(a_only, b_only) <= ALPHA
        first = np.where(decided.any(axis=1), decided.argmax(axis=1) + 1, cap)
        fixed = _fixed_mcnemar_n(pa * (1 - pb), pb * (1 - pa))
        print(f"{pa:.1f} vs {pb:.1f} {pa - pb:>11.1f} {first.mean():>11.1f} {decided.any(axis=1).mean():>8.3f} "
              f"{fixed:>8} {first.mean() / fixed:>6.2f}")
    return passed


def _fixed_mcnemar_n(p10: float, p01: float, power: float = 0.8) -> int:
    """The fewest pairs with which the exact two-sided McNemar test at ALPHA rejects with at least
    `power`, the discordant pairs a-wins and b-wins with probabilities p10 and p01 (exact)."""
    discordant = p10 + p01
    theta = p10 / discordant
    for n in range(2, 2000):
        m = np.arange(n + 1)
        p_m = sps.binom.pmf(m, n, discordant)
        reject = 0.0
        for mm, pm in zip(m, p_m, strict=True):
            if pm < 1e-12 or mm == 0:
                continue
            k = np.arange(mm + 1)
            p_values = np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(k, mm - k), mm, 0.5))
            reject += pm * sps.binom.pmf(k, mm, theta)[p_values <= ALPHA].sum()
        if reject >= power:
            return n
    return 2000
