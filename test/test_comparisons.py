"""Comparisons of policies as designed (indgen_core/stats/comparisons.py), against published worked
values and second libraries."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from indgen_core.errors import IndGenError
from indgen_core.stats import comparisons as cmp


def test_tango_interval_matches_published_values():
    # Fagerland, Lydersen and Laake (2014), "Recommended tests and confidence intervals for
    # paired binomial proportions", Statistics in Medicine 33: 2850, Table V, the paired
    # example (a, b, c, d) = (1, 1, 7, 12): Tango's score interval for (b - c) / n is -0.517 to -0.026
    low, high = cmp.tango_interval(1, 7, 21)
    assert (round(low, 3), round(high, 3)) == (-0.517, -0.026)
    # R's PropCIs::scoreci.mp(25, 28, 618, 0.90), whose estimand is (28 - 25) / 618
    low, high = cmp.tango_interval(28, 25, 618, confidence=0.90)
    assert (round(low, 4), round(high, 4)) == (-0.0148, 0.0247)
    # no discordant pair: symmetric around 0; all discordant one way: reaches the edge
    low, high = cmp.tango_interval(0, 0, 10)
    assert low == pytest.approx(-high) and 0 < high < 0.5
    assert cmp.tango_interval(10, 0, 10)[1] == 1.0
    with pytest.raises(ValueError):
        cmp.tango_interval(8, 5, 10)


def test_paired_comparison_uses_only_the_discordant_pairs():
    a = {seed: seed % 10 < 8 for seed in range(20)}  # 16/20
    b = {seed: seed % 10 < 3 for seed in range(20)}  # 6/20, every success of b also one of a
    c = cmp.paired("a", "b", 1, a, b)
    assert (c.pairs, c.a_only, c.b_only) == (20, 10, 0)
    assert c.difference == pytest.approx(0.5)
    assert c.p_value == pytest.approx(2 * 0.5 ** 10)  # exact McNemar: a binomial test of 10 vs 0
    assert c.interval == pytest.approx(cmp.tango_interval(10, 0, 20))
    only_common = cmp.paired("a", "b", 1, a, dict.fromkeys(range(10, 30), True))
    assert only_common.pairs == 10  # seeds both ran
    with pytest.raises(IndGenError, match="no seed that both"):
        cmp.paired("a", "b", 1, {1: True}, {2: True})


def _boschloo_by_enumeration(s_a: int, n_a: int, s_b: int, n_b: int, grid: int = 2001) -> float:
    """Boschloo's two-sided p-value from its definition, independently of scipy's boschloo_exact:
    one-sided, the statistic is Fisher's one-sided p-value of each table of two binomial
    samples (n_a, n_b), and the p-value the largest, over the common success rate, of the
    probability of a table at least as extreme (Fisher's p no larger than the observed one);
    two-sided, twice the smaller one-sided p-value (Boschloo 1970; scipy's definition)."""
    import numpy as np

    rates = np.linspace(0, 1, grid)
    pa = sps.binom.pmf(np.arange(n_a + 1)[None, :], n_a, rates[:, None])
    pb = sps.binom.pmf(np.arange(n_b + 1)[None, :], n_b, rates[:, None])

    def one_sided(alternative: str) -> float:
        fisher = np.array([[sps.fisher_exact([[x, y], [n_a - x, n_b - y]], alternative=alternative)[1]
                            for y in range(n_b + 1)] for x in range(n_a + 1)])
        extreme = fisher <= fisher[s_a, s_b] * (1 + 1e-7)
        return float(np.max(np.einsum("ri,rj,ij->r", pa, pb, extreme)))

    return min(1.0, 2 * min(one_sided("less"), one_sided("greater")))


@pytest.mark.parametrize("s_a, n_a, s_b, n_b", [(6, 7, 2, 7), (7, 10, 3, 10), (9, 12, 4, 12), (3, 4, 0, 4),
                                                 (10, 20, 2, 10), (1, 9, 6, 8)])
def test_unpaired_comparison_is_boschloo_on_scipys_layout_and_its_definition(s_a, n_a, s_b, n_b):
    """scipy's boschloo_exact takes each column of the table as one sample; the rows used to be
    passed as the samples (6/7 vs 2/7 gave p = 0.040, the right value is 0.057). Asymmetric
    tables (a symmetric one cannot tell the layouts apart), against scipy in its layout and
    against Boschloo's definition enumerated here."""
    c = cmp.unpaired("a", "b", 0, s_a, n_a, s_b, n_b)
    assert c.p_value == pytest.approx(sps.boschloo_exact([[s_a, s_b], [n_a - s_a, n_b - s_b]]).pvalue, rel=1e-9)
    assert c.p_value == pytest.approx(_boschloo_by_enumeration(s_a, n_a, s_b, n_b), abs=2e-3)
    assert c.p_value <= sps.fisher_exact([[s_a, s_b], [n_a - s_a, n_b - s_b]])[1] + 1e-9  # more powerful


def test_the_worked_example_and_no_difference_is_p_one():
    assert round(cmp.unpaired("a", "b", 0, 6, 7, 2, 7).p_value, 3) == 0.057
    for s_a, n_a, s_b, n_b in ((10, 10, 20, 20), (0, 5, 0, 9), (5, 10, 10, 20)):
        c = cmp.unpaired("a", "b", 0, s_a, n_a, s_b, n_b)
        assert c.p_value == 1.0 and not math.isnan(c.p_value), (s_a, n_a, s_b, n_b)
    c = cmp.unpaired("a", "b", 0, 7, 10, 3, 10)
    assert c.interval[0] < 0.4 < c.interval[1]


def test_the_anytime_valid_paired_comparison_bets_on_the_discordant_pairs():
    """Its p-value is 1 / E, E the mean of Robbins' mixture martingales for "a wins more than
    half the discordant pairs" and "fewer" (a uniform prior restricted to each side), computed
    here from the Beta-binomial form; seeds only one policy ran are no pairs; no discordant
    pair is p = 1; its interval holds the observed difference."""
    from scipy import integrate

    a = {seed: seed < 15 for seed in range(20)}
    b = {seed: seed < 3 for seed in range(22)}  # two more seeds than a: not pairs
    c = cmp.sequential_paired("a", "b", 2, a, b)
    assert (c.pairs, c.a_only, c.b_only, c.method) == (20, 12, 0, cmp.SEQUENTIAL)

    def mixture(wins: int, m: int, low: float, high: float) -> float:
        likelihood = integrate.quad(lambda t: t ** wins * (1 - t) ** (m - wins), low, high)[0] / (high - low)
        return likelihood / 0.5 ** m

    e = (mixture(12, 12, 0.5, 1.0) + mixture(12, 12, 0.0, 0.5)) / 2
    assert c.p_value == pytest.approx(1 / e, rel=1e-6)
    assert c.interval[0] < c.difference <= c.interval[1]
    assert cmp.sequential_paired("a", "b", 0, {1: True, 2: False}, {1: True, 2: False}).p_value == 1.0
    evens, odds = {s: s % 2 == 0 for s in range(40)}, {s: s % 2 == 1 for s in range(40)}
    balanced = cmp.sequential_paired("a", "b", 0, evens, odds)
    assert balanced.p_value == 1.0 and balanced.better is None  # 20 won each way: no evidence


def test_holm_adjusts_over_every_comparison():
    raw = [cmp.Comparison(k, "a", "b", 10, 9, 10, 1, cmp.PAIRED, 0.8, (0.4, 1.0), p)
           for k, p in enumerate((0.01, 0.04, 0.03))]
    adjusted = cmp.holm(raw)
    assert [c.p_adjusted for c in adjusted] == pytest.approx([0.03, 0.06, 0.06])
    assert [c.better for c in adjusted] == ["a", None, None]
    assert math.isnan(raw[0].p_adjusted)
