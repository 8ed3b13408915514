"""`indgen estop`: the soft e-stop from a shell, a pedal script or a button's node, done the way
that cannot be lost.

A process that starts, publishes one std_msgs/Bool and exits at once is lost more often than
not: its writer is not yet matched with the runner's reader (DDS discovery takes tens to
hundreds of milliseconds), and a volatile sample published before the match is never
delivered (measured against the stand-in under load: lost 4 of 4 times). So it goes both ways at
once: it publishes on the topic the way a pedal node must (reliable and transient local, once
the runner's reader has matched, and it stays until the sample is acknowledged), and it asks the
runner's /indgen/estop service (std_srvs/SetBool), which answers only once it holds. Whichever
path matches first makes the robot hold (the runner takes a second engage as the same one); the
service's answer is what it prints when one comes within the timeout. Under load a service can
be discovered seconds after the topic (measured on CI: more than 2 s), and an e-stop must not
wait for it."""

from __future__ import annotations

import time

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool
from std_srvs.srv import SetBool

from indgen_core import topics
from indgen_core.ros.oneshot import spinning_node
from indgen_core.ros.waits import call
from indgen_core.waiting import wait_until

#: what a pedal node publishes with: delivered to a reader that matches after the publish too
PEDAL = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def send_estop(engage: bool, timeout: float = 5.0) -> tuple[bool, str, float]:
    """(whether the runner took it, one sentence, time.monotonic() when it was first sent)."""
    what = "engaged" if engage else "released"
    with spinning_node("indgen_estop") as node:
        client = node.create_client(SetBool, topics.ESTOP)
        publisher = node.create_publisher(Bool, topics.ESTOP, PEDAL)
        deadline = time.monotonic() + timeout
        sent: float | None = None

        def first_path() -> bool:
            nonlocal sent
            if sent is None and publisher.get_subscription_count() > 0:
                sent = time.monotonic()
                publisher.publish(Bool(data=engage))
            return client.service_is_ready()

        if wait_until(first_path, timeout, poll=0.01):
            sent = sent if sent is not None else time.monotonic()
            reply = call(client, SetBool.Request(data=engage), max(deadline - time.monotonic(), 1.0), attempt_s=1.0)
            if reply is not None:
                return bool(reply.success), f"{topics.ESTOP} (service): {reply.message}", sent
        if sent is None:
            return (
                False,
                f"nobody took the e-stop on {topics.ESTOP} within {timeout:g} s: use the hardware e-stop",
                time.monotonic(),
            )
        left = max(deadline - time.monotonic(), 1.0)
        if publisher.wait_for_all_acked(rclpy.duration.Duration(seconds=left)):
            return (
                True,
                f"{topics.ESTOP} (topic; the service did not answer within {timeout:g} s): {what}, "
                "acknowledged by the runner",
                sent,
            )
        return (
            False,
            f"nobody acknowledged the e-stop on {topics.ESTOP} within {timeout:g} s: use the hardware e-stop",
            sent,
        )
