"""Campaign plans: seeds, orders, the adaptive rule."""

from __future__ import annotations

import collections

from indgen_core.campaign import plan


def test_seeds_are_reproducible_distinct_and_shared_by_policies():
    p1 = plan.make_plan(["a", "b"], [0, 1, 2], 5, seed=42)
    p2 = plan.make_plan(["a", "b"], [0, 1, 2], 5, seed=42)
    assert p1 == p2
    seeds = {(t.level, t.trial_index): set() for t in p1}
    for t in p1:
        seeds[(t.level, t.trial_index)].add(t.seed)
    assert all(len(s) == 1 for s in seeds.values())  # paired: both policies see the same setup
    assert len({next(iter(s)) for s in seeds.values()}) == 15
    assert plan.make_plan(["a"], [0], 3, seed=43)[0].seed != plan.make_plan(["a"], [0], 3, seed=42)[0].seed
    assert all(0 <= t.seed < 2**63 for t in p1)
    assert len({t.trial_id for t in p1}) == len(p1) == 30


def test_interleaved_order_shuffles_levels_within_each_round():
    trials = plan.make_plan(["a"], [0, 1, 2, 3], 6, seed=1)
    rounds = collections.defaultdict(list)
    for t in trials:
        rounds[t.order_idx // 4].append(t)
    for r, ts in rounds.items():
        assert sorted(t.level for t in ts) == [0, 1, 2, 3]
        assert {t.trial_index for t in ts} == {r}
    orders = {tuple(t.level for t in ts) for ts in rounds.values()}
    assert len(orders) > 1  # not the same order every round


def test_sequential_order_goes_outward_from_tau_0():
    trials = plan.make_plan(["a"], [-2, -1, 0, 1, 2], 2, seed=1, order=plan.SEQUENTIAL)
    assert [t.level for t in trials] == [0, 0, -1, -1, 1, 1, -2, -2, 2, 2]
    assert [t.order_idx for t in trials] == list(range(10))


def test_fixed_seed_lists():
    trials = plan.make_plan(["a"], [0, 1], 3, seed=0, seeds=[100, 101, 102])
    assert sorted((t.level, t.seed) for t in trials) == [(0, 100), (0, 101), (0, 102), (1, 100), (1, 101), (1, 102)]


def test_adaptive_rule_stops_decided_levels_and_the_sweep_after_a_break():
    """The rule asks the anytime-valid evidence (sequential.py), not a fixed-n interval."""
    rule = plan.AdaptiveRule()
    distance = {k: (k, 1 if k else 0) for k in range(5)}
    trial = plan.make_plan(["a"], [1], 1, seed=0)[0]
    assert rule.skip_reason(trial, {("a", 1): (3, 3)}, distance) is None  # 3/3: not yet shown
    assert "held" in rule.skip_reason(trial, {("a", 1): (5, 5)}, distance)
    assert plan.AdaptiveRule(min_trials=6).skip_reason(trial, {("a", 1): (5, 5)}, distance) is None
    far = plan.make_plan(["a"], [3], 1, seed=0)[0]
    done = {("a", 2): (30, 0)}
    assert rule.skip_reason(far, done, distance) == "beyond the shown break at k=2"
    other = plan.make_plan(["b"], [3], 1, seed=0)[0]
    assert rule.skip_reason(other, done, distance) is None  # another policy's break does not stop this one
    assert rule.skip_reason(far, {("a", 2): (20, 0)}, distance) is None  # 0/20: not yet shown broken
