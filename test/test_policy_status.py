"""The policy node's status names the trial it is about, and a world takes only a status for its
running trial as "the policy is up". Found in CI: a blind A/B campaign on the FR3 graph aborted
its first trial as "policy lost: switching policy server for the next trial", because the runner
started the episode on the previous server's "connected" before the policy node (starved on a
busy machine) had taken the trial's setup, and the switch that followed came after the start."""

from __future__ import annotations

import json
import os
import time

import pytest

from helpers import servers
from helpers.procs import LoggedProcess, stop
from helpers.ros_helpers import serve_routes, spinning
from indgen_core import graph, topics
from indgen_core.nodes.world_watch import WorldWatch
from indgen_core.waiting import wait_until

PolicyStatus = pytest.importorskip("indgen_msgs.msg").PolicyStatus


def _status(connected: bool, trial: str, message: str = "") -> object:
    return PolicyStatus(connected=connected, trial_id=trial, message=message or ("connected" if connected else "lost"))


class _Stamp:
    sec, nanosec = 5, 0


def test_the_previous_trials_connected_is_not_this_trials_and_its_switch_is_no_loss():
    watch = WorldWatch(policy_silence_s=5.0)
    watch.on_policy_status(_status(True, "A/k+0/000"))  # the first trial's server, still
    watch.begin("B/k+0/000", _Stamp())
    assert watch.waiting() == "the policy node has not taken the task setup of B/k+0/000 yet"
    started = time.monotonic()
    # the node takes B's setup now, after the start: it switches servers and warms up
    watch.on_policy_status(_status(False, "B/k+0/000", "switching policy server for the next trial"))
    assert watch.reason(started, grace_s=10.0) is None, "a switch for this trial is the policy coming up"
    assert watch.waiting() == "the policy node reports: switching policy server for the next trial"
    watch.on_policy_status(_status(True, "B/k+0/000"))
    assert watch.waiting() is None and watch.reason(started, 10.0) is None
    # up for this trial, then lost: that stops the episode at once, grace or not
    watch.on_policy_status(_status(False, "B/k+0/000", "the policy server at ws://h:1 closed the connection"))
    assert watch.reason(started, 10.0) == "policy lost: the policy server at ws://h:1 closed the connection"
    watch.end()


def test_a_policy_up_for_the_trial_before_its_start_is_lost_at_once_and_one_never_up_after_the_grace():
    watch = WorldWatch()
    watch.on_policy_status(_status(True, "t1"))
    watch.begin("t1", _Stamp())
    started = time.monotonic()
    assert watch.waiting() is None
    watch.on_policy_status(_status(False, "t1", "warming up"))
    assert watch.reason(started, 10.0) == "policy lost: warming up"
    watch.end()

    watch.begin("t2", _Stamp())  # the node is still down: waiting, then lost after the grace
    assert watch.reason(time.monotonic(), 10.0) is None
    assert watch.reason(time.monotonic() - 11.0, 10.0) == "policy lost: warming up"


@pytest.mark.ros
def test_the_policy_node_switches_servers_per_trial_and_names_the_trial_in_every_status(ros_context):
    """Two real servers, the real policy node, this test's node in the progression manager's
    place (routes and one setup per trial): every "connected" names the trial and the server
    routed for it; a setup that comes before the routes is not served until they come; a
    switch is announced for the new trial before its server is up; a new attempt of a trial on
    the same server needs no switch; and each server gets its warm-up."""
    import rclpy

    from indgen_core.records import TaskSetup
    from indgen_core.ros.base import LATCHED
    from indgen_core.ros.convert import setup_to_msg
    from indgen_msgs.msg import TaskSetup as TaskSetupMsg

    ports = {"a": servers.free_port(), "b": servers.free_port()}
    uris = {k: f"ws://127.0.0.1:{p}" for k, p in ports.items()}
    procs = [servers.start_server("droid_twin_oracle", port) for port in ports.values()]
    env = dict(os.environ)
    env.pop("MENAGERIE_ROOT", None)
    procs.append(LoggedProcess([graph.executable_path("policy_node"), "--ros-args", "-p", "spec:=droid",
                                "-p", f"server_uri:={uris['a']}", "-p", "robot:=fr3_robotiq_zed"], env=env))
    node = rclpy.create_node("manager_stand_in", context=ros_context)
    statuses: list = []
    node.create_subscription(PolicyStatus, topics.POLICY_STATUS, statuses.append, LATCHED)
    announce = serve_routes(node, {}, blind=False)
    setups = node.create_publisher(TaskSetupMsg, topics.TASK_SETUP, LATCHED)

    def take(trial: str, policy: str) -> int:
        setup = TaskSetup(campaign_id="c", trial_id=trial, world="fr3", axis="stack", level=0, in_distribution=True,
                          parameters=(), trial_index=0, seed=1, policy=policy, language_instruction="stack")
        mark = len(statuses)
        setups.publish(setup_to_msg(setup, node.get_clock().now().to_msg()))
        return mark

    def connected_for(trial: str, since: int) -> bool:
        return any(s.connected and s.trial_id == trial for s in statuses[since:])

    try:
        with spinning(node):
            assert wait_until(lambda: statuses, 60), procs[-1].output()[-2000:]
            # the first setup comes before the routes (one discovery can bring both at once):
            # its policy is routed to B, so the node, connected to A, must not say it is up
            mark = take("t1", "pb")
            assert wait_until(lambda: any(s.trial_id == "t1" and "waiting for the policy routes" in s.message
                                          for s in statuses[mark:]), 30), [s.message for s in statuses]
            announce({"pb": uris["b"]})
            assert wait_until(lambda: connected_for("t1", mark), 60), procs[-1].output()[-2000:]
            assert all(s.server_uri == uris["b"] for s in statuses[mark:] if s.connected)
            mark = take("t2", "pa")  # the default server: a switch, announced for t2 before A is up
            assert wait_until(lambda: connected_for("t2", mark), 60), procs[-1].output()[-2000:]
            about_t2 = [s for s in statuses[mark:] if s.trial_id == "t2"]
            assert not about_t2[0].connected and "switching" in about_t2[0].message
            assert all(s.server_uri == uris["a"] for s in about_t2 if s.connected)
            switches = sum("switching" in s.message for s in statuses)
            mark = take("t2", "pa")  # the trial's next attempt, same server
            assert wait_until(lambda: connected_for("t2", mark), 10)
            assert sum("switching" in s.message for s in statuses) == switches
            mark = take("t3", "pb")  # and back to B
            assert wait_until(lambda: connected_for("t3", mark), 60)
            assert all(s.server_uri == uris["b"] for s in statuses[mark:] if s.connected and s.trial_id == "t3")
            assert any('"policy": "droid_twin_oracle"' in s.metadata_json for s in statuses[:mark])  # it says so
            # a blind campaign: letters route, and no status names a server or says its metadata
            asked = announce.fetched[0]
            announce({"A": uris["a"], "B": uris["b"]}, blind=True)
            # the manager publishes its notice long before its first setup: the node has the
            # routes by then (a setup racing the notice is still hidden: PolicyNode._hiding)
            assert wait_until(lambda: announce.fetched[0] > asked, 30)
            time.sleep(0.5)
            mark = take("t4", "B")
            assert wait_until(lambda: connected_for("t4", mark), 60), procs[-1].output()[-2000:]
            stop(procs[1])  # B's server goes away mid-run: the loss names the letter's server only
            assert wait_until(lambda: any(not s.connected and "closed" in s.message for s in statuses[mark:]), 30)
            blind_view = statuses[mark:]
            for s in blind_view:
                text = f"{s.server_uri} {s.message} {s.metadata_json}"
                assert not any(str(port) in text for port in ports.values()) and "droid_twin_oracle" not in text, text
                assert set(json.loads(s.metadata_json)) <= {"robot_model"}
            assert {s.server_uri for s in blind_view if s.trial_id == "t4"} == {"policy B's server"}
            assert any(s.message.startswith("policy B's server closed the connection") for s in blind_view)
    finally:
        node.destroy_node()
        log = stop(procs[-1])
        for proc in procs[:-1]:
            stop(proc)
    # each server was warmed up before the node said it was connected to it
    for uri in uris.values():
        assert f"connected to the policy server at {uri}; warm-up answered in" in log, log[-2000:]
    blind_log = log[log.index("connected to policy B's server"):]  # the launch terminal: no address
    assert not any(str(port) in blind_log for port in ports.values()), blind_log[-2000:]
