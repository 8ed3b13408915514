"""The break search: a confidence set for the break level that stays valid at every look,
trials put where they narrow it, and a campaign that stops once it holds one or two levels."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from helpers import toy_setup, toy_world
from indgen_core.campaign import plan
from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.campaign.runner import run_campaign
from indgen_core.report.analysis import summarize
from indgen_core.report.markdown import markdown
from indgen_core.stats import break_search, sequential
from indgen_core.store import ResultsStore


def first_break(rates, threshold=0.2):
    return next((j for j, r in enumerate(rates) if r < threshold), len(rates))


def test_each_trial_bets_on_the_side_its_level_points_to():
    assert break_search.bet_side(0, 0, 0.2) is None  # no information, no bet
    assert break_search.bet_side(1, 1, 0.2) == sequential.UPPER
    assert break_search.bet_side(0, 1, 0.2) == sequential.LOWER
    assert break_search.bet_side(1, 5, 0.2) is None  # exactly on the threshold
    # the factors multiply to the level's own mixture evidence while the side does not change
    level = break_search.LevelEvidence()
    for success in (True, True, False, True):
        level.add(success, 0.2)
    first = sequential.log_evidence(1, 1, 0.2, sequential.UPPER)
    assert level.above == pytest.approx(sequential.log_evidence(3, 4, 0.2, sequential.UPPER) - first)
    assert level.below == 0.0


def test_wealth_counts_evidence_against_each_break_hypothesis():
    # level 0 shown held, level 2 shown broken: only breaks at 1 and 2 survive
    search = break_search.BreakSearch.replay([[True] * 8, [], [False] * 25])
    found = search.break_set()
    assert found.candidates == (1, 2) and found.decided and not found.contradicted
    # held at 0 and 1, broken at 2: the break is at 2
    assert break_search.BreakSearch.replay([[True] * 8, [True] * 8, [False] * 25]).break_set().candidates == (2,)
    # a level shown broken before a level shown held: no monotone curve fits
    assert break_search.BreakSearch.replay([[False] * 25, [True] * 8]).break_set().contradicted


@pytest.mark.parametrize(
    "rates",
    [
        [0.2, 0.2, 0.195, 0.195],  # every level on the threshold: the hardest case for the set
        [0.21, 0.19, 0.19],
        [0.7, 0.3, 0.0],  # the paper's Stack curve
    ],
)
def test_the_set_misses_the_true_break_at_most_alpha_at_any_stop(rates):
    """Checked at every trial, not only at the end: any look, any stop (5% + 3 s.e.)."""
    rng = np.random.default_rng(7)
    runs, truth = 400, first_break(rates)
    missed = 0
    for _ in range(runs):
        search = break_search.BreakSearch(len(rates))
        ever_missed = False
        for _ in range(150):
            j = search.next_position([150 - lv.n for lv in search.levels])
            if j is None:
                break
            search.add(j, bool(rng.random() < rates[j]))
            ever_missed |= truth not in search.break_set().candidates
        missed += ever_missed
    rate = missed / runs
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), rate


def test_the_search_narrows_the_stack_curve_with_fewer_trials_than_the_sweep():
    rng = np.random.default_rng(3)
    rates = [0.7, 0.3, 0.0]
    used = []
    for _ in range(50):
        n, found = break_search.decide(rates, rng, cap=400, budget=1200)
        assert found.decided and 2 in found.candidates
        used.append(n)
    sweep = []
    held_at, broken_at = sequential.boundaries(0.2, 400)
    for _ in range(50):  # the per-level rule, level by level until the first shown break
        total = 0
        for r in rates:
            s = np.cumsum(rng.random(400) < r)
            hit = np.nonzero((s >= held_at) | (s <= broken_at))[0]
            total += hit[0] + 1 if len(hit) else 400
            if len(hit) and s[hit[0]] <= broken_at[hit[0]]:
                break
        sweep.append(total)
    assert np.mean(used) < 0.5 * np.mean(sweep), (np.mean(used), np.mean(sweep))


def test_chains_run_outward_on_each_side():
    places = {-2: (2, -1), -1: (1, -1), 0: (0, 0), 1: (1, 1), 2: (2, 1)}
    assert plan.chains(places) == {1: [0, 1, 2], -1: [0, -1, -2]}


def test_the_rule_picks_the_searched_level_and_skips_the_rest_once_decided():
    rule = plan.BreakSearchRule()
    places = {k: (k, 1 if k else 0) for k in range(4)}
    pending = plan.make_plan(["a"], [0, 1, 2, 3], 30, seed=0, order=plan.SEQUENTIAL)
    trial, skips = rule.choose(pending, {}, places)
    assert trial is not None and not skips
    done = {("a", 0): [True] * 8, ("a", 1): [True] * 8, ("a", 2): [False] * 25}
    remaining = [t for t in pending if not (t.level < 3 and t.trial_index < len(done[("a", t.level)]))]
    trial, skips = rule.choose(remaining, done, places)
    assert trial is None and len(skips) == len(remaining)
    assert skips[0][1].startswith("break search done: breaks at k=2 (95%")
    # contradicted: that policy falls back to the per-level sweep, in plan order
    contradicted = {("a", 0): [False] * 25, ("a", 1): [True] * 8}
    rest = [t for t in pending if not (t.level < 2 and t.trial_index < 25)]
    trial, skips = rule.choose(rest, contradicted, places)
    assert trial is not None and (trial.level, trial.trial_index) == (2, 0)
    assert {reason for _, reason in skips} == {
        "level k=0 already broken after 25 trials",
        "level k=1 already held after 8 trials",
    }


def test_a_campaign_run_by_the_break_search_stops_once_the_set_is_narrow(monkeypatch, tmp_path):
    """The toy world's skilled policy succeeds at 1, 0.75, 0.5, 0.25 on levels 0-3 (the oracle
    certifies no further): no level breaks, and the last one (0.25) would take the per-level
    rule hundreds of trials; the search settles for "at k=3 or no break" from level 2."""
    toy_setup.toy_env(monkeypatch, tmp_path)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        record = toy_setup.plan_toy(
            store, tmp_path, levels=[0, 1, 2, 3], trials_per_level=60, adaptive={"search": "break"}
        )
        summary = run_campaign(
            store, record.id, InProcessExecutor(toy_world.ToyWorld(), policies={"skilled": toy_world.Skilled()})
        )
        assert summary.ran < 60 and summary.ran + summary.skipped == 240
        curve = summarize(store, record.id).curves[0]
        found = curve.search[1]
        assert found.found.decided and None in found.levels
        report = markdown([summarize(store, record.id)], [], {})
    said = "Break search: breaks at k=3 or no break (95%, assuming success does not rise away from tau_0); trials"
    assert said in report, report
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        reasons = {r for (r,) in db.execute("SELECT skip_reason FROM trials WHERE campaign_id=? AND "
                                            "status='skipped'", (record.id,))}
    assert reasons and all(reason.startswith("break search done") for reason in reasons), reasons
