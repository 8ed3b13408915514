"""The soft e-stop reaches every world node from every kind of publisher: a pedal node's
transient-local one, a script's volatile one, a best-effort button. The sim bridge read only
transient-local publishers (a volatile or best-effort e-stop never reached it; the FR3 runner
took any): both now read the topic through one rule (indgen_core/nodes/estop.py). The FR3 runner's
own timing is test_fr3_runner.py's `volatile_and_best_effort` case."""

from __future__ import annotations

import pytest

from helpers.procs import LoggedProcess, stop
from indgen_core import graph, topics
from indgen_core.nodes.estop import EstopTopic
from indgen_core.waiting import wait_until

pytestmark = [pytest.mark.ros]
rclpy = pytest.importorskip("rclpy")


def test_the_rule_engage_always_release_only_when_newer():
    rule = EstopTopic()
    assert rule.accept(True, {"source_timestamp": 200}) is True
    assert rule.accept(False, {"source_timestamp": 100}) is None  # a release from before the engage
    assert rule.accept(True, {"source_timestamp": 200}) is True  # the same engage on the second reader
    assert rule.accept(False, {"source_timestamp": 300}) is False
    assert rule.accept(False, {"source_timestamp": 300}) is None


def test_the_sim_bridge_takes_the_estop_from_volatile_best_effort_and_latched_publishers(ros_context):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Bool
    from std_srvs.srv import SetBool

    from helpers.ros_helpers import spin_until

    bridge = LoggedProcess([graph.executable_path("sim_bridge"), "--ros-args", "-p", "world:=blockenv"])
    node = rclpy.create_node("estop_sources", context=ros_context)
    release = node.create_client(SetBool, topics.ESTOP)
    kinds = {
        "volatile": QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE),
        "best effort": QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT),
        "transient local": QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                      durability=DurabilityPolicy.TRANSIENT_LOCAL),
    }
    try:
        assert spin_until(node, release.service_is_ready, 60), bridge.output()[-3000:]
        for name, qos in kinds.items():
            engaged = bridge.output().count("soft e-stop engaged")
            pub = node.create_publisher(Bool, topics.ESTOP, qos)
            assert spin_until(node, lambda p=pub: p.get_subscription_count() > 0, 20), name
            spin_until(node, lambda: False, 0.3)  # the bridge's reader matches this writer a moment later
            pub.publish(Bool(data=True))
            assert wait_until(lambda n=engaged: bridge.output().count("soft e-stop engaged") > n, 10), (
                f"a {name} e-stop did not reach the sim bridge\n{bridge.output()[-2000:]}")
            future = release.call_async(SetBool.Request(data=False))
            assert spin_until(node, future.done, 10) and future.result().success
            node.destroy_publisher(pub)
    finally:
        node.destroy_node()
        stop(bridge)


def test_indgen_estop_with_no_world_node_says_so_and_exits_1():
    """Nobody to take it (a graph not started, another domain id): one sentence that points at
    the hardware e-stop and exit 1, within the timeout given, not a hang."""
    import subprocess
    import time

    started = time.monotonic()
    out = subprocess.run([graph.executable_path("indgen"), "estop", "--timeout", "1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout.strip() == "nobody took the e-stop on /indgen/estop within 1 s: use the hardware e-stop"
    assert time.monotonic() - started < 30
