"""The twin beside the robot (ppi.py: the prediction-powered interval): the bounds by hand,
coverage at 10 pairs where the normal approximation fails, and `indgen report --twin` from the
store."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

from helpers import toy_setup, toy_world
from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.campaign.runner import run_campaign
from indgen_core.errors import IndGenError
from indgen_core.stats import ppi
from indgen_core.store import ResultsStore


def test_difference_bounds_by_hand():
    # no discordant pair in 10: each cell's exact upper bound is 1 - (alpha/4)^(1/10)
    low, high = ppi.difference_bounds(0, 0, 10, 0.95)
    assert high == pytest.approx(1 - 0.0125 ** 0.1) and low == pytest.approx(-high)
    # 3 pairs real-only, 1 twin-only of 20: Clopper-Pearson by the beta quantiles
    low, high = ppi.difference_bounds(3, 1, 20, 0.9)
    a = 0.1 / 4
    assert high == pytest.approx(sps.beta.ppf(1 - a, 4, 17) - sps.beta.ppf(a, 1, 20))
    assert low == pytest.approx(sps.beta.ppf(a, 3, 18) - sps.beta.ppf(1 - a, 2, 19))


def test_estimate_and_refusal():
    real = {1: True, 2: False, 3: True, 4: True}
    twin = {1: True, 2: True, 3: True, 4: True, 5: False, 6: True, 7: False, 8: True}
    t = ppi.twin_beside(2, real, twin)
    assert t.estimate == pytest.approx(6 / 8 + (0 - 1 + 0 + 0) / 4)
    assert (t.pairs, t.agreement, t.twin_n) == (4, 0.75, 8)
    assert t.real_only == pytest.approx(ppi.exact_interval(3, 4))
    with pytest.raises(IndGenError, match="the twin campaign did not run 1 of the real trials' seeds"):
        ppi.twin_beside(2, {**real, 99: True}, twin)


def _normal_ppi(real, twin_pairs, twin_rest, z=1.96):
    """The normal-approximation PPI (the published interval): what fails at 10 pairs."""
    diff = real.astype(float) - twin_pairs
    all_twin = np.concatenate([twin_pairs, twin_rest])
    est = all_twin.mean() + diff.mean()
    se = math.sqrt(all_twin.var(ddof=1) / len(all_twin) + diff.var(ddof=1) / len(diff))
    return est - z * se, est + z * se


def test_coverage_at_ten_pairs_where_the_normal_approximation_fails():
    """A twin biased one way: it succeeds on 60% of setups, the robot on 50% (the twin's extra
    successes are setups the robot fails: 90% agreement). All ten pairs agree a third of the
    time; the normal interval then has the twin's rate at its centre and no width from the pairs."""
    rng = np.random.default_rng(7)
    p_real, p_twin, n, rest = 0.5, 0.6, 10, 190
    ours = normal = 0
    runs = 1500
    for _ in range(runs):
        twin_pairs = rng.random(n) < p_twin
        real = twin_pairs & (rng.random(n) >= (p_twin - p_real) / p_twin)
        twin_rest = rng.random(rest) < p_twin
        seeds = {i: bool(v) for i, v in enumerate(twin_pairs)} | {n + i: bool(v) for i, v in enumerate(twin_rest)}
        t = ppi.twin_beside(0, {i: bool(v) for i, v in enumerate(real)}, seeds)
        ours += t.interval[0] <= p_real <= t.interval[1]
        low, high = _normal_ppi(real, twin_pairs.astype(float), twin_rest.astype(float))
        normal += low <= p_real <= high
    se = math.sqrt(0.05 * 0.95 / runs)
    assert ours / runs >= 0.95 - 3 * se
    assert normal / runs < 0.85


@pytest.fixture
def real_and_twin(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path), INDGEN_ARTIFACTS=str(tmp_path / "art"))
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        for cid, trials, seed in (("real", 10, 11), ("twin", 40, 11), ("other-seed", 40, 12)):
            record = toy_setup.plan_toy(store, tmp_path, certify_first=cid == "real", campaign_id=cid,
                                        policies=["clumsy"], trials_per_level=trials, seed=seed, levels=[0, 1, 2])
            run_campaign(store, record.id, InProcessExecutor(toy_world.ToyWorld(),
                                                             policies={"clumsy": toy_world.Clumsy()}))
    return env, db


def test_report_with_a_twin_campaign(real_and_twin, tmp_path):
    env, db = real_and_twin
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "report", "real", "--twin", "twin", "--db",
                           str(db), "--out", str(tmp_path / "rep")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "### The twin beside the robot: campaign `twin`" in report and "sharpen" not in report
    twin_section = report.split("### The twin beside the robot")[1].split("\n### ")[0]
    rows = [line for line in twin_section.splitlines() if line.startswith("| clumsy | ")]
    # the toy world fixes each outcome by its seed: the twin agrees on every pair
    assert len(rows) >= 3 and all("| 10 | 100% |" in row for row in rows[-3:])
    assert "with the twin's help" in proc.stdout

    bad = subprocess.run([sys.executable, "-m", "indgen_core.cli", "report", "real", "--twin", "other-seed", "--db",
                          str(db)], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("indgen: error: level k=0: the twin campaign did not run 10 of the real trials' "
                                  "seeds; plan it with the same seed and at least as many trials per level")
