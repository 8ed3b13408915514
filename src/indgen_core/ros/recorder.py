"""recorder: every topic of the graph into a rosbag2 bag (MCAP, zstd chunks, metadata v9),
without deserialising anything, so that a campaign can be re-judged, watched, timed and
replayed later (`indgen bag ...`).

It discovers the topics on the domain four times a second and subscribes to each new one (raw
bytes, the QoS its publisher offered, transient local where the publisher latches, so the
state at start is in the bag too), skipping ROS' own (/rosout, /parameter_events) and actions'
internals. One bag per run of the graph, in bag_dir/<campaign or run>-<time>, split at
split_mb. For each trial it records, in the results store, the bag and the time range the
trial spans, as an artifact of that trial (from the trial's task setup to its result, both
read from the recorded stream; only results signed by the campaign's progression manager).

Its status is latched on /indgen/recorder/status (std_msgs/String, JSON: the bag, how many
topics it records, and `steady`: no new topic for steady_s since it last subscribed one). The
progression manager waits for a steady recorder before it starts a trial, so that a recorder
slower to start than the rest of the graph (or one the launcher restarted) does not miss the
first ticks of a trial, or record a tick without the command that answered it.

A killed recorder loses at most the last flush_s seconds; the campaign goes on without it
(the launcher restarts it: a new bag), and `indgen bag repair` closes a bag it left open.

Parameters and endpoints: indgen_core/nodes/interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from indgen_core import paths, topics
from indgen_core.bags.writer import BagWriter, UnknownType, qos_of
from indgen_core.cell.robot_config import load_robot_config
from indgen_core.errors import first_line
from indgen_core.lists import parse_names
from indgen_core.nodes import messages
from indgen_core.nodes.interfaces import RECORDER_ENDPOINTS
from indgen_core.nodes.interfaces import RecorderParameters as Parameters
from indgen_core.ros import convert
from indgen_core.ros.base import LATCHED, RELIABLE, read_parameters, run_node, subscribe
from indgen_core.store import ResultsStore
from indgen_msgs.msg import EpisodeResult, TaskSetup

SKIP_PREFIXES = ("/rosout", "/parameter_events")


class Recorder(Node):
    ENDPOINTS = RECORDER_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("recorder")
        self.p = read_parameters(self, Parameters)
        base = Path(self.p.bag_dir) if self.p.bag_dir else paths.artifacts_dir() / "bags"
        self.name = f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self.writer = BagWriter(
            paths.inside(base, self.name), split_bytes=int(self.p.split_mb * 2**20), flush_s=self.p.flush_s
        )
        self.store = ResultsStore(self.p.db or None)
        self.exclude = tuple(parse_names(self.p.exclude))
        #: the robot configuration's exclusions, and what is recorded even under them (a user's
        #: own `exclude` always wins)
        self.robot_exclude: tuple[str, ...] = ()
        self.keep: set[str] = set()
        if self.p.robot:
            robot = load_robot_config(self.p.robot)
            # the arm controller's state comes at every controller update (ros2_controllers'
            # JTC publishes controller_state each cycle: 1 kHz on franka)
            self.robot_exclude = (*robot.recorder.exclude, f"/{robot.arm.controller}/controller_state")
            used = parse_names(self.p.cameras) or list(robot.cameras)  # the cameras the policy reads
            self.keep = {*(robot.cameras[c] for c in used if c in robot.cameras), robot.merged_joint_states} - {""}
            self.robot_exclude += tuple(t for c, t in robot.cameras.items() if c not in used)
        self.recorded: set[tuple[str, str]] = set()
        self.refused: set[str] = set()
        self.trials: dict[tuple[str, str], int] = {}  # (campaign, trial) -> start (ns); the bookkeeper's
        # Trial boundaries go to the results store from a thread of their own: a store write can
        # wait on SQLite's lock (the scorer commits at the same moment) or on the disk, and while
        # the executor waited, the publishers' reliable histories overflowed and the bag lost the
        # next trial's first commands (22 ticks once, on a loaded machine)
        self._bookkeeping: queue.Queue[tuple | None] = queue.Queue()
        self._bookkeeper = threading.Thread(target=self._keep_books, name="bag-artifacts", daemon=True)
        self._bookkeeper.start()
        self.status_pub = self.create_publisher(String, topics.RECORDER_STATUS, LATCHED)
        self._last_new = time.monotonic()
        self._steady: bool | None = None
        # trial boundaries come from the recorded stream itself (deserialised here, once)
        subscribe(self, TaskSetup, topics.TASK_SETUP, self._on_setup, _subscriber_qos(None, latched=True))
        subscribe(self, EpisodeResult, topics.EPISODE_RESULT, self._on_result, RELIABLE)
        self.create_timer(0.25, self._discover)
        self.create_timer(max(self.p.flush_s, 0.2), self.writer.flush)
        self.get_logger().info(f"recording the graph into {self.writer.base}")

    def _wanted(self, topic: str, types: list[str]) -> bool:
        return (
            not topic.startswith(SKIP_PREFIXES)
            and "/_action/" not in topic
            and len(types) == 1
            and not topic.startswith(self.exclude)
            and (topic in self.keep or not topic.startswith(self.robot_exclude))
        )

    def _discover(self) -> None:
        if self._subscribe_new():
            self._last_new = time.monotonic()
        steady = bool(self.recorded) and time.monotonic() - self._last_new >= self.p.steady_s
        if steady != self._steady:
            self._steady = steady
            self.status_pub.publish(
                String(data=json.dumps({"bag": str(self.writer.base), "steady": steady, "topics": len(self.recorded)}))
            )

    def _subscribe_new(self) -> bool:
        """Subscribe every wanted topic not recorded yet; whether there was one."""
        new = False
        for topic, types in self.get_topic_names_and_types():
            if not self._wanted(topic, types):
                continue
            msgtype = types[0]
            if (topic, msgtype) in self.recorded or topic in self.refused:
                continue
            publishers = self.get_publishers_info_by_topic(topic)
            if not publishers:
                continue
            offered = [qos_of(p.qos_profile) for p in publishers[:1]]
            latched = publishers[0].qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
            try:
                cls = convert.message_class(msgtype)
                self.writer.add_topic(topic, msgtype, offered)
            except (UnknownType, LookupError) as exc:
                self.refused.add(topic)
                self.get_logger().warning(f"not recording {topic}: {exc}")
                continue
            self.recorded.add((topic, msgtype))
            qos = _subscriber_qos(publishers[0].qos_profile, latched)
            subscribe(self, cls, topic, self._take(topic, msgtype), qos, raw=True)
            new = True
        return new

    def _take(self, topic: str, msgtype: str):
        def take(data: bytes) -> None:
            try:
                self.writer.write(topic, msgtype, time.time_ns(), data)
            except Exception as exc:  # a full disk must not take the graph down: say it, keep going
                self.get_logger().error(f"not recorded ({topic}): {first_line(exc)}", throttle_duration_sec=10.0)

        return take

    def _on_setup(self, msg: TaskSetup) -> None:
        self._bookkeeping.put(("setup", msg, time.time_ns(), ""))

    def _on_result(self, msg: EpisodeResult) -> None:
        if not msg.relabel:
            self._bookkeeping.put(("result", msg, time.time_ns(), str(self.writer.paths[-1])))

    def _keep_books(self) -> None:
        """In arrival order, off the executor: a trial spans its setup to its result, and only
        results signed by the campaign's progression manager count."""
        while (item := self._bookkeeping.get()) is not None:
            kind, msg, at_ns, bag = item
            key = (msg.campaign_id, msg.trial_id)
            if kind == "setup":
                self.trials.setdefault(key, at_ns)
                continue
            try:
                if not messages.signed_by(msg, self.store.campaign_key(msg.campaign_id)):
                    continue
                start = self.trials.pop(key, None)
                if start is None:
                    continue
                self.store.add_artifact(
                    msg.campaign_id,
                    "bag",
                    bag,
                    trial_id=msg.trial_id,
                    level=msg.level,
                    details={"start_ns": start, "end_ns": at_ns, "attempt_outcome": int(msg.outcome)},
                )
            except Exception as exc:
                self.get_logger().error(f"bag artifact of {msg.trial_id} not stored: {first_line(exc)}")

    def close(self) -> None:
        self._bookkeeping.put(None)
        self._bookkeeper.join(timeout=30.0)  # the last trials' artifacts, before the bag closes
        self.writer.close()
        self.get_logger().info(
            f"bag closed: {', '.join(map(str, self.writer.paths))} ({self.writer.messages} messages)"
        )


def _subscriber_qos(offered, latched: bool) -> QoSProfile:
    reliable = offered is None or offered.reliability == ReliabilityPolicy.RELIABLE
    return QoSProfile(
        depth=200,
        history=HistoryPolicy.KEEP_LAST,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


def main() -> int:
    return run_node(Recorder)


if __name__ == "__main__":
    raise SystemExit(main())
