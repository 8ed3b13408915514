"""Statistics against known values."""

from __future__ import annotations

import math

import pytest

from indgen_core import stats
from indgen_core.stats import LevelStat


@pytest.mark.parametrize(("s", "n", "low", "high"), [
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (7, 10, 0.3968, 0.8922),
    (5, 10, 0.2366, 0.7634),
    (1, 20, 0.0089, 0.2361),
    (50, 100, 0.4038, 0.5962),
    (86, 100, 0.7786, 0.9147),  # computed by hand from the Wilson formula
    (0, 0, 0.0, 1.0),
])
def test_wilson_interval_known_values(s, n, low, high):
    lo, hi = stats.wilson(s, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_rejects_impossible_counts():
    with pytest.raises(ValueError):
        stats.wilson(11, 10)


def _curve(rates: dict[int, tuple[int, int]], ids=(0,)) -> list[LevelStat]:
    out = []
    for k, (s, n) in rates.items():
        nearest = min(ids, key=lambda i: abs(k - i))
        out.append(LevelStat(k, n, s, in_distribution=k in ids, distance=abs(k - nearest),
                             side=(k > nearest) - (k < nearest)))
    return out


def test_verdicts():
    assert LevelStat(0, 10, 10).verdict == stats.HELD
    assert LevelStat(0, 10, 0).verdict == stats.UNDECIDED  # upper bound 0.28 >= 0.2
    assert LevelStat(0, 20, 0).verdict == stats.BROKEN  # upper bound 0.16
    assert LevelStat(0, 10, 3).verdict == stats.UNDECIDED
    assert LevelStat(0, 0, 0).verdict == stats.UNDECIDED


def test_break_level_table1_pattern():
    # an RNN-like curve from the paper: trained on L0-L2, collapses at L3
    curve = _curve({0: (96, 100), 1: (90, 100), 2: (94, 100), 3: (0, 100), 4: (0, 100)}, ids=(0, 1, 2))
    br = stats.break_levels(curve)
    assert br.point == {1: 3}
    assert br.conservative == {1: 3}
    assert br.k_star == {1: 2}


def test_break_level_point_versus_conservative():
    # 1/10 at k=2 is below 20% but its interval reaches 40%: only the point rule breaks there
    curve = _curve({0: (7, 10), 1: (3, 10), 2: (1, 10), 3: (0, 20)})
    br = stats.break_levels(curve)
    assert br.point == {1: 2}
    assert br.conservative == {1: 3}
    assert br.k_star == {1: 1}


def test_the_paper_stack_row_breaks_at_tau_2():
    curve = _curve({0: (7, 10), 1: (3, 10), 2: (0, 10)})
    assert stats.break_levels(curve).point == {1: 2}
    assert stats.break_levels(curve).k_star == {1: 1}


def test_no_break_and_failure_in_distribution():
    held = stats.break_levels(_curve({0: (9, 10), 1: (10, 10), 2: (9, 10), 3: (10, 10), 4: (7, 10)}))
    assert held.point == {1: None} and held.k_star == {1: 4}
    failing = stats.break_levels(_curve({0: (1, 10), 1: (0, 10)}))
    assert failing.point == {1: 0} and failing.k_star == {1: None}  # already broken in distribution
    blockenv = stats.break_levels(_curve({0: (10, 10), 1: (1, 10), 2: (9, 10), 3: (0, 10)}, ids=(0, 1, 2)))
    assert blockenv.point == {1: 1} and blockenv.k_star == {1: 0}


def test_two_sided_axis_breaks_per_side():
    curve = _curve({-3: (0, 50), -2: (20, 50), -1: (45, 50), 0: (50, 50), 1: (40, 50), 2: (5, 50), 3: (0, 50)})
    br = stats.break_levels(curve)
    assert br.point == {1: 2, -1: -3}
    assert br.k_star == {1: 1, -1: -2}


def test_compare_two_policies_fisher_and_newcombe():
    cmp = stats.compare(7, 10, 3, 10, level=1)
    assert cmp.p_value == pytest.approx(0.1789, abs=1e-4)
    assert cmp.difference == pytest.approx(0.4)
    assert cmp.interval == pytest.approx((-0.0288, 0.6718), abs=1e-4)
    assert not cmp.significant
    extreme = stats.compare(10, 10, 0, 10)
    assert extreme.p_value == pytest.approx(2 / math.comb(20, 10), rel=1e-6)
    assert extreme.significant


def test_monotonicity():
    down = stats.monotonicity(_curve({0: (10, 10), 1: (7, 10), 2: (3, 10), 3: (0, 10)}))
    assert down.strictly_monotone and down.monotone
    assert down.tau < 0 and down.p_value < 0.001
    # the paper's Scale row: 90/100/90/100/70 has reversals, none significant at n=10
    scale = stats.monotonicity(_curve({0: (9, 10), 1: (10, 10), 2: (9, 10), 3: (10, 10), 4: (7, 10)}))
    assert not scale.strictly_monotone and scale.monotone
    assert [(r.inner, r.outer) for r in scale.reversals] == [(0, 1), (2, 3)]
    up = stats.monotonicity(_curve({0: (0, 20), 1: (20, 20)}))
    assert not up.monotone
    assert up.reversals[0].p_value < 1e-6
    assert "significant reversal" in up.describe()
