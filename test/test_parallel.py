"""Trials spread over worker processes (a Dask LocalCluster on loopback, what `--workers N`
starts): every trial committed exactly once, the outcomes of a sequential run, and a worker
that dies mid-trial costs a retry, not a result."""

from __future__ import annotations

from helpers import toy_setup
from indgen_core.campaign.cluster import connect, run_campaign_cluster
from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.campaign.runner import run_campaign
from indgen_core.store import ResultsStore


def _outcomes(store, cid):
    return {(r.level, r.trial_index): (r.outcome, r.steps) for r in store.rows(cid)}


def test_parallel_workers_match_a_sequential_run_and_survive_a_crash(tmp_path, monkeypatch):
    toy_setup.toy_env(monkeypatch, tmp_path)
    from helpers import toy_world

    marker = tmp_path / "crashed"
    with ResultsStore(tmp_path / "r.sqlite") as store:
        seq = toy_setup.plan_toy(store, tmp_path, campaign_id="seq")
        run_campaign(store, seq.id, InProcessExecutor(toy_world.ToyWorld(), policies={"skilled": toy_world.Skilled()}))
        par = toy_setup.plan_toy(store, tmp_path, certify_first=False, campaign_id="par")
        monkeypatch.setenv("TOY_CRASH_ONCE", str(marker))  # the workers inherit it
        seen = []
        with connect(workers=2) as client:
            assert all(w.startswith("tcp://127.0.0.1:") for w in client.scheduler_info()["workers"])
            summary = run_campaign_cluster(store, par.id, client, progress=lambda done, total, t, r: seen.append(done))
        assert marker.exists(), "the crash was not triggered"
        assert summary.remaining == 0 and summary.ran == 16 and summary.aborted_attempts == 1
        assert _outcomes(store, "par") == _outcomes(store, "seq")
        rows = store.rows("par")
        assert len({r.trial_id for r in rows}) == 16 and all(r.status == "done" for r in rows)
        crashed = next(r for r in rows if (r.level, r.trial_index) == (2, 1))
        assert store.attempt_count("par", crashed.trial_id) == 2  # the aborted attempt, then the result
        assert sorted(seen)[-1] == 16
        assert store.campaign("par").status == "done"
