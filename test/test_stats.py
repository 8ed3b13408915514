"""Statistics of a campaign's levels against known values and second libraries."""

from __future__ import annotations

import pytest

from indgen_core.stats import level_stats
from indgen_core.stats.level_stats import LevelStat


@pytest.mark.parametrize(("s", "n"), [(0, 10), (10, 10), (7, 10), (5, 10), (1, 20), (50, 100), (86, 100), (0, 0)])
def test_exact_interval_is_clopper_pearson(s, n):
    """Against the beta quantiles that define it (scipy, a second library beside statsmodels),
    and the closed forms at 0/n and n/n: 1 - (alpha/2)^(1/n)."""
    from scipy.stats import beta

    lo, hi = level_stats.exact_interval(s, n)
    if n == 0:
        assert (lo, hi) == (0.0, 1.0)
        return
    assert lo == pytest.approx(0.0 if s == 0 else beta.ppf(0.025, s, n - s + 1), abs=1e-9)
    assert hi == pytest.approx(1.0 if s == n else beta.ppf(0.975, s + 1, n - s), abs=1e-9)
    if s == 0:
        assert hi == pytest.approx(1 - 0.025 ** (1 / n), abs=1e-9)


def test_exact_interval_rejects_impossible_counts():
    with pytest.raises(ValueError):
        level_stats.exact_interval(11, 10)


def _curve(rates: dict[int, tuple[int, int]], ids=(0,)) -> list[LevelStat]:
    out = []
    for k, (s, n) in rates.items():
        nearest = min(ids, key=lambda i: abs(k - i))
        out.append(LevelStat(k, n, s, in_distribution=k in ids, distance=abs(k - nearest),
                             side=(k > nearest) - (k < nearest)))
    return out


def test_verdicts_fixed_n_are_exact_tests_and_live_ones_the_sequence():
    assert LevelStat(0, 10, 10).verdict == level_stats.HELD  # P(S >= 10 | 0.2) = 1e-7
    assert LevelStat(0, 10, 0).verdict == level_stats.UNDECIDED  # P(S <= 0 | 0.2) = 0.107
    assert LevelStat(0, 20, 0).verdict == level_stats.BROKEN  # 0.8^20 = 0.0115 <= 0.025
    assert LevelStat(0, 10, 3).verdict == level_stats.UNDECIDED
    assert LevelStat(0, 10, 6).verdict == level_stats.HELD  # P(S >= 6 | 0.2) = 0.0064
    assert LevelStat(0, 0, 0).verdict == level_stats.UNDECIDED
    # looked at while trials come in: the confidence sequence, wider, never fooled by peeking
    assert LevelStat(0, 20, 0, anytime=True).verdict == level_stats.UNDECIDED
    assert LevelStat(0, 30, 0, anytime=True).verdict == level_stats.BROKEN
    assert LevelStat(0, 10, 6, anytime=True).verdict == level_stats.UNDECIDED
    assert LevelStat(0, 10, 10, anytime=True).verdict == level_stats.HELD
    assert "Clopper-Pearson" in LevelStat(0, 5, 5).interval_kind
    assert "confidence sequence" in LevelStat(0, 5, 5, anytime=True).interval_kind


def test_the_guarantee_tests_outward_from_tau0_and_calls_broken_only_by_its_own_test():
    # held at 0..2 (exact tests at 2.5%), k=3 not shown held; 1/10 there is not shown broken
    curve = _curve({0: (10, 10), 1: (9, 10), 2: (8, 10), 3: (1, 10), 4: (0, 30)})
    g = level_stats.guarantee(curve)[1]
    assert (g.held_through, g.next_level, g.broken_at) == (2, 3, None)
    assert "held at every level through k=2" in g.describe() and "not shown held, nor broken" in g.describe()
    # with 0/20 at k=3 it is broken by its own test (0.8^20 <= 2.5%)
    g = level_stats.guarantee(_curve({0: (10, 10), 1: (9, 10), 2: (8, 10), 3: (0, 20)}))[1]
    assert (g.held_through, g.broken_at) == (2, 3) and "95% for both claims" in g.describe()
    # a level past the first one not held is never tested for "held": fixed-sequence testing
    g = level_stats.guarantee(_curve({0: (10, 10), 1: (3, 10), 2: (10, 10)}))[1]
    assert g.held_through == 0 and g.next_level == 1
    # two-sided: per side
    two = level_stats.guarantee(_curve({-2: (0, 30), -1: (9, 10), 0: (10, 10), 1: (10, 10), 2: (0, 30)}))
    assert (two[1].held_through, two[1].broken_at, two[-1].held_through, two[-1].broken_at) == (1, 2, -1, -2)
    failing = level_stats.guarantee(_curve({0: (0, 30), 1: (0, 30)}))[1]
    assert failing.held_through is None and failing.broken_at == 0


def test_break_level_table1_pattern():
    # an RNN-like curve from the paper: trained on L0-L2, collapses at L3
    curve = _curve({0: (96, 100), 1: (90, 100), 2: (94, 100), 3: (0, 100), 4: (0, 100)}, ids=(0, 1, 2))
    br = level_stats.break_levels(curve)
    assert br.point == {1: 3}
    assert br.conservative == {1: 3}
    assert br.k_star == {1: 2}


def test_break_level_point_versus_conservative():
    # 1/10 at k=2 is below 20% but its interval reaches 40%: only the point rule breaks there
    curve = _curve({0: (7, 10), 1: (3, 10), 2: (1, 10), 3: (0, 20)})
    br = level_stats.break_levels(curve)
    assert br.point == {1: 2}
    assert br.conservative == {1: 3}
    assert br.k_star == {1: 1}


def test_the_paper_stack_row_breaks_at_tau_2():
    curve = _curve({0: (7, 10), 1: (3, 10), 2: (0, 10)})
    assert level_stats.break_levels(curve).point == {1: 2}
    assert level_stats.break_levels(curve).k_star == {1: 1}


def test_no_break_and_failure_in_distribution():
    held = level_stats.break_levels(_curve({0: (9, 10), 1: (10, 10), 2: (9, 10), 3: (10, 10), 4: (7, 10)}))
    assert held.point == {1: None} and held.k_star == {1: 4}
    failing = level_stats.break_levels(_curve({0: (1, 10), 1: (0, 10)}))
    assert failing.point == {1: 0} and failing.k_star == {1: None}  # already broken in distribution
    blockenv = level_stats.break_levels(_curve({0: (10, 10), 1: (1, 10), 2: (9, 10), 3: (0, 10)}, ids=(0, 1, 2)))
    assert blockenv.point == {1: 1} and blockenv.k_star == {1: 0}


def test_two_sided_axis_breaks_per_side():
    curve = _curve({-3: (0, 50), -2: (20, 50), -1: (45, 50), 0: (50, 50), 1: (40, 50), 2: (5, 50), 3: (0, 50)})
    br = level_stats.break_levels(curve)
    assert br.point == {1: 2, -1: -3}
    assert br.k_star == {1: 1, -1: -2}


def test_monotonicity():
    down = level_stats.monotonicity(_curve({0: (10, 10), 1: (7, 10), 2: (3, 10), 3: (0, 10)}))
    assert down.strictly_monotone and down.monotone
    assert down.tau < 0 and down.p_value < 0.001
    # the paper's Scale row: 90/100/90/100/70 has reversals, none significant at n=10
    scale = level_stats.monotonicity(_curve({0: (9, 10), 1: (10, 10), 2: (9, 10), 3: (10, 10), 4: (7, 10)}))
    assert not scale.strictly_monotone and scale.monotone
    assert [(r.inner, r.outer) for r in scale.reversals] == [(0, 1), (2, 3)]
    up = level_stats.monotonicity(_curve({0: (0, 20), 1: (20, 20)}))
    assert not up.monotone
    assert up.reversals[0].p_value < 1e-6
    assert "significant reversal" in up.describe()
