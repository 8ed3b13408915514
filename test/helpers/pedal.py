"""A pedal's node as docs/real-robot.md says one must be written, run as a fresh process: it
publishes the soft e-stop once and exits, but reliable and transient local, only after the
runner's reader has matched, and it stays until the sample is acknowledged (a volatile one-shot
published before the match is lost). Prints the monotonic time of the publish, then 'acked'
or 'lost'.

    python test/helpers/pedal.py [true|false]
"""

from __future__ import annotations

import sys
import time

import rclpy
from rclpy.duration import Duration
from std_msgs.msg import Bool

from indgen_core import topics
from indgen_core.waiting import wait_until
from indgen_robot.ros.estop_client import PEDAL


def main() -> int:
    engage = (sys.argv[1] if len(sys.argv) > 1 else "true") == "true"
    rclpy.init()
    node = rclpy.create_node("pedal")
    publisher = node.create_publisher(Bool, topics.ESTOP, PEDAL)
    matched = wait_until(lambda: publisher.get_subscription_count() > 0, 10.0)
    sent = time.monotonic()
    publisher.publish(Bool(data=engage))
    acked = publisher.wait_for_all_acked(Duration(seconds=5.0))
    print(f"{sent:.6f} {'acked' if matched and acked else 'lost'}", flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
