"""An attempt is counted once, however often it is published. The progression manager publishes
a trial's result again each second until the store has it (progression_manager._commit); under
load a real scorer once took longer than that over an aborted attempt and recorded it twice
(`test_world_silence.py` under `scripts/under-load.sh`): a final result is refused the second time
by the store's "done" mark, an aborted attempt had nothing to refuse it by. The store now keeps
each attempt's signature, so a scorer restarted between two republishes refuses it too."""

from __future__ import annotations

import pytest

from helpers.procs import LoggedProcess, stop
from helpers.ros_helpers import spin_until
from indgen_core import graph, records
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign
from indgen_core.nodes import messages
from indgen_core.store import ResultsStore

pytestmark = [pytest.mark.ros]
rclpy = pytest.importorskip("rclpy")


def test_a_republished_aborted_attempt_is_recorded_once_and_a_new_one_again(tmp_path, ros_context):
    from indgen_core.ros import convert
    from indgen_core.ros.base import RELIABLE
    from indgen_msgs.msg import EpisodeResult

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        config = CampaignConfig(name="again", axis="blockenv_depth", world="blockenv", policies=["blockenv_oracle"],
                                trials_per_level=1, levels=[0], purpose="certify")
        record = plan_campaign(store, config, campaign_id="again")
        key = store.campaign_key(record.id)
        trial = store.planned_trials(record.id)[0].trial_id
    setup = records.TaskSetup(campaign_id="again", trial_id=trial, world="blockenv", axis="blockenv_depth", level=0,
                              in_distribution=True, parameters=(), trial_index=0, seed=1, policy="blockenv_oracle")
    command = [graph.executable_path("scorer"), "--ros-args", "-p", f"db:={db}", "-p", "write_report:=false"]
    scorer = LoggedProcess(command)
    node = rclpy.create_node("republisher", context=ros_context)
    results = node.create_publisher(EpisodeResult, "/indgen/episode_result", RELIABLE)

    def attempt(outcome, sec):
        result = records.TrialResult(trial, outcome, "the world went silent mid-episode")
        msg = convert.result_to_msg(result, setup)
        msg.header.stamp.sec = sec  # each attempt its own time, as the manager stamps them
        return messages.sign(msg, key)

    def attempts() -> list[str]:
        with ResultsStore(db) as store:
            return [a.outcome.word for a in store.attempts("again", trial)]

    try:
        assert spin_until(node, lambda: results.get_subscription_count() > 0, 30), scorer.output()[-2000:]
        first = attempt(records.Outcome.ABORTED, 1)
        results.publish(first)
        assert spin_until(node, lambda: attempts() == ["aborted"], 15), scorer.output()[-2000:]
        for _ in range(3):  # the manager's republishing, after the scorer committed it
            results.publish(first)
        # the scorer dies and comes back between two republishes: the new process has seen none
        # of them, and the store refuses the attempt it already has
        stop(scorer)
        scorer = LoggedProcess(command)
        assert spin_until(node, lambda: results.get_subscription_count() > 0, 30), scorer.output()[-2000:]
        results.publish(first)
        second = attempt(records.Outcome.ABORTED, 2)
        results.publish(second)  # a new attempt: counted; the republished ones before it are not
        assert spin_until(node, lambda: len(attempts()) >= 2, 15), scorer.output()[-2000:]
        final = attempt(records.Outcome.SUCCESS, 3)
        results.publish(final)
        results.publish(final)
        # one reliable writer: its messages arrive in order, so every republished one came before this
        assert spin_until(node, lambda: len(attempts()) >= 3, 15), scorer.output()[-2000:]
        assert attempts() == ["aborted", "aborted", "success"], scorer.output()[-2000:]
    finally:
        node.destroy_node()
        stop(scorer)
