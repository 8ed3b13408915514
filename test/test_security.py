"""Only the campaign's own nodes count: forged results and DONEs are refused by a real scorer,
operator answers are accepted only from a registered console for the open prompt, and no id
becomes a path outside its folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.procs import LoggedProcess
from helpers.ros_helpers import call_with_retry, spin_until
from indgen_core import graph, paths, records
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until

rclpy = pytest.importorskip("rclpy")


def _node_process(executable: str, *params: str) -> subprocess.Popen:
    argv = [graph.executable_path(executable), "--ros-args"]
    for p in params:
        argv += ["-p", p]
    return LoggedProcess(argv)


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.output()


def _blockenv_campaign(store, cid="sec", trials=1, levels=(0,)):
    config = CampaignConfig(name="sec", axis="blockenv_depth", world="blockenv", policies=["blockenv_oracle"],
                            trials_per_level=trials, levels=list(levels), purpose="certify")
    return plan_campaign(store, config, campaign_id=cid)


@pytest.mark.ros
def test_the_scorer_commits_only_results_and_dones_signed_with_the_campaign_key(tmp_path, ros_context):
    from indgen_core.nodes import messages
    from indgen_core.ros import convert
    from indgen_core.ros.base import LATCHED, RELIABLE
    from indgen_msgs.msg import CampaignStatus, EpisodeResult

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        record = _blockenv_campaign(store, trials=2)
        key = store.campaign_key(record.id)
        trials = [t.trial_id for t in store.planned_trials(record.id)]
    setup = records.TaskSetup(campaign_id="sec", trial_id=trials[0], world="blockenv", axis="blockenv_depth",
                              level=0, in_distribution=True, parameters=(), trial_index=0, seed=1,
                              policy="blockenv_oracle")
    scorer = _node_process("scorer", f"db:={db}", f"report_dir:={tmp_path / 'reports'}")
    node = rclpy.create_node("forger", context=ros_context)
    results = node.create_publisher(EpisodeResult, "/indgen/episode_result", RELIABLE)
    status = node.create_publisher(CampaignStatus, "/indgen/campaign_status", LATCHED)

    def result(trial_id, outcome=records.Outcome.FAILURE):
        return convert.result_to_msg(records.TrialResult(trial_id, outcome, "forged"), setup)

    def attempts(trial_id) -> int:
        with ResultsStore(db) as store:
            return store.attempt_count("sec", trial_id)

    def publish_until(pub, msg, done, timeout=8.0) -> bool:
        def published_and_done() -> bool:  # publish again each half second until it is done
            pub.publish(msg)
            return spin_until(node, done, 0.5)

        return wait_until(published_and_done, timeout, poll=0.0)

    try:
        assert spin_until(node, lambda: results.get_subscription_count() > 0, 30)
        forged = [result(trials[0]),  # unsigned
                  messages.sign(result(trials[0]), b"\x00" * 32),  # signed with another key
                  messages.sign(result(trials[0]), key)]
        forged[2].trial_id = trials[1]  # signed, then changed
        for msg in forged:
            assert not publish_until(results, msg, lambda: attempts(trials[0]) + attempts(trials[1]) > 0, 3.0)
        genuine = messages.sign(result(trials[0], records.Outcome.SUCCESS), key)
        assert publish_until(results, genuine, lambda: attempts(trials[0]) == 1)

        done = CampaignStatus(campaign_id="sec", state=CampaignStatus.STATE_DONE, message="forged")
        report = tmp_path / "reports" / "sec" / "report.html"
        assert not publish_until(status, done, report.exists, 3.0)  # unsigned DONE
        assert not publish_until(status, messages.sign(done, key), report.exists, 3.0)  # the store says: not done
        assert publish_until(results, messages.sign(result(trials[1], records.Outcome.SUCCESS), key),
                             lambda: attempts(trials[1]) == 1)
        with ResultsStore(db) as store:
            store.set_status("sec", "done")
        genuine_done = messages.sign(CampaignStatus(campaign_id="sec", state=CampaignStatus.STATE_DONE), key)
        assert publish_until(status, genuine_done, report.exists, 15.0)
    finally:
        node.destroy_node()
        out = _stop(scorer)
    with ResultsStore(db) as store:
        assert [r.outcome for r in store.rows("sec")] == [Outcome.SUCCESS, Outcome.SUCCESS]
    assert "refused a result for trial" in out and "not signed by that campaign's progression manager" in out
    assert "ignored DONE for sec: the store says it is planned" in out or "the store says it is" in out


@pytest.mark.ros
def test_operator_answers_only_from_a_registered_console_for_the_open_prompt(tmp_path, ros_context):
    from indgen_core.ros.base import LATCHED
    from indgen_msgs.msg import OperatorPrompt
    from indgen_msgs.srv import OperatorAck, OperatorRegister

    campaign = tmp_path / "stack.yaml"
    campaign.write_text("name: sec\naxis: stack\nworld: droid_twin\npolicies: [droid_twin_oracle]\n"
                        "trials_per_level: 1\nlevels: [0, 1]\n")
    pm = _node_process("progression_manager", f"campaign:={campaign}", "campaign_id:=ops", f"db:={tmp_path / 'r.db'}",
                       "allow_uncertified:=true", "override_reason:='test: no world runs'",
                       # it asks this test's prepare service (found within server_wait_s, or
                       # the trial is aborted with no prompt: 1 s was too short on a loaded machine)
                       "wait_for_operator:=true", "server_wait_s:=15.0")
    node = rclpy.create_node("console_test", context=ros_context)
    from indgen_msgs.srv import PrepareTrial

    def ready(request, response):  # the world's prepare, so that the manager gets to the prompt
        response.ready, response.message = True, "ready"
        return response

    node.create_service(PrepareTrial, "/indgen/prepare_trial", ready)
    prompts = []
    node.create_subscription(OperatorPrompt, "/indgen/operator_prompt", prompts.append, LATCHED)
    ack = node.create_client(OperatorAck, "/indgen/operator_ack")
    register = node.create_client(OperatorRegister, "/indgen/operator_register")

    def answer(prompt_id, console="", session="", response=OperatorAck.Request.RESPONSE_DONE):
        future = call_with_retry(node, lambda: ack.call_async(OperatorAck.Request(
            prompt_id=prompt_id, response=response, console_id=console, session=session)))
        assert future is not None, "no answer from /indgen/operator_ack"
        return future.result()

    def join(console, role):
        future = call_with_retry(node, lambda: register.call_async(OperatorRegister.Request(
            console_id=console, operator_name="ada", role=role)))
        assert future is not None
        return future.result()

    try:
        assert spin_until(node, lambda: any(p.kind == OperatorPrompt.KIND_SETUP for p in prompts), 60)
        assert spin_until(node, ack.service_is_ready, 10) and spin_until(node, register.service_is_ready, 10)
        prompt = [p for p in prompts if p.kind == OperatorPrompt.KIND_SETUP][-1]
        assert "blue block" in prompt.text

        foreign = answer(prompt.prompt_id)
        assert not foreign.accepted and "registered on /indgen/operator_register" in foreign.message
        watcher = join("watch-1", OperatorRegister.Request.ROLE_WATCH)
        assert watcher.accepted and watcher.prompt.prompt_id == prompt.prompt_id  # the open prompt, queryable
        refused = answer(prompt.prompt_id, "watch-1", watcher.session)
        assert not refused.accepted and "only watches" in refused.message
        operator = join("op-1", OperatorRegister.Request.ROLE_OPERATE)
        second = join("op-2", OperatorRegister.Request.ROLE_OPERATE)
        assert not answer(prompt.prompt_id, "op-1", "not-the-session").accepted
        assert not answer("stale-prompt", "op-1", operator.session).accepted
        first = answer(prompt.prompt_id, "op-1", operator.session)
        assert first.accepted, first.message
        late = answer(prompt.prompt_id, "op-2", second.session)  # one answer per prompt
        assert not late.accepted and "no open prompt" in late.message
    finally:
        node.destroy_node()
        _stop(pm)


def test_ids_are_slugs_and_paths_stay_inside_their_folder(tmp_path):
    for bad in ("../../x", "/etc/passwd", "a/b", "..", "a..b", "", "-x", "x" * 129, "sp ace"):
        with pytest.raises(paths.UnsafePath, match="is not allowed"):
            paths.check_id(bad)
    assert paths.check_id("stack-20261201.a_1") == "stack-20261201.a_1"
    assert paths.inside(tmp_path, "c1", "report.html") == (tmp_path / "c1" / "report.html").resolve()
    for parts in (("..", "x"), ("/abs",), ("a", "../../b")):
        with pytest.raises(paths.UnsafePath, match="would leave the folder"):
            paths.inside(tmp_path, *parts)
    (tmp_path / "link").symlink_to("/")
    with pytest.raises(paths.UnsafePath):
        paths.inside(tmp_path, "link", "etc")
    with pytest.raises(Exception, match="policy names"):
        CampaignConfig(name="x", axis="stack", world="droid_twin", policies=[".."], trials_per_level=1)
    with pytest.raises(Exception, match="group"):
        CampaignConfig(name="x", axis="stack", world="droid_twin", policies=["p"], trials_per_level=1, group="../g")


@pytest.mark.parametrize("campaign_id", ["../../x", "/tmp/evil"])
def test_a_campaign_id_that_is_a_path_is_refused_in_one_sentence(tmp_path, repo, campaign_id):
    config = repo / "config" / "campaigns" / "blockenv_oracle.yaml"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "run", str(config), "--id",
                           campaign_id, "--db", str(tmp_path / "r.db")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"indgen: error: campaign id {campaign_id!r} is not allowed: use "
                                                "1-128 letters, digits, '.', '_' or '-', starting with a letter or "
                                                "digit (no '/', no '..')"]
    assert not Path("/tmp/evil").exists()
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.campaigns() == []  # refused before anything was planned or written
    pm = subprocess.run([graph.executable_path("progression_manager"), "--ros-args", "-p",
                         f"campaign:={config}", "-p", f"campaign_id:={campaign_id}", "-p",
                         f"db:={tmp_path / 'r.db'}"], capture_output=True, text=True, timeout=60)
    assert pm.returncode == 2 and "is not allowed" in pm.stderr and "Traceback" not in pm.stderr
    report = subprocess.run([sys.executable, "-m", "indgen_core.cli", "report", "--group", "../up", "--db",
                             str(tmp_path / "r.db")], capture_output=True, text=True, timeout=60)
    assert report.returncode == 2 and "Traceback" not in report.stderr


def test_every_subscription_and_service_of_every_node_is_guarded(repo):
    """The fuzz test covers the graphs it runs; this keeps new nodes on the guarded path."""
    offenders = []
    for path in sorted((repo / "src").rglob("*.py")):
        if path.parent.name == "ros" and path.parent.parent.name == "indgen_core" and path.name in (
            "base.py",
            "latest.py",  # a subscription no executor spins: its callback never runs (samples are taken)
        ):
            continue
        text = path.read_text()
        for call in ("create_subscription(", "create_service("):
            if call in text:
                offenders.append(f"{path.relative_to(repo)}: {call}")
    assert offenders == [], "use indgen_core.ros.base.subscribe / serve: " + ", ".join(offenders)
