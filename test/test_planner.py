"""The trial planner (`indgen campaign plan --expect ...`): exact-design sizes checked by hand,
the sequential simulation checked against the rule trial by trial, and its refusals."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import toy_setup
from indgen_core.stats import sample_sizes, sequential


def _tail_at_least(c: int, n: int, p: float) -> float:
    return sum(math.comb(n, s) * p ** s * (1 - p) ** (n - s) for s in range(c, n + 1))


def test_exact_design_sizes_by_hand():
    # a perfect policy: n successes in n trials shows "above 0.2" once 0.2^n <= 0.025,
    # 0.2^2 = 0.04 > 0.025 >= 0.2^3 = 0.008
    assert sample_sizes.fixed_trials(1.0, 0.2) == 3
    # a policy that never succeeds: 0.8^16 = 0.028 > 0.025 >= 0.8^17 = 0.0225
    assert sample_sizes.fixed_trials(0.0, 0.2) == 17
    # n = 19 at a true rate of 0.5: the critical count by summing binomial terms by hand
    c = next(c for c in range(20) if _tail_at_least(c, 19, 0.2) <= 0.025)
    assert float(sample_sizes.exact_power(19, 0.5, 0.2, 0.025)) == pytest.approx(_tail_at_least(c, 19, 0.5), abs=1e-12)
    n = sample_sizes.fixed_trials(0.5, 0.2)
    fewer = sample_sizes.exact_power(np.arange(1, n), 0.5, 0.2, 0.025)
    assert sample_sizes.exact_power(n, 0.5, 0.2, 0.025) >= 0.8 > max(fewer)


def test_sequential_simulation_matches_the_rule_trial_by_trial():
    rng = np.random.default_rng(3)
    outcomes = (rng.random((40, 60)) < 0.45).astype(int)
    verdicts, used = sequential.first_decisions(outcomes, 0.2)
    for row, verdict, n in zip(outcomes, verdicts, used, strict=True):
        # the rule as it runs: look after every trial with the plain evidence function
        expect = (sequential.UNDECIDED, 60)
        for i in range(1, 61):
            v = sequential.verdict(int(row[:i].sum()), i, 0.2)
            if v != sequential.UNDECIDED:
                expect = (v, i)
                break
        assert (verdict, int(n)) == expect
    run = sample_sizes.sequential_run(0.5, 0.2, cap=200)
    assert run.wrong <= 0.025 and run.undecided < 1e-6
    # the exact computation against the rule run on 20,000 seeded sequences (3 standard errors)
    for rate, cap in ((0.35, 100), (0.1, 60), (0.9, 30)):
        exact = sample_sizes.sequential_run(rate, 0.2, cap)
        verdicts, used = sequential.first_decisions(np.random.default_rng(5).random((20_000, cap)) < rate, 0.2)
        undecided = verdicts.count(sequential.UNDECIDED) / 20_000
        spread = math.sqrt(exact.undecided * (1 - exact.undecided) / 20_000)
        assert abs(undecided - exact.undecided) <= 3 * spread + 1e-9
        assert abs(used.mean() - exact.mean) <= 3 * used.std() / math.sqrt(20_000)
    # stopping as soon as the evidence is there: far fewer than the fixed design sized at 0.2 + 0.15
    assert run.mean < 0.7 * sample_sizes.fixed_trials(0.35, 0.2)


def test_plan_levels_uses_the_expectation_or_the_planning_margin():
    plan = sample_sizes.plan_levels([0, 1, 2], 0.2, 30, adaptive=True, expect={0: 0.95}, policies=2, trial_s=90)
    by_k = {lv.level: lv for lv in plan.levels}
    assert by_k[0].rates == (0.95,) and by_k[0].cap == 30
    assert by_k[1].rates == pytest.approx((0.35, 0.05))
    assert by_k[1].fixed == max(sample_sizes.fixed_trials(0.35, 0.2), sample_sizes.fixed_trials(0.05, 0.2))
    assert plan.robot_hours([10, 10, 10]) == pytest.approx(30 * 2 * 90 / 3600)


@pytest.mark.parametrize("ask, sentence", [
    (["1=0.2"], "a rate equal to the threshold 0.2 cannot be told from it by any number of trials"),
    (["1=1.5"], "an expected success rate must lie between 0 and 1, not 1.5"),
    (["7=0.5"], "--expect names level(s) [7], which the campaign does not run"),
    (["1:0.5"], "--expect takes LEVEL=RATE (e.g. 3=0.6), not '1:0.5'"),
    (["1=0.201"], "telling a rate of 0.201 from the threshold 0.2 takes more than 5000 trials per level"),
])
def test_impossible_asks_are_one_sentence(monkeypatch, tmp_path, ask, sentence):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    cfg = toy_setup.campaign_yaml(tmp_path, "eval", levels=[0, 1, 2], trials_per_level=10)
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "plan", str(cfg), "--size-only",
                           "--expect", *ask, "--db", str(tmp_path / "r.sqlite")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"indgen: error: {sentence}")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_plan_prints_sizes_and_size_only_writes_nothing(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    cfg = toy_setup.campaign_yaml(tmp_path, "eval", levels=[0, 1], trials_per_level=10)
    db = tmp_path / "r.sqlite"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "plan", str(cfg), "--size-only",
                           "--expect", "0=1.0", "--trial-s", "120", "--db", str(db)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("│ 0 "))
    assert [c.strip() for c in row.strip("│").split("│")][:3] == ["0", "1", "3"]
    assert "robot time at 120 s per trial for 1 policy" in proc.stdout
    assert "fewer than the fixed design needs at levels [1]" in proc.stdout
    assert not db.exists()


def test_the_break_search_is_planned_on_the_expected_curve(monkeypatch, tmp_path):
    """Simulated as it runs (break_search.decide), beside the sweep on the same curve."""
    found = sample_sizes.simulate_search([0, 1, 2], [0.7, 0.3, 0.0], 0.2, cap=400, runs=200, seed=1)
    assert found.narrowed == 1.0 and found.missed <= 0.05
    assert found.mean < 0.5 * found.sweep_mean and found.interleaved_mean >= found.sweep_mean * 0.9
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    cfg = toy_setup.campaign_yaml(tmp_path, "search", levels=[0, 1, 2], trials_per_level=100,
                                  adaptive={"search": "break"})
    run = [sys.executable, "-m", "indgen_core.cli", "campaign", "plan", str(cfg), "--size-only",
           "--db", str(tmp_path / "r.sqlite"), "--expect"]
    proc = subprocess.run([*run, "0=0.9", "1=0.5", "2=0.05"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    line = " ".join(proc.stdout.split())
    assert "break search along [0, 1, 2]:" in line and "the per-level sweep:" in line, line
    proc = subprocess.run([*run, "0=0.9"], env=env, capture_output=True, text=True, timeout=120)
    assert "give every level's expected rate (--expect K=RATE) to plan it; missing on this side: [1, 2]" in \
        " ".join(proc.stdout.split())
