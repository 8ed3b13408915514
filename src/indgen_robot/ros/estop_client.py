"""`indgen estop`: the soft e-stop from a shell, a pedal script or a button's node, done the way
that cannot be lost.

A process that starts, publishes one std_msgs/Bool and exits at once is lost more often than
not: its writer is not yet matched with the runner's reader (DDS discovery takes tens to
hundreds of milliseconds), and a volatile sample published before the match is never
delivered (measured against the stand-in under load: lost 4 of 4 times). So this asks the
runner's /indgen/estop service (std_srvs/SetBool), which answers only once it holds, and only
where no service answers it publishes on the topic the way a pedal node must: reliable and
transient local (a reader that matches late still gets it), after waiting for the runner's
reader to match, and it stays until the sample is acknowledged."""

from __future__ import annotations

import time

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool
from std_srvs.srv import SetBool

from indgen_core import topics
from indgen_core.ros.oneshot import spinning_node
from indgen_core.ros.waits import call, wait_server
from indgen_core.waiting import wait_until

#: what a pedal node publishes with: delivered to a reader that matches after the publish too
PEDAL = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def send_estop(engage: bool, timeout: float = 5.0) -> tuple[bool, str, float]:
    """(whether the runner took it, one sentence, time.monotonic() when it was sent)."""
    with spinning_node("indgen_estop") as node:
        client = node.create_client(SetBool, topics.ESTOP)
        if wait_server(client, min(timeout, 2.0)):
            sent = time.monotonic()
            reply = call(client, SetBool.Request(data=engage), timeout, attempt_s=1.0)
            if reply is not None:
                return bool(reply.success), f"{topics.ESTOP} (service): {reply.message}", sent
        publisher = node.create_publisher(Bool, topics.ESTOP, PEDAL)
        matched = wait_until(lambda: publisher.get_subscription_count() > 0, timeout)
        sent = time.monotonic()
        publisher.publish(Bool(data=engage))
        acked = publisher.wait_for_all_acked(rclpy.duration.Duration(seconds=timeout))
        what = "engaged" if engage else "released"
        if matched and acked:
            return True, f"{topics.ESTOP} (topic, no service answered): {what}, acknowledged by the runner", sent
        return False, f"nobody took the e-stop on {topics.ESTOP} within {timeout:g} s: use the hardware e-stop", sent
