"""How long the progression manager waits on a quiet world: `world_silence_s` while an episode
runs, `reset_silence_s` while the world's latest feedback says it is resetting. A simulator
building its scene holds Python's interpreter (LIBERO: 1.3 to 1.6 s at a time on an idle
machine, bench/reset_quiet_bench.py), so its feedback thread goes quiet
for longer under load; CI saw LIBERO trials aborted three times over for it. Feedback from an
attempt the manager gave up on, still running in the world, does not count for the next. The real
progression manager and scorer run as processes; this test is the world (the RunEpisode
server, feedback phases as the sim bridge and the FR3 runner send them)."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time

import pytest

from helpers import procs
from helpers.procs import LoggedProcess
from indgen_core import graph, topics
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore

pytestmark = [pytest.mark.ros]
rclpy = pytest.importorskip("rclpy")
QUIET_S = 2.0  # longer than world_silence_s (1 s); twice it shorter than reset_silence_s (8 s)


class QuietWorld:
    """Trial 0: quiet for QUIET_S while resetting, then succeeds. Trial 1, first attempt: quiet
    for QUIET_S while running (the manager gives up on it and starts the second), then one more
    "running" feedback, stale by then; second attempt, run beside it: quiet for 2 QUIET_S while
    resetting, then succeeds. Goals run in parallel, as the sim bridge's would."""

    def __init__(self, node):
        from rclpy.action import ActionServer
        from rclpy.callback_groups import ReentrantCallbackGroup

        from indgen_msgs.action import RunEpisode

        self.RunEpisode, self.goals = RunEpisode, []
        self.server = ActionServer(node, RunEpisode, topics.RUN_EPISODE, self._execute,
                                   callback_group=ReentrantCallbackGroup())

    def _execute(self, goal_handle):
        from indgen_msgs.msg import EpisodeResult

        setup = goal_handle.request.setup
        self.goals.append(setup.trial_id)
        script = {(0, 1): [("resetting", QUIET_S), ("running", 0)],
                  (1, 1): [("resetting", 0), ("running", QUIET_S), ("running", 0)],
                  (1, 2): [("resetting", 2 * QUIET_S), ("running", 0)]}
        prompt = [("resetting", 0), ("running", 0)]
        for step, (phase, quiet) in enumerate(script.get((setup.trial_index, self.goals.count(setup.trial_id)),
                                                          prompt)):
            goal_handle.publish_feedback(self.RunEpisode.Feedback(phase=phase, step=step, max_steps=setup.max_steps))
            time.sleep(quiet)
        goal_handle.succeed()
        result = EpisodeResult(campaign_id=setup.campaign_id, trial_id=setup.trial_id, world=setup.world,
                               axis=setup.axis, policy=setup.policy, level=setup.level,
                               trial_index=setup.trial_index, seed=setup.seed,
                               outcome=EpisodeResult.OUTCOME_SUCCESS, reason="done", steps=2)
        return self.RunEpisode.Result(result=result)


@contextlib.contextmanager
def _spinning_in_parallel(node):
    from rclpy.executors import MultiThreadedExecutor

    executor = MultiThreadedExecutor(num_threads=4, context=node.context)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        executor.shutdown(timeout_sec=5)
        thread.join(5)


def test_a_world_may_be_quiet_longer_while_resetting_than_while_running(tmp_path, ros_context):
    campaign = tmp_path / "quiet.yaml"
    campaign.write_text("name: quiet\naxis: stack\nworld: droid_twin\npolicies: [droid_twin_oracle]\n"
                        "trials_per_level: 2\nlevels: [0]\nseed: 3\n")
    db = tmp_path / "r.sqlite"
    scorer = LoggedProcess([graph.executable_path("scorer"), "--ros-args", "-p", f"db:={db}",
                            "-p", "write_report:=false"])
    pm = LoggedProcess([graph.executable_path("progression_manager"), "--ros-args", "-p", f"campaign:={campaign}",
                        "-p", "campaign_id:=quiet", "-p", f"db:={db}", "-p", "allow_uncertified:=true",
                        "-p", "override_reason:='test: a scripted world'", "-p", "world_silence_s:=1.0",
                        "-p", "reset_silence_s:=8.0", "-p", "abort_backoff_s:=0.1"])
    node = rclpy.create_node("quiet_world", context=ros_context)
    world = QuietWorld(node)
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(lambda: [procs.stop(p) for p in (pm, scorer)])
        cleanup.callback(node.destroy_node)
        cleanup.enter_context(_spinning_in_parallel(node))
        try:
            pm.wait(120)
        except subprocess.TimeoutExpired:
            pytest.fail("the campaign did not finish:\n" + pm.output()[-4000:])
    assert pm.returncode == 0, pm.output()[-4000:]
    with ResultsStore(db) as store:
        rows = store.rows("quiet")
        assert [r.outcome for r in rows] == [Outcome.SUCCESS, Outcome.SUCCESS], pm.output()[-4000:]
        first, second = (r.trial_id for r in sorted(rows, key=lambda r: r.trial_index))
        assert [a.outcome for a in store.attempts("quiet", first)] == [Outcome.SUCCESS]  # quiet in its reset: waited
        attempts = store.attempts("quiet", second)
        # quiet while running: aborted, then run again
        assert [a.outcome for a in attempts] == [Outcome.ABORTED, Outcome.SUCCESS], pm.output()[-3000:]
        assert attempts[0].reason == "the world went silent mid-episode (no feedback for 1 s, running)"
    assert world.goals == [first, second, second]
