"""Comparisons of policies as designed (indgen_core/comparisons.py), against published worked
values and second libraries."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from indgen_core import comparisons as cmp
from indgen_core.errors import IndGenError


def test_tango_interval_matches_published_values():
    # Newcombe (1998), Statistics in Medicine 17: 2635, the paired example (a, b, c, d) =
    # (1, 1, 7, 12): Tango's score interval for (b - c) / n is -0.517 to -0.026
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


def test_unpaired_comparison_is_boschloo_and_more_powerful_than_fisher():
    c = cmp.unpaired("a", "b", 0, 7, 10, 3, 10)
    assert c.p_value == pytest.approx(sps.boschloo_exact([[7, 3], [3, 7]]).pvalue)
    assert c.p_value < sps.fisher_exact([[7, 3], [3, 7]])[1]
    assert c.interval[0] < 0.4 < c.interval[1]


def test_holm_adjusts_over_every_comparison():
    raw = [cmp.Comparison(k, "a", "b", 10, 9, 10, 1, cmp.PAIRED, 0.8, (0.4, 1.0), p)
           for k, p in enumerate((0.01, 0.04, 0.03))]
    adjusted = cmp.holm(raw)
    assert [c.p_adjusted for c in adjusted] == pytest.approx([0.03, 0.06, 0.06])
    assert [c.better for c in adjusted] == ["a", None, None]
    assert math.isnan(raw[0].p_adjusted)
