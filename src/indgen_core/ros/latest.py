"""The newest message of a fast topic, taken when it is wanted instead of delivered to a
callback.

franka_ros2 publishes the arm's joint states and its full robot state (FrankaRobotState, about
25 nested messages) at the controller manager's 1 kHz. An rclpy subscription runs a Python
callback per message: 0.3-0.5 ms of the interpreter each (deserialisation and the executor's
wait-set), half a core at 1 kHz per topic, and the GIL held meanwhile, which starves the
runner's control tick (docs/real-robot.md, "Measured"). The runner needs the newest sample a
few hundred times a second at most.

A `LatestReader` subscribes on a node of its own that no executor spins: DDS matches and
receives on its own threads, keeps only the newest sample (KEEP_LAST 1) and hands it over only
when `take()` asks for it (the same take an executor makes: rclpy's Subscription.handle.take_message,
as rclpy.wait_for_message does). So a 1 kHz topic costs the interpreter nothing between takes,
and a take costs one deserialisation. A `Poller` calls a function at a fixed rate on its own
thread (the runner's arm state, 100 Hz).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from indgen_core.errors import first_line

#: the newest sample only, from any writer (a best-effort reader matches reliable and
#: best-effort writers alike; the convenience topics of franka's broadcaster are best effort)
NEWEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


class LatestReader:
    def __init__(self, context, msg_type, topic: str, name: str, qos: QoSProfile = NEWEST):
        self.node = rclpy.create_node(name, context=context, use_global_arguments=False, start_parameter_services=False)
        self.msg_type = msg_type
        self.topic = topic
        # the callback is never run: no executor spins this node
        self.subscription = self.node.create_subscription(msg_type, topic, lambda _msg: None, qos)
        self.taken = 0
        self._lock = threading.Lock()

    def take(self):
        """The newest message that came since the last take (None when none did)."""
        newest = None
        handle = self.subscription.handle
        with self._lock, handle:
            while True:
                got = handle.take_message(self.msg_type, False)
                if got is None:
                    break
                newest = got[0]
        if newest is not None:
            self.taken += 1
        return newest

    def close(self) -> None:
        self.node.destroy_node()


class Poller:
    """`work()` every `period` seconds on a daemon thread until `stop()`; an exception is logged
    (throttled) by `log` and the polling goes on."""

    def __init__(self, work: Callable[[], None], period: float, name: str, log: Callable[[str], None]):
        self._work, self._period, self._log = work, period, log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self._work()
            except Exception as exc:  # the poller must outlive one bad message
                self._log(first_line(exc))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
