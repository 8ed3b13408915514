"""The console's link to the graph: two consoles on one prompt (one answer accepted), and the
rehearsal mode in simulation (the twin's own check beside the person's label, disagreements
counted in the report)."""

from __future__ import annotations

import os

import pytest
import yaml

from helpers import graphs, servers
from helpers.scripted_operator import ScriptedOperator
from indgen_core import graph
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until
from indgen_robot.console import model as m

pytestmark = [pytest.mark.ros, pytest.mark.realtime]
rclpy = pytest.importorskip("rclpy")


def test_two_consoles_on_one_prompt_one_answer_is_accepted(tmp_path, ros_context):
    import contextlib
    import subprocess

    from helpers.ros_helpers import spinning
    from indgen_msgs.srv import PrepareTrial
    from indgen_robot.ros.console_link import ConsoleLink

    campaign = tmp_path / "stack.yaml"
    campaign.write_text("name: two\naxis: stack\nworld: droid_twin\npolicies: [droid_twin_oracle]\n"
                        "trials_per_level: 1\nlevels: [0]\n")
    pm = subprocess.Popen([graph.executable_path("progression_manager"), "--ros-args", "-p", f"campaign:={campaign}",
                           "-p", "campaign_id:=two", "-p", f"db:={tmp_path / 'r.db'}", "-p", "allow_uncertified:=true",
                           "-p", "override_reason:='test: no world runs'", "-p", "wait_for_operator:=true",
                           "-p", "server_wait_s:=10.0", "-p", "prepare_timeout_s:=5.0"],
                          stdout=(tmp_path / "pm.log").open("w"),  # a file: an unread pipe fills and blocks it
                          stderr=subprocess.STDOUT, text=True)
    world = rclpy.create_node("world", context=ros_context)

    def ready(request, response):
        response.ready, response.message = True, "ready"
        return response

    world.create_service(PrepareTrial, "/indgen/prepare_trial", ready)
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(lambda: (pm.terminate(), pm.wait(15)))
        cleanup.callback(world.destroy_node)
        cleanup.enter_context(spinning(world, period=0.05))  # stops first, before the node goes
        a, b = m.ConsoleModel(operator="ada"), m.ConsoleModel(operator="bob")
        link_a, link_b = ConsoleLink(a, ros_context), ConsoleLink(b, ros_context)
        watcher_model = m.ConsoleModel(operator="eve", role="watch")
        watcher = ConsoleLink(watcher_model, ros_context, watch=True)
        try:
            assert wait_until(lambda: a.state == m.SETUP and b.state == m.SETUP and link_a.session and link_b.session,
                              60, poll=0.05), (tmp_path / "pm.log").read_text()[-3000:]
            assert watcher_model.press("enter") == [] and "only watches" in watcher_model.message
            answers = [model.press("enter") for model in (a, b)]
            results = [link._deliver(req[0]) for link, req in zip((link_a, link_b), answers, strict=True)]
            accepted = [r for r in results if r.endswith(": scene ready: the trial starts")]
            refused = [r for r in results if r.startswith("refused: no open prompt")]
            assert len(accepted) == 1 and len(refused) == 1, results
            assert "\n" not in refused[0]
        finally:
            for link in (link_a, link_b, watcher):
                link.close()


@pytest.mark.slow
def test_rehearsal_in_sim_shows_the_twins_check_and_counts_disagreements(tmp_path, ros_context):
    campaign = tmp_path / "r.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rehearse", "axis": "stack", "world": "droid_twin",
                                        "policies": ["droid_twin_oracle"], "levels": [0], "trials_per_level": 2,
                                        "seed": 1, "purpose": "certify"}))
    labels = iter(["failure", "success"])  # the first disagrees with the twin's success
    seen = []

    def label(prompt):
        seen.append(prompt.auto_outcome)
        return next(labels)

    operator = ScriptedOperator(ros_context, labels=label, build_scene=False, end_when_placed=False)
    port = servers.free_port()
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "art"))
    env.pop("MENAGERIE_ROOT", None)
    try:
        out = graphs.finish(graphs.launch("stack_axis", "sim:=true", "operator:=true", "builtin_fr3:=true",
                                          f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
                                          f"db:={tmp_path / 'r.sqlite'}", f"report_dir:={tmp_path / 'reports'}",
                                          f"campaign:={campaign}", "campaign_id:=rehearse", "level_images:=false",
                                          env=env), timeout=300)
    finally:
        operator.close()
    assert "run `indgen console` in another terminal" in out
    assert seen == ["success", "success"]  # the twin's own verdict, shown beside the label
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert [r.outcome for r in store.rows("rehearse")] == [Outcome.FAILURE, Outcome.SUCCESS]
        assert store.operator_counts("rehearse")[("droid_twin_oracle", 0)]["disagreements"] == 1
    report = (tmp_path / "reports" / "rehearse" / "report.md").read_text()
    assert "| droid_twin_oracle | 0 | 2 | 0 | 0 | 0 | 0 | 1 |" in report


def test_after_the_graph_exits_the_screen_says_so_and_offers_no_pause(ros_context):
    """Found by hand: after the campaign was done and the graph had exited, the console still
    showed "policy server: connected" (the last latched status of a node long gone) and `p`
    said a pause was requested. The console reads who is still on the graph."""
    from indgen_core import topics
    from indgen_core.ros.base import LATCHED
    from indgen_msgs.msg import CampaignStatus, PolicyStatus, RobotStatus
    from indgen_robot.console.screen import render
    from indgen_robot.ros.console_link import ConsoleLink

    graph_node = rclpy.create_node("the_graph", context=ros_context)
    status = graph_node.create_publisher(CampaignStatus, topics.CAMPAIGN_STATUS, LATCHED)
    policy = graph_node.create_publisher(PolicyStatus, topics.POLICY_STATUS, LATCHED)
    robot = graph_node.create_publisher(RobotStatus, topics.ROBOT_STATUS, LATCHED)
    status.publish(CampaignStatus(campaign_id="c1", state=CampaignStatus.STATE_RUNNING, trials_done=1, trials_total=4))
    policy.publish(PolicyStatus(connected=True, message="connected"))
    robot.publish(RobotStatus(state=RobotStatus.STATE_IDLE, message="idle"))
    model = m.ConsoleModel(operator="ada")
    link = ConsoleLink(model, ros_context)
    try:
        assert wait_until(lambda: model.policy_connected and model.campaign == "c1" and model.robot_state == "idle", 30)
        link.refresh()
        assert "policy server: connected" in render(model) and not model.campaign_gone
        graph_node.destroy_node()  # the launch ends
        assert wait_until(lambda: link.refresh() or model.campaign_gone, 30, poll=0.1)
        screen = render(model)
        assert "policy server: unknown (no policy node on the graph)" in screen, screen
        assert "robot: unknown (no robot node on the graph)" in screen and "its graph has exited" in screen, screen
        assert model.press("p") == [] and "nothing to pause" in model.message
    finally:
        link.close()
