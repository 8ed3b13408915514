"""A node for a command that asks the graph one thing and exits (`indgen estop`, `indgen
stand-in build-scene`): its own context, so it never touches another rclpy user's in the same
process, and an executor spinning in a thread so that service calls complete while the
command waits on them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_srvs.srv import Trigger

from indgen_core.ros.waits import call, wait_server


@contextmanager
def spinning_node(name: str) -> Iterator[Node]:
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(0.02) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    try:
        yield node
    finally:
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def trigger(service: str, timeout: float) -> tuple[bool, str]:
    """Call a std_srvs/Trigger service once: (its success, its message, or why there is none)."""
    with spinning_node("indgen_trigger") as node:
        client = node.create_client(Trigger, service)
        if not wait_server(client, timeout):
            return False, f"nothing serves {service} (is the graph running?)"
        reply = call(client, Trigger.Request(), timeout)
        if reply is None:
            return False, f"{service} gave no answer within {timeout:g} s"
        return bool(reply.success), str(reply.message)
