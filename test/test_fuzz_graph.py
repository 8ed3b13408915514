"""Garbage on every topic and service of a running graph: no node dies, and the campaign
still completes with the results an undisturbed run gives (none lost, none doubled).

The topics are not listed here: the test asks the running graph which topics (and types)
each of its nodes subscribes, and publishes random and extreme messages of exactly those
types (fuzz.py) to every one, several rounds. The graph is started without its policy
server, so the campaign cannot finish while the garbage flows; then the server starts and
the campaign runs to completion on the same, never restarted, nodes."""

from __future__ import annotations

import collections
import os
import random

import pytest
import yaml

from helpers import fuzz, graphs, servers
from helpers.ros_helpers import spin_until
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore

pytestmark = [pytest.mark.slow, pytest.mark.ros]

rclpy = pytest.importorskip("rclpy")

GRAPH_NODES = {
    "blockenv_axis": ["progression_manager", "sim_bridge", "sim_bridge_io", "policy_node", "scorer"],
    "stack_axis": ["progression_manager", "sim_bridge", "sim_bridge_io", "policy_node", "scorer"],
}


def _campaign(tmp_path, profile: str) -> tuple[str, list[str]]:
    if profile == "blockenv_axis":
        return "campaigns/blockenv_oracle.yaml", []
    path = tmp_path / "twin.yaml"
    path.write_text(yaml.safe_dump({"name": "fz", "axis": "stack", "world": "droid_twin",
                                    "policies": ["droid_twin_oracle"], "levels": [0, 1], "trials_per_level": 1,
                                    "seed": 3, "purpose": "certify"}))  # one trial a level: what is fuzzed is the graph
    return str(path), ["cameras:=exterior_1,wrist", "builtin_fr3:=true"]


def _subscriptions(node, names: list[str]) -> dict[str, list[tuple[str, str]]]:
    assert spin_until(node, lambda: set(names) <= {n for n, _ in node.get_node_names_and_namespaces()}, 60), (
        f"graph nodes not all up: {node.get_node_names()}")
    out: dict[str, list[tuple[str, str]]] = {}

    def subscriptions_of(name: str) -> bool:
        try:
            out[name] = [(topic, types[0]) for topic, types in node.get_subscriber_names_and_types_by_node(name, "/")]
        except Exception:  # NodeNameNonExistentError while discovery settles
            out[name] = []
        return bool(out[name])

    for name in names:
        spin_until(node, lambda name=name: subscriptions_of(name), 20)
    return out


def _services(node, names: list[str]) -> list[tuple[str, str]]:
    """IndGen's own services of the graph (an action's internal services are rclpy's: a
    fuzzed goal would just queue an episode, see docs/security.md)."""
    found = set()
    for name in names:
        for service, types in node.get_service_names_and_types_by_node(name, "/"):
            if service.startswith("/indgen/") and "/_action/" not in service:
                found.add((service, types[0]))
    return sorted(found)


def release_estop(node) -> None:
    from std_srvs.srv import SetBool

    from helpers.ros_helpers import call_with_retry

    client = node.create_client(SetBool, "/indgen/estop")
    assert spin_until(node, client.service_is_ready, 30), "no /indgen/estop service to release the e-stop"
    # the graph is still digesting the fuzz (and recording it) on two cores: allow it time
    future = call_with_retry(node, lambda: client.call_async(SetBool.Request(data=False)), timeout=60.0,
                             attempt_timeout=5.0)
    assert future is not None and future.result().success
    node.destroy_client(client)


def _service_class(type_name: str):
    import importlib

    pkg, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.srv"), name)


@pytest.mark.parametrize("profile", ["blockenv_axis", "stack_axis"])
def test_garbage_on_every_subscription_kills_no_node_and_the_campaign_completes(tmp_path, ros_context, profile):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    db = tmp_path / "r.sqlite"
    port = servers.free_port()
    policy = "blockenv_oracle" if profile == "blockenv_axis" else "droid_twin_oracle"
    campaign, extra = _campaign(tmp_path, profile)
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "artifacts"))
    proc = graphs.launch(profile, f"db:={db}", f"report_dir:={tmp_path / 'rep'}", "start_policy_server:=false",
                         f"server_uri:=ws://127.0.0.1:{port}", f"campaign:={campaign}", "campaign_id:=fz",
                         "action_timeout_s:=3.0", *extra, env=env)
    server = None
    node = rclpy.create_node("fuzzer", context=ros_context)
    # reliable + transient local reaches every subscriber, whatever QoS it asked for
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    rng = random.Random(17)
    sent: dict[str, int] = {}
    calls = []
    try:
        subs = _subscriptions(node, GRAPH_NODES[profile])
        topics = sorted({pair for pairs in subs.values() for pair in pairs})
        assert any(t == "/indgen/episode_result" for t, _ in topics) and any(t == "/indgen/task_setup" for t, _ in
                                                                          topics)
        services = _services(node, GRAPH_NODES[profile])
        assert ("/indgen/operator_ack", "indgen_msgs/srv/OperatorAck") in services
        pubs = {(t, ty): node.create_publisher(fuzz.message_class(ty), t, qos) for t, ty in topics}
        # 15 calls a service in flight at once: a reply queue of ROS' default 10 drops the rest
        # (base.REQUESTS says why the servers keep 100)
        from indgen_core.ros.base import REQUESTS

        clients = {(s, ty): node.create_client(_service_class(ty), s, qos_profile=REQUESTS) for s, ty in services}
        spin_until(node, lambda: False, 1.0)  # let the publishers match
        # a request sent before its service has matched this client is lost to discovery, not to
        # a node (5 of 75 calls once, on a loaded machine): call as a client should, once ready
        assert spin_until(node, lambda: all(c.service_is_ready() for c in clients.values()), 60), \
            [s for (s, _), c in clients.items() if not c.service_is_ready()]
        # and the replies' way back: one plain call each, answered, before the garbage (a reply
        # sent before the server matched this client's reply reader is lost to discovery too:
        # 1 to 5 of 75 fuzzed calls on a loaded machine, with a 0.5 s wait in place of this)
        warm = [c.call_async(_service_class(ty).Request()) for (_, ty), c in clients.items()]
        assert spin_until(node, lambda: all(f.done() for f in warm), 60), "a service did not answer a plain call"
        for _round in range(3):
            for (topic, type_name), pub in pubs.items():
                cls = fuzz.message_class(type_name)
                for _ in range(12):
                    pub.publish(fuzz.fuzz(cls, rng))
                    sent[topic] = sent.get(topic, 0) + 1
            for (service, type_name), client in clients.items():
                cls = _service_class(type_name)
                for _ in range(5):
                    calls.append((service, client.call_async(fuzz.fuzz(cls.Request, rng))))
            spin_until(node, lambda: False, 1.5)
        # a fuzzed e-stop holds the world until someone releases it, as it should; the operator
        # does, once the graph has digested the garbage: a fuzzed "engage" still queued behind
        # the release would hold the world for good. The last message on the e-stop topic is a
        # release (one publisher's messages arrive in order), and every fuzzed call is answered.
        from std_msgs.msg import Bool

        for (topic, _), pub in pubs.items():
            if topic == "/indgen/estop":
                pub.publish(Bool(data=False))
        answered = spin_until(node, lambda: all(c.done() for _, c in calls), 120)
        assert proc.poll() is None, "the graph stopped while fuzzed"
        unanswered = collections.Counter(s for s, c in calls if not c.done())
        # with the graph's log (once, 2 of 75 unanswered, both /indgen/end_episode, and none kept)
        assert answered, (f"{sum(unanswered.values())} of {len(calls)} fuzzed service calls never answered: "
                          f"{unanswered}\n{proc.output()[-8000:]}")
        release_estop(node)
        for pub in pubs.values():
            node.destroy_publisher(pub)
        server = servers.start_server(policy, port)  # now the campaign can run
        out = graphs.finish(proc, timeout=360)  # under the test's own timeout: a failure shows the log
    finally:
        node.destroy_node()
        if server is not None:
            servers.stop(server)
        if proc.poll() is None:
            proc.kill()
    (tmp_path / "launch.log").write_text(out)
    assert "died with status" not in out and "restarting it" not in out, out[-5000:]
    assert "campaign fz done" in out
    # the garbage reached the nodes and was dropped there, one line each kind at most every 5 s
    assert out.count("dropped a ") + out.count("refused ") >= 3, out[-5000:]
    assert "Traceback" not in out, out[out.index("Traceback") - 2000:][:6000]
    # one line per dropped message, not the garbage itself: a log line stays short
    longest = max(out.splitlines(), key=len)
    assert len(longest) < 1500, longest[:1500]
    with ResultsStore(db) as store:
        rows = store.rows("fz")
        assert len(rows) == len(store.planned_trials("fz"))  # none lost
        assert rows and all(r.status == "done" and r.outcome is Outcome.SUCCESS for r in rows)
        n = store._db.execute("SELECT COUNT(*) FROM results WHERE campaign_id='fz'").fetchone()[0]
        assert n == len(rows)  # nothing counted twice, nothing forged committed
    assert sum(sent.values()) > 100 and len(sent) >= 5, sent
