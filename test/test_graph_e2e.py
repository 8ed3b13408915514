"""The whole BlockEnv graph as separate processes on loopback: progression manager, sim
bridge, policy node, policy server and scorer talking over DDS and websockets."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import yaml

from helpers import graphs, servers
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign
from indgen_core.campaign.runner import run_campaign_batched
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.ros]


def launch(*assignments: str) -> subprocess.Popen:
    return graphs.launch("blockenv_axis", *assignments)


finish = graphs.finish


def test_oracle_campaign_through_the_graph(tmp_path):
    db, reports = tmp_path / "r.sqlite", tmp_path / "reports"
    port = servers.free_port()
    out = finish(launch(f"db:={db}", f"report_dir:={reports}", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
                        "campaign_id:=oracle-graph"))
    assert "campaign oracle-graph done: 50 trials run" in out
    assert "no word from the scorer" not in out  # the manager exited after the report was written
    with ResultsStore(db) as store:
        rows = store.rows("oracle-graph")
        assert len(rows) == 50 and all(r.status == "done" for r in rows)
        assert all(r.outcome is Outcome.SUCCESS for r in rows)
        counts = store.counts("oracle-graph")
        assert sorted(k for _, k in counts) == [0, 1, 2, 3, 4]
        assert all(c.successes == 10 for c in counts.values())
        assert {c["level"] for c in store.certificates(world="blockenv")} == {0, 1, 2, 3, 4}
        # who ran, as its server said (the report's provenance), kept once
        said = [e["message"] for e in store.events("oracle-graph") if e["kind"] == "policy"]
        assert said == ['blockenv_oracle: {"policy": "blockenv_oracle", "spec": "blockenv"}'], said
    assert (reports / "oracle-graph" / "report.html").is_file()
    assert '"policy": "blockenv_oracle"' in (reports / "oracle-graph" / "report.md").read_text()
    assert (reports / "oracle-graph" / "success_per_level.png").is_file()
    # the scorer refreshed the results index beside the reports, with a link to this report
    index = (reports / "index.html").read_text()
    assert '"id": "oracle-graph"' in index and '"oracle-graph/report.html"' in index


def _rnn_checkpoint(path):
    import torch

    from indgen_sim.blockenv.demos import generate
    from indgen_sim.blockenv.train import TrainConfig, save_checkpoint, train

    torch.manual_seed(0)
    model, info = train("rnn", generate([0, 1, 2], 300, noise=0.5), TrainConfig(epochs=12))
    return save_checkpoint(model, path, info), model


def test_graph_outcomes_equal_the_in_process_evaluation(tmp_path, repo):
    """Lock-step determinism: a trained RNN gives the same per-trial outcomes through the graph
    as in the batched in-process evaluation of Table 1, with the same seeds."""
    from indgen_sim.blockenv.table1 import batch_executor

    ckpt, model = _rnn_checkpoint(tmp_path / "rnn.pt")
    config = yaml.safe_load((repo / "config" / "campaigns" / "blockenv_rnn.yaml").read_text())
    with ResultsStore(tmp_path / "inproc.sqlite") as store:
        rec = plan_campaign(store, CampaignConfig(**config), campaign_id="rnn", allow_uncertified=True,
                            override_reason="reference")
        run_campaign_batched(store, rec.id, batch_executor(model))
        expected = {r.trial_id: (r.outcome, r.steps) for r in store.rows("rnn")}
    assert 0 < sum(o is Outcome.SUCCESS for o, _ in expected.values()) < 50  # an informative comparison

    db = tmp_path / "graph.sqlite"
    cert = subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "run",
                           str(repo / "config" / "campaigns" / "blockenv_oracle.yaml"), "--db", str(db)],
                          capture_output=True, text=True, timeout=120)
    assert cert.returncode == 0, cert.stderr
    port = servers.free_port()
    finish(launch(f"db:={db}", f"report_dir:={tmp_path / 'rep'}", f"port:={port}",
                  f"server_uri:=ws://127.0.0.1:{port}", "policy:=blockenv_rnn", f"checkpoint:={ckpt}",
                  "campaign:=campaigns/blockenv_rnn.yaml", "campaign_id:=rnn"))
    with ResultsStore(db) as store:
        got = {r.trial_id: (r.outcome, r.steps) for r in store.rows("rnn")}
    assert got == expected


def test_killing_the_policy_server_aborts_the_trial_and_the_campaign_continues(tmp_path):
    db = tmp_path / "r.sqlite"
    port = servers.free_port()
    server = servers.start_server("blockenv_oracle", port)
    graph = launch(f"db:={db}", f"report_dir:={tmp_path / 'rep'}", "start_policy_server:=false",
                   f"server_uri:=ws://127.0.0.1:{port}", "campaign_id:=kill", "action_timeout_s:=3.0")
    try:
        done = aborted = 0

        def going() -> bool:
            nonlocal done
            if db.exists():
                with ResultsStore(db) as store:
                    if store.has_campaign("kill"):
                        done = sum(r.status == "done" for r in store.rows("kill"))
            return done >= 8

        def any_aborted() -> bool:
            nonlocal aborted
            with ResultsStore(db) as store:
                aborted = sum(r.aborted_attempts for r in store.rows("kill"))
            return aborted > 0

        wait_until(going, 120)
        assert done >= 8, "the campaign never got going"
        servers.stop(server)  # mid-campaign
        wait_until(any_aborted, 60, poll=0.2)
        assert aborted >= 1, "no trial was marked aborted after the server died"
        with ResultsStore(db) as store:
            stalled = sum(r.status == "done" for r in store.rows("kill"))
        assert stalled < 50  # the campaign waited instead of finishing without a policy
        time.sleep(2.0)  # the server stays away a while: the campaign waits, retrying
        server = servers.start_server("blockenv_oracle", port)  # the server comes back
        out = finish(graph, timeout=300)
    finally:
        servers.stop(server)
        if graph.poll() is None:
            graph.kill()
    assert "retrying in" in out
    with ResultsStore(db) as store:
        rows = store.rows("kill")
        assert len(rows) == 50 and all(r.status == "done" and r.outcome is Outcome.SUCCESS for r in rows)
        assert sum(r.aborted_attempts for r in rows) >= 1
        n = store._db.execute("SELECT COUNT(*) FROM results WHERE campaign_id='kill'").fetchone()[0]
        assert n == 50  # no trial lost, none counted twice


def test_a_dead_launcher_and_ctrl_c_leave_the_campaign_interrupted_with_the_resume_command(tmp_path):
    """Found by an independent kill -9 harness: a graph stopped by Ctrl-C, or whose launcher
    died, left its campaign `running` for good (the manager waited out the scorer's commit
    without looking at its stop signal). Now the progression manager marks it `interrupted` and
    says how to resume: after a SIGKILL of the launcher (its nodes get SIGTERM from the kernel,
    PR_SET_PDEATHSIG) and after Ctrl-C; a launch with the same campaign_id finishes it with every
    trial once. (A SIGKILL of the progression manager alone is restarted by the launcher and the
    campaign goes on: test_kill9_graph.py.)"""
    import signal

    db, reports = tmp_path / "r.sqlite", tmp_path / "reports"
    port = servers.free_port()
    args = (f"db:={db}", f"report_dir:={reports}", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
            "campaign_id:=cut")

    def results() -> int:
        if not db.exists():
            return 0
        with ResultsStore(db) as store:
            return sum(1 for r in store.rows("cut") if r.outcome is not None) if store.has_campaign("cut") else 0

    def status() -> str:
        with ResultsStore(db) as store:
            return store.campaign("cut").status

    def resume_message() -> str:
        with ResultsStore(db) as store:
            return [e["message"] for e in store.events("cut") if e["kind"] == "status"][-1]

    proc = launch(*args)
    assert wait_until(lambda: results() >= 3, 180, poll=0.5), proc.output()[-3000:]
    proc.kill()  # the launcher dies at once (SIGKILL): its nodes are told by the kernel
    proc.wait(10)
    assert wait_until(lambda: status() == "interrupted", 60, poll=0.5), status()
    assert "launch again with campaign_id:=cut to resume" in resume_message()
    done_before = results()

    proc = launch(*args)
    assert wait_until(lambda: results() >= done_before + 3, 180, poll=0.5), proc.output()[-3000:]
    proc.send_signal(signal.SIGINT)  # the person's Ctrl-C in the launch terminal
    out = finish(proc, timeout=60, expect=None)
    assert status() == "interrupted", (status(), out[-3000:])
    assert "launch again with campaign_id:=cut to resume" in resume_message() and "campaign_id:=cut" in out
    out = finish(launch(*args), timeout=300)
    assert "campaign cut done" in out
    with ResultsStore(db) as store:
        rows = store.rows("cut")
        assert store.campaign("cut").status == "done" and all(r.status == "done" for r in rows) and len(rows) == 50
