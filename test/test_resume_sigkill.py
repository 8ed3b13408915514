"""A campaign killed with SIGKILL at random points resumes to exactly the result of an
uninterrupted run: no trial lost, none counted twice."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys

import pytest

from helpers import toy_setup, toy_world
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.campaign.planning import plan_campaign
from indgen_core.campaign.runner import INTERRUPTED, run_campaign
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until

pytestmark = pytest.mark.slow

CAMPAIGN = {"name": "killme", "axis": "toy_depth", "world": "toy", "policies": ["skilled", "clumsy"],
            "trials_per_level": 5, "seed": 2024, "levels": [0, 1, 2, 3]}


def indgen(env, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "indgen_core.cli", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_sigkill_at_random_points_then_resume_equals_uninterrupted(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path), TOY_STEP_DELAY="0.02")
    db = tmp_path / "killed.sqlite"
    cert = toy_setup.campaign_yaml(tmp_path, "cert", purpose="certify", policies=["skilled"], trials_per_level=6,
                                   seed=3, levels=[0, 1, 2, 3])
    assert indgen(dict(env, TOY_STEP_DELAY="0"), "campaign", "run", str(cert), "--db", str(db)).wait(120) == 0
    config = toy_setup.campaign_yaml(tmp_path, "killme", **{k: v for k, v in CAMPAIGN.items() if k != "name"})

    rng = random.Random(7)
    kills, runs = 0, 0
    while True:
        runs += 1
        assert runs < 40, "the campaign never finished"
        with ResultsStore(db) as store:  # a kill before the plan was written leaves nothing to resume
            planned = store.has_campaign("killme-1")
        args = (["campaign", "resume", "killme-1"] if planned else
                ["campaign", "run", str(config), "--id", "killme-1"])
        proc = indgen(env, *args, "--db", str(db))
        # a random moment to kill it at (then, after six kills, the run's end)
        wait_until(lambda p=proc: p.poll() is not None, rng.uniform(0.6, 1.6) if kills < 6 else 300, poll=0.01)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            continue
        assert proc.returncode == 0, proc.stderr.read()
        break
    assert kills >= 3, f"only {kills} kills landed; the test did not test resuming"

    # the same campaign, uninterrupted, in a fresh store
    ref_db = tmp_path / "reference.sqlite"
    with ResultsStore(ref_db) as ref:
        lib = toy_setup.AxisLibrary([tmp_path / "config" / "axes"])
        rec = plan_campaign(ref, CampaignConfig(**CAMPAIGN), campaign_id="killme-1", allow_uncertified=True,
                            override_reason="reference run", axes=lib)
        run_campaign(ref, rec.id, InProcessExecutor(toy_world.ToyWorld(0.0)))
        expected = {r.trial_id: (r.policy, r.level, r.seed, r.outcome) for r in ref.rows(rec.id)}

    with ResultsStore(db) as store:
        rows = store.rows("killme-1")
        got = {r.trial_id: (r.policy, r.level, r.seed, r.outcome) for r in rows}
        assert got == expected
        assert len(rows) == 2 * 4 * 5 and all(r.status == "done" for r in rows)
        n_results = store._db.execute("SELECT COUNT(*) FROM results WHERE campaign_id='killme-1'").fetchone()[0]
        assert n_results == len(rows)  # none counted twice
        finals = store._db.execute("SELECT COUNT(*) FROM attempts WHERE campaign_id='killme-1' AND outcome!='aborted'"
                                   ).fetchone()[0]
        assert finals == len(rows)
        assert store.campaign("killme-1").status == "done"
        # every attempt is in the store: each kill during a trial left one, recorded as interrupted
        # by the next run (a kill between two trials leaves none)
        interrupted = [a for a in store.attempts("killme-1") if a.reason == INTERRUPTED]
        assert 1 <= len(interrupted) <= kills, (len(interrupted), kills)
        assert store.unfinished_starts("killme-1") == []
