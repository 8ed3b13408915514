"""A node's declared parameters and endpoints hold: parameters are read once into a typed
dataclass (a wrong type is one sentence), and with INDGEN_CHECK_ENDPOINTS=1 a node that creates
a topic, service or action its class does not declare is refused, by name. The graph tests
run every node under that check (conftest sets it); these cases show it bites."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from indgen_core.errors import IndGenError
from indgen_core.nodes.declarations import (
    calls_action,
    param,
    parameter_docs,
    publishes,
    serves,
    subscribes,
    undeclared,
)

pytestmark = pytest.mark.ros


def test_placeholders_match_what_a_parameter_or_the_robot_configuration_fills_in():
    camera = publishes("/cameras/<name>/image_raw", "sensor_msgs/msg/Image", "frames")
    assert camera.matches("publishes", "/cameras/wrist/image_raw", "sensor_msgs/msg/Image")
    assert not camera.matches("publishes", "/cameras/wrist/depth", "sensor_msgs/msg/Image")
    assert not camera.matches("subscribes", "/cameras/wrist/image_raw", "sensor_msgs/msg/Image")
    assert not camera.matches("publishes", "/cameras/wrist/image_raw", "sensor_msgs/msg/CompressedImage")
    anything = subscribes("<every topic>", "*", "all")
    assert anything.matches("subscribes", "/x/y", "std_msgs/msg/String")
    created = {("publishes", "/cameras/a/image_raw", "sensor_msgs/msg/Image"), ("serves", "/x", "std_srvs/srv/Trigger")}
    assert undeclared((camera,), created) == [("serves", "/x", "std_srvs/srv/Trigger")]


@dataclass(frozen=True)
class ProbeParameters:
    rate_hz: float = param(15.0, "frames per second")
    name: str = param("", "what it is called")
    loop: bool = param(False, "start again at the end")


def test_parameter_docs_come_from_the_declaration():
    rows = parameter_docs(ProbeParameters)
    assert [(r.name, r.type, r.default, r.help) for r in rows] == [
        ("rate_hz", "float", 15.0, "frames per second"),
        ("name", "string", "", "what it is called"),
        ("loop", "bool", False, "start again at the end"),
    ]


def test_read_parameters_types_and_the_endpoint_check_refuse_with_one_sentence(ros_context, monkeypatch):
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from indgen_core.ros.base import check_endpoints, created_endpoints, read_parameters

    node_cls = type("ProbeNode", (Node,), {"ENDPOINTS": (publishes("/probe/out", "std_msgs/msg/String", "out"),)})
    node = node_cls("probe", context=ros_context, parameter_overrides=[Parameter("rate_hz", value=30.0)])
    bad = node_cls("probe_bad", context=ros_context,
                   parameter_overrides=[Parameter("rate_hz", Parameter.Type.STRING, "fast")])
    try:
        p = read_parameters(node, ProbeParameters)
        assert p == ProbeParameters(rate_hz=30.0)  # set where given, the default elsewhere
        with pytest.raises(AttributeError):
            p.rate_hz = 1.0  # type: ignore[misc]  # read once: frozen
        with pytest.raises(IndGenError, match=r"parameter 'rate_hz' of probe_bad must be a number, got 'fast'"):
            read_parameters(bad, ProbeParameters)

        node.create_publisher(String, "/probe/out", 10)
        monkeypatch.setenv("INDGEN_CHECK_ENDPOINTS", "1")
        check_endpoints(node, [node])  # all declared
        node.create_service(Trigger, "/probe/secret", lambda req, resp: resp)
        assert ("serves", "/probe/secret", "std_srvs/srv/Trigger") in created_endpoints([node])
        with pytest.raises(IndGenError, match=r"probe created endpoints .* ENDPOINTS: serves /probe/secret "
                                              r"\(std_srvs/srv/Trigger\)"):
            check_endpoints(node, [node])
        monkeypatch.setenv("INDGEN_CHECK_ENDPOINTS", "0")
        check_endpoints(node, [node])  # off outside tests: a documentation gap never stops a robot

        from rclpy.action import ActionClient

        from indgen_msgs.action import RunEpisode

        monkeypatch.setenv("INDGEN_CHECK_ENDPOINTS", "1")
        node_cls.ENDPOINTS = (*node_cls.ENDPOINTS, serves("/probe/secret", "std_srvs/srv/Trigger", "a service"))
        ActionClient(node, RunEpisode, "/probe/run")
        with pytest.raises(IndGenError, match=r"calls action /probe/run \(indgen_msgs/action/RunEpisode\)"):
            check_endpoints(node, [node])
        node_cls.ENDPOINTS = (*node_cls.ENDPOINTS, calls_action("/probe/run", "indgen_msgs/action/RunEpisode", "runs"))
        check_endpoints(node, [node])
    finally:
        node.destroy_node()
        bad.destroy_node()
