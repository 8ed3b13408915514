"""The policy node's side of each spec's topics (one class per spec, in POLICY_IO)."""

from __future__ import annotations

import collections
import collections.abc
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray

from indgen_core import topics
from indgen_core.lists import parse_names
from indgen_core.nodes import messages
from indgen_core.ros import fr3
from indgen_core.ros import libero as libero_msgs
from indgen_core.ros import robocasa as robocasa_msgs
from indgen_core.ros.base import LOCKSTEP, TICKS, subscribe
from indgen_core.ros.latest import LatestReader
from indgen_msgs.msg import ControlTick, GridAction, GridObservation, ImageRequest, ObjectPoses
from indgen_robot.arm_state import BadJointState, ClockCheck, pick
from indgen_robot.ros.policy_images import ImagesUnavailable, LazyImages, RawImage, RequestedImages


def robot_of(name: str):
    """The robot configuration a policy node reads (None for the twin, which has none)."""
    if not name:
        return None
    from indgen_core.cell.robot_config import load_robot_config

    return load_robot_config(name)


def camera_topics_of(robot: str) -> dict[str, str]:
    """Camera name -> topic from a robot configuration (the ZED wrapper's topics on the real
    robot); {} without one (the twin's /cameras/<name>/image_raw)."""
    config = robot_of(robot)
    return dict(config.cameras) if config else {}


class Tick:
    """One observation to answer: trial, step, the world-side observation dict, its stamp and
    (FR3) the sequence number its commands echo."""

    def __init__(self, trial_id: str, step: int, obs: dict, stamp, sequence: int = 0):
        self.trial_id, self.step, self.obs, self.stamp, self.sequence = trial_id, step, obs, stamp, sequence


class BlockEnvPolicyIO:
    spec = "blockenv"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        self.pub = node.create_publisher(GridAction, topics.BLOCKENV_ACTION, TICKS)
        subscribe(node, GridObservation, topics.BLOCKENV_OBSERVATION, self._on_obs, LOCKSTEP)
        self.on_tick = on_tick

    def _on_obs(self, msg: GridObservation) -> None:
        if not 0 < msg.rows <= 64 or not 0 < msg.cols <= 64 or len(msg.cells) != msg.rows * msg.cols:
            raise ValueError(f"grid of {msg.rows} x {msg.cols} cells with {len(msg.cells)} values")
        grid = np.frombuffer(bytes(msg.cells), dtype=np.uint8).reshape(msg.rows, msg.cols)
        self.on_tick(Tick(msg.trial_id, msg.step, {"grid": grid, "level": msg.level}, msg.header.stamp))

    def send(self, tick: Tick, action: dict) -> None:
        msg = GridAction(
            trial_id=tick.trial_id, step=tick.step, row=action["row"], col=action["col"], orientation=action["theta"]
        )
        msg.header.stamp = tick.stamp
        self.pub.publish(msg)


#: a robot's topics from any publisher: best effort matches reliable and best-effort writers
#: (franka's convenience topics are best effort; a reliable reader would get nothing)
SENSOR = QoSProfile(depth=2, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)
IMAGE_QOS = {"reliable": LOCKSTEP, "best_effort": SENSOR}


class StampedTickIO:
    """The parts of one observation (joint state, cameras, privileged poses...) for a tick.

    Lock-step (simulation): a tick is complete when its ControlTick and every other part with
    the same stamp have arrived, in whatever order DDS delivers them. Wall clock (the real
    robot: ControlTick.wall_clock): the tick takes the latest sample of each part, provided it
    came within max_state_age_s (joint states, poses) or max_image_age_s (cameras); otherwise
    no command is sent, and the runner holds. Subclasses subscribe their parts with
    `part(msg_type, topic, key)` and turn the parts into an observation in `observation`.

    A lock-step tick whose world renders cameras on request (ControlTick.images_on_request) is
    complete without its images; the request built on it asks for them (RequestedImages), and
    a tick answered from an open-loop chunk never has a frame rendered."""

    PENDING = 16  # incomplete ticks kept (older ones can never complete in lock-step)

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        self.node = node
        self.on_tick = on_tick
        self.cameras = parse_names(node.p.cameras)
        self.privileged = bool(node.p.privileged)
        self.robot = robot_of(node.p.robot)
        control = self.robot.control if self.robot else None
        #: how old (by header stamp) each kind of part may be on the wall clock; node parameters
        #: above 0 override the robot configuration's
        self.max_age = {
            "image": node.p.max_image_age_s or (control.image_max_age_s if control else 1.0),
            "state": node.p.max_state_age_s or (control.gripper_state_max_age_s if control else 0.5),
        }
        camera_topics = dict(self.robot.cameras) if self.robot else {}
        image_qos = IMAGE_QOS[self.robot.cameras_qos] if self.robot else LOCKSTEP
        self.clocks: dict[str, ClockCheck] = {}
        self.pending: collections.OrderedDict[tuple[int, int], dict] = collections.OrderedDict()
        self.latest: dict[str, Any] = {}  # the newest message of each part, by key
        self.needed: set[str] = set()
        # frames of ticks whose images come on request, by stamp, and who waits for them
        self.frames: collections.OrderedDict[tuple[int, int], dict] = collections.OrderedDict()
        self.asked: collections.OrderedDict[tuple[int, int], bool] = collections.OrderedDict()
        self._frames_cond = threading.Condition()
        self.image_wait_s = float(node.p.image_timeout_s)
        self.image_size = int(node.p.image_size)
        self.request_pub = node.create_publisher(ImageRequest, topics.IMAGE_REQUEST, TICKS) if self.cameras else None
        self.part(ControlTick, topics.CONTROL_TICK, "tick")
        if self.privileged:
            self.part(ObjectPoses, topics.OBJECT_POSES, "objects")
        for cam in self.cameras:
            self.part(Image, camera_topics.get(cam, topics.camera_topic(cam)), f"image/{cam}", image_qos)

    def part(self, msg_type, topic: str, key: str, qos=LOCKSTEP) -> None:
        self.needed.add(key)
        if msg_type is Image:  # kept serialised until a request needs it (RawImage)
            subscribe(self.node, Image, topic, lambda data: self._part(RawImage(data), key), qos, raw=True)
        else:
            subscribe(self.node, msg_type, topic, lambda m: self._part(m, key), qos)

    def _part(self, msg, key: str) -> None:
        if key == "tick" and msg.wall_clock:
            self._wall_clock_tick(msg)
            return
        if key != "tick":
            self.latest[key] = msg
            if msg.header.stamp.sec or msg.header.stamp.nanosec:
                self.clocks.setdefault(
                    key, ClockCheck(self.robot.control.clock_tolerance_s if self.robot else 0.05)
                ).add(messages.seconds(msg.header.stamp), time.time())
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if key.startswith("image/") and stamp in self.asked:
            self._frame(stamp, key, msg)  # the frame of a complete tick, sent because it was asked for
            return
        parts = self.pending.setdefault(stamp, {})
        parts[key] = msg
        while len(self.pending) > self.PENDING:
            self.pending.popitem(last=False)
        needed = self.needed
        if "tick" in parts and parts["tick"].images_on_request:
            needed = {k for k in needed if not k.startswith("image/")}
        if needed <= parts.keys():
            del self.pending[stamp]
            if needed is not self.needed:
                self.asked[stamp] = True
                while len(self.asked) > self.PENDING:
                    self.asked.popitem(last=False)
            self._complete(parts)

    def _frame(self, stamp, key: str, msg) -> None:
        with self._frames_cond:
            self.frames.setdefault(stamp, {})[key.removeprefix("image/")] = msg
            while len(self.frames) > self.PENDING:
                self.frames.popitem(last=False)
            self._frames_cond.notify_all()

    def requested_frames(self, tick) -> dict:
        """Every camera's frame of `tick` (a ControlTick with images_on_request), asked for
        once; ImagesUnavailable when they do not all come within image_timeout_s."""
        stamp = (tick.header.stamp.sec, tick.header.stamp.nanosec)
        request = ImageRequest(
            trial_id=tick.trial_id,
            step=tick.step,
            sequence=tick.sequence,
            cameras=list(self.cameras),
            width=self.image_size,
            height=self.image_size,
        )
        request.header.stamp = tick.header.stamp
        deadline = time.monotonic() + self.image_wait_s
        with self._frames_cond:
            if not set(self.cameras) <= self.frames.get(stamp, {}).keys() and self.request_pub is not None:
                self.request_pub.publish(request)
            # every frame comes in under the condition and notifies it (_frame): nothing to poll
            if not self._frames_cond.wait_for(
                lambda: set(self.cameras) <= self.frames.get(stamp, {}).keys(), max(deadline - time.monotonic(), 0)
            ):
                got = sorted(self.frames.get(stamp, {}))
                raise ImagesUnavailable(
                    f"the world sent {', '.join(got) or 'none'} of the cameras "
                    f"{', '.join(self.cameras)} asked for within {self.image_wait_s:g} s"
                )
            return dict(self.frames[stamp])

    def forget(self) -> None:
        """Drop every incomplete tick (a new attempt begins: their parts belong to the last one)."""
        self.pending.clear()
        self.asked.clear()
        with self._frames_cond:
            self.frames.clear()

    def _wall_clock_tick(self, tick) -> None:
        """The real robot: the latest sample of every part, each younger than its limit by its
        own header stamp. An arrival time says nothing of a frame's age: a driver that stalls,
        buffers or re-sends its last frame delivers old pictures promptly."""
        parts, now = {"tick": tick}, time.time()
        self.pull()
        for key in self.needed - {"tick"}:
            msg = self.latest.get(key)
            limit = self.max_age["image" if key.startswith("image/") else "state"]
            problem = self.clocks[key].problem(key, limit) if key in self.clocks else None
            age = now - messages.seconds(msg.header.stamp) if msg is not None else float("inf")
            if problem or msg is None or age > limit:
                why = problem or (
                    f"{key} never received"
                    if msg is None
                    else f"{key} is {age:.2f} s old by its stamp (limit {limit:g} s)"
                )
                self.node.get_logger().warning(
                    f"{tick.trial_id} step {tick.step}: {why}; no command sent", throttle_duration_sec=2.0
                )
                self.refuse(tick, why)
                return
            parts[key] = msg
        self._complete(parts)

    def _complete(self, parts: dict) -> None:
        tick = parts["tick"]
        try:
            obs = self.observation(parts)
            if tick.images_on_request and not tick.wall_clock:
                obs["images"] = RequestedImages(self, tick) if self.cameras else {}
            else:
                obs["images"] = LazyImages({c: parts[f"image/{c}"] for c in self.cameras})
        except fr3.BadCommand as exc:
            self.node.get_logger().error(
                f"{tick.trial_id} step {tick.step}: {exc}; no command sent", throttle_duration_sec=2.0
            )
            return
        if self.privileged:
            obs["objects"] = fr3.read_object_poses(parts["objects"])
            self.privileged_extras(parts["objects"], obs)
        self.on_tick(Tick(tick.trial_id, tick.step, obs, tick.header.stamp, tick.sequence))

    def observation(self, parts: dict) -> dict:
        raise NotImplementedError

    def pull(self) -> None:
        """Take the newest samples of the parts read newest-first (DroidPolicyIO's joint states)."""

    def refuse(self, tick, why: str) -> None:
        """Tell the world at once why this wall-clock tick gets no command (it then holds and
        says so, instead of waiting out its timeout); the lock-step worlds never ask."""

    def privileged_extras(self, msg, obs: dict) -> None:
        """More privileged state from the ObjectPoses message (LIBERO: pick, place, grasp)."""


class DroidPolicyIO(StampedTickIO):
    """The FR3's topics (indgen_core.ros.fr3). On the real robot (a robot configuration) the
    arm's joints come from its broadcaster's own topic and the gripper's from its driver's:
    franka's joint_state_publisher merges only franka's own sources, so no single topic carries
    both. The twin publishes both on /joint_states."""

    spec = "droid"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        super().__init__(node, on_tick)
        #: the real robot's joint states, newest-first (franka's arm publishes at 1 kHz: a
        #: callback per message would cost the node half a core; indgen_core/ros/latest.py)
        self.readers: dict[str, LatestReader] = {}
        if self.robot is not None:
            name = node.get_name()
            for key, topic in (("arm", self.robot.arm.state_topic), ("gripper", self.robot.gripper.state_topic)):
                self.needed.add(key)
                self.readers[key] = LatestReader(node.context, JointState, topic, f"{name}_{key}_state")
        else:
            self.part(JointState, topics.JOINT_STATES, "joints")
        self.arm_pub = node.create_publisher(Float64MultiArray, topics.ARM_VELOCITY_COMMAND, TICKS)
        self.gripper_pub = node.create_publisher(Float64MultiArray, topics.GRIPPER_COMMAND, TICKS)

    def observation(self, parts: dict) -> dict:
        if self.robot is None:
            q, g = fr3.read_joint_state(parts["joints"])
            return {"joint_position": q, "gripper_position": g}
        try:
            q, _ = pick(parts["arm"].name, parts["arm"].position, parts["arm"].velocity, self.robot.arm.joints)
            knuckle, _ = pick(parts["gripper"].name, parts["gripper"].position, [], [self.robot.gripper.joint])
        except BadJointState as exc:
            raise fr3.BadCommand(str(exc)) from None
        return {"joint_position": q, "gripper_position": float(np.clip(knuckle[0] / self.robot.gripper.closed, 0, 1))}

    def pull(self) -> None:
        for key, reader in self.readers.items():
            msg = reader.take()
            if msg is not None:
                self.latest[key] = msg
                if msg.header.stamp.sec or msg.header.stamp.nanosec:
                    self.clocks.setdefault(key, ClockCheck(self.robot.control.clock_tolerance_s)).add(
                        messages.seconds(msg.header.stamp), time.time()
                    )

    def refuse(self, tick, why: str) -> None:
        self.arm_pub.publish(fr3.no_command(tick.sequence, why))
        self.gripper_pub.publish(fr3.no_command(tick.sequence, why))

    def send(self, tick: Tick, action: dict) -> None:
        self.arm_pub.publish(fr3.arm_command(action["joint_velocity"], tick.sequence))
        self.gripper_pub.publish(fr3.gripper_command(action["gripper"], tick.sequence))


class LiberoPolicyIO(StampedTickIO):
    """LIBERO's topics (indgen_core.ros.libero)."""

    spec = "libero"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        super().__init__(node, on_tick)
        self.part(JointState, topics.JOINT_STATES, "fingers")
        self.part(PoseStamped, topics.LIBERO_EEF_POSE, "eef")
        self.pub = node.create_publisher(Float64MultiArray, topics.LIBERO_OSC_COMMAND, TICKS)

    def observation(self, parts: dict) -> dict:
        return {"state": libero_msgs.read_state(parts["eef"], parts["fingers"])}

    def privileged_extras(self, msg, obs: dict) -> None:
        obs["pick"], obs["place"], obs["grasp"] = msg.pick, msg.place, fr3.read_grasp(msg)

    def send(self, tick: Tick, action) -> None:
        self.pub.publish(libero_msgs.osc_command(action, tick.sequence))


class RobocasaPolicyIO(StampedTickIO):
    """RoboCasa's topics (indgen_core.ros.robocasa)."""

    spec = "robocasa"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        super().__init__(node, on_tick)
        self.part(JointState, topics.JOINT_STATES, "fingers")
        self.part(PoseStamped, topics.ROBOCASA_EEF_POSE, "eef")
        self.part(PoseStamped, topics.ROBOCASA_BASE_POSE, "base")
        self.pub = node.create_publisher(Float64MultiArray, topics.ROBOCASA_COMMAND, TICKS)

    def observation(self, parts: dict) -> dict:
        return {"state": robocasa_msgs.read_state(parts["eef"], parts["base"], parts["fingers"])}

    def privileged_extras(self, msg, obs: dict) -> None:
        obs["pick"], obs["place"], obs["grasp"] = msg.pick, msg.place, fr3.read_grasp(msg)

    def send(self, tick: Tick, action) -> None:
        self.pub.publish(robocasa_msgs.robocasa_command(action, tick.sequence))


class PolicyIO(Protocol):
    """A spec's topic adapter: built with the node and the tick callback; sends actions out."""

    def send(self, tick: Tick, action) -> None: ...


POLICY_IO: dict[str, Callable[..., PolicyIO]] = {
    "blockenv": BlockEnvPolicyIO,
    "droid": DroidPolicyIO,
    "libero": LiberoPolicyIO,
    "robocasa": RobocasaPolicyIO,
}
