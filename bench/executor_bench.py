"""Why every IndGen node spins a SingleThreadedExecutor: message round trip between two
processes with rclpy's SingleThreadedExecutor and with its MultiThreadedExecutor on the
pinging side (the baseline and the alternative, measured in the same run).

    .venv/bin/python bench/executor_bench.py [--pings 200]

A ponger process echoes std_msgs/Int64 on /bench/ping to /bench/pong; the pinger sends one,
waits for the echo, and records the round trip. Prints p50 / p99 per executor and the ratio.
Runs on loopback in its own ROS domain.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
import time

import numpy as np

from indgen_core.waiting import wait_until

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "93")

PONGER = """
import os, rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from std_msgs.msg import Int64
rclpy.init()
node = rclpy.create_node("ponger")
pub = node.create_publisher(Int64, "/bench/pong", 10)
node.create_subscription(Int64, "/bench/ping", pub.publish, 10)
print("ready", flush=True)
executor = SingleThreadedExecutor()
executor.add_node(node)
try:
    executor.spin()
except (ExternalShutdownException, KeyboardInterrupt):  # the SIGTERM the bench ends it with
    pass
os._exit(0)  # rclpy's own teardown at exit can hang (seen: more than 10 s)
"""


def measure(kind: str, pings: int) -> np.ndarray:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
    from std_msgs.msg import Int64

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f"pinger_{kind}", context=context)
    got = threading.Event()
    node.create_subscription(Int64, "/bench/pong", lambda m: got.set(), 10)
    pub = node.create_publisher(Int64, "/bench/ping", 10)
    executor = (SingleThreadedExecutor if kind == "single" else MultiThreadedExecutor)(context=context)
    executor.add_node(node)
    def spin():
        with contextlib.suppress(Exception):  # ExternalShutdownException when the context goes
            executor.spin()

    threading.Thread(target=spin, daemon=True).start()
    wait_until(lambda: pub.get_subscription_count() > 0, 30, poll=0.05)
    for _ in range(20):  # warm up, and let both sides match
        got.clear()
        pub.publish(Int64(data=0))
        got.wait(2.0)
    times = []
    for i in range(pings):
        got.clear()
        t0 = time.perf_counter()
        pub.publish(Int64(data=i))
        if got.wait(10.0):
            times.append(time.perf_counter() - t0)
    executor.shutdown()
    node.destroy_node()
    context.try_shutdown()
    return np.array(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=200)
    args = parser.parse_args()
    ponger = subprocess.Popen([sys.executable, "-c", PONGER], stdout=subprocess.PIPE, text=True)
    try:
        assert ponger.stdout.readline().strip() == "ready"
        results = {kind: measure(kind, args.pings) for kind in ("single", "multi")}
    finally:
        ponger.terminate()
        try:
            ponger.wait(10)
        except subprocess.TimeoutExpired:
            ponger.kill()
            ponger.wait()
    print(f"round trip over DDS between two processes, {args.pings} pings each (ms):")
    for kind, t in results.items():
        print(f"  {kind:6s}-threaded executor: p50 {np.percentile(t, 50):8.2f}  p99 {np.percentile(t, 99):8.2f}  "
              f"({len(t)}/{args.pings} answered)")
    s, m = results["single"], results["multi"]
    print(f"  multi / single: p50 x{np.percentile(m, 50) / np.percentile(s, 50):.0f}, "
          f"p99 x{np.percentile(m, 99) / np.percentile(s, 99):.0f}")


if __name__ == "__main__":
    main()
