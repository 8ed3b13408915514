"""Small helpers for tests that run real rclpy nodes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from indgen_core.waiting import wait_until

HELPERS = Path(__file__).parent


def spin_until(node, predicate, timeout: float, executor=None) -> bool:
    """Spin `node` until predicate() is true or `timeout` seconds pass."""
    from rclpy.executors import SingleThreadedExecutor

    own = executor is None
    if own:
        executor = SingleThreadedExecutor(context=node.context)
        executor.add_node(node)

    def spun() -> bool:  # this thread spins the node: what predicate() reads comes in meanwhile
        if predicate():
            return True
        executor.spin_once(timeout_sec=0.05)
        return False

    try:
        return wait_until(spun, timeout, poll=0) or bool(predicate())
    finally:
        if own:
            executor.remove_node(node)
            executor.shutdown()


@contextlib.contextmanager
def spinning(node, period: float = 0.02):
    """`node` spun on a background thread for the duration of the block (servers a test
    provides, subscriptions it reads from while it does other things)."""
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            executor.spin_once(timeout_sec=period)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield executor
    finally:
        stop.set()
        thread.join(5)
        executor.shutdown()


def start_peer(role: str) -> subprocess.Popen:
    """Start test/helpers/ros_peer.py ROLE as a separate process on this test's domain."""
    test_dir = str(HELPERS.parent)  # where the `helpers` package is importable from
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (test_dir, os.environ.get("PYTHONPATH", "")) if p))
    proc = subprocess.Popen(
        [sys.executable, "-m", "helpers.ros_peer", role], env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return proc


def stop_peer(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    if proc.poll() is None:
        try:
            proc.stdin.close()
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def call_with_retry(node, make_future, timeout: float = 10.0, attempt_timeout: float = 2.0):
    """Send a service request / action goal again when its answer does not come back.

    Right after discovery a DDS reply can be lost (the server's reply writer has not yet
    matched the client's reader even though the client sees the server as ready); resending
    is the standard remedy. Returns the completed future, or None on timeout.
    """
    deadline = time.monotonic() + timeout
    done = []

    def answered() -> bool:
        future = make_future()
        if spin_until(node, future.done, timeout=min(attempt_timeout, deadline - time.monotonic())):
            done.append(future)
        return bool(done)

    return done[0] if wait_until(answered, timeout, poll=0) else None


def serve_routes(node, routes: dict, blind: bool = False):
    """The progression manager's side of the policy routes (routes.py): the service that answers
    them and the latched notice that says there are routes to fetch. Returns publish(routes=None,
    blind=None), which announces the (changed) routes with a new serial."""
    import json

    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from indgen_core import topics
    from indgen_core.ros.base import LATCHED

    state = {"routes": dict(routes), "blind": blind}
    fetched = [0]  # answers given: a test waits for the node to have asked after an announce

    def answer(_request, response):
        response.success, response.message = True, json.dumps(state)
        fetched[0] += 1
        return response

    node.create_service(Trigger, topics.GET_POLICY_ROUTES, answer)
    notice = node.create_publisher(String, topics.POLICY_ROUTES, LATCHED)

    def publish(routes: dict | None = None, blind: bool | None = None) -> None:
        if routes is not None:
            state["routes"] = dict(routes)
        if blind is not None:
            state["blind"] = blind
        notice.publish(String(data=json.dumps({"serial": time.time_ns(), "blind": state["blind"]})))

    publish.fetched = fetched  # type: ignore[attr-defined]
    return publish
