"""A burst of requests to a service whose node is busy is queued, not dropped: ROS' default
service QoS keeps the last 10 requests not yet taken, and rmw_fastrtps drops the rest without a
trace (the fuzzed twin graph once had 2 of 15 "end the episode" calls never answered). The
server here takes nothing for 2 s while 15 requests come in, as a node's executor busy with
other callbacks does."""

from __future__ import annotations

import time

import pytest

from helpers.ros_helpers import spin_until

pytestmark = pytest.mark.ros
rclpy = pytest.importorskip("rclpy")


def test_fifteen_requests_to_a_busy_server_are_all_answered(ros_context):
    from rclpy.executors import SingleThreadedExecutor
    from std_srvs.srv import Trigger

    from indgen_core.ros.base import REQUESTS, serve

    taken: list[int] = []

    def answer(request, response):
        taken.append(1)
        response.success, response.message = True, str(len(taken))
        return response

    server = rclpy.create_node("busy_server", context=ros_context)
    client_node = rclpy.create_node("burst_client", context=ros_context)
    serve(server, Trigger, "/itest/burst", answer)
    client = client_node.create_client(Trigger, "/itest/burst", qos_profile=REQUESTS)
    server_executor = SingleThreadedExecutor(context=ros_context)
    server_executor.add_node(server)
    try:
        assert spin_until(client_node, client.service_is_ready, 30), "the service never matched the client"
        warm = client.call_async(Trigger.Request())  # the reply's way back matched too
        assert spin_until(client_node, lambda: server_executor.spin_once(timeout_sec=0.05) or warm.done(), 30)
        futures = [client.call_async(Trigger.Request()) for _ in range(15)]
        deadline = time.monotonic() + 2.0
        spin_until(client_node, lambda: time.monotonic() > deadline, 5)  # the server takes nothing
        assert taken == [1]
        assert spin_until(client_node, lambda: server_executor.spin_once(timeout_sec=0.05) or
                          all(f.done() for f in futures), 30), sum(f.done() for f in futures)
        assert sorted(int(f.result().message) for f in futures) == list(range(2, 17))
    finally:
        server_executor.shutdown()
        server.destroy_node()
        client_node.destroy_node()
