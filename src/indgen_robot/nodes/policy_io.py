"""The policy node's side of each spec's topics: which messages make one observation, and
how a world action goes back out. One class per spec, registered in POLICY_IO."""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray

from indgen_core import topics
from indgen_core.nodes import fr3
from indgen_core.nodes.base import LOCKSTEP
from indgen_msgs.msg import ControlTick, GridAction, GridObservation, ObjectPoses


class Tick:
    """One observation to answer: trial, step, the world-side observation dict, its stamp and
    (FR3) the sequence number its commands echo."""

    def __init__(self, trial_id: str, step: int, obs: dict, stamp, sequence: int = 0):
        self.trial_id, self.step, self.obs, self.stamp, self.sequence = trial_id, step, obs, stamp, sequence


class BlockEnvPolicyIO:
    spec = "blockenv"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        self.pub = node.create_publisher(GridAction, topics.BLOCKENV_ACTION, LOCKSTEP)
        node.create_subscription(GridObservation, topics.BLOCKENV_OBSERVATION, self._on_obs, LOCKSTEP)
        self.on_tick = on_tick

    def _on_obs(self, msg: GridObservation) -> None:
        grid = np.frombuffer(bytes(msg.cells), dtype=np.uint8).reshape(msg.rows, msg.cols)
        self.on_tick(Tick(msg.trial_id, msg.step, {"grid": grid, "level": msg.level}, msg.header.stamp))

    def send(self, tick: Tick, action: dict) -> None:
        msg = GridAction(trial_id=tick.trial_id, step=tick.step, row=action["row"], col=action["col"],
                         orientation=action["theta"])
        msg.header.stamp = tick.stamp
        self.pub.publish(msg)


class DroidPolicyIO:
    """The FR3's topics (indgen_core.nodes.fr3): a tick is complete when its ControlTick, its
    joint state, every camera in `cameras` and (with `privileged`) the object poses with the
    same stamp have arrived, in whatever order DDS delivers them."""

    spec = "droid"
    PENDING = 16  # incomplete ticks kept (older ones can never complete in lock-step)

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        self.node = node
        self.cameras = [c for c in str(node.p.get("cameras", "")).replace(" ", "").split(",") if c]
        self.privileged = bool(node.p.get("privileged", True))
        self.arm_pub = node.create_publisher(Float64MultiArray, topics.ARM_VELOCITY_COMMAND, LOCKSTEP)
        self.gripper_pub = node.create_publisher(Float64MultiArray, topics.GRIPPER_COMMAND, LOCKSTEP)
        self.pending: collections.OrderedDict[tuple[int, int], dict] = collections.OrderedDict()
        self.on_tick = on_tick
        node.create_subscription(ControlTick, topics.CONTROL_TICK, lambda m: self._part(m, "tick", m), LOCKSTEP)
        node.create_subscription(JointState, topics.JOINT_STATES, lambda m: self._part(m, "joints", m), LOCKSTEP)
        if self.privileged:
            node.create_subscription(ObjectPoses, topics.OBJECT_POSES, lambda m: self._part(m, "objects", m), LOCKSTEP)
        for cam in self.cameras:
            node.create_subscription(Image, topics.camera_topic(cam), lambda m, c=cam: self._part(m, f"image/{c}", m),
                                     LOCKSTEP)
        self.needed = {"tick", "joints", *(["objects"] if self.privileged else []),
                       *(f"image/{c}" for c in self.cameras)}

    def _part(self, msg, part: str, value) -> None:
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        parts = self.pending.setdefault(key, {})
        parts[part] = value
        while len(self.pending) > self.PENDING:
            self.pending.popitem(last=False)
        if self.needed <= parts.keys():
            del self.pending[key]
            self._complete(parts)

    def _complete(self, parts: dict) -> None:
        tick = parts["tick"]
        try:
            q, g = fr3.read_joint_state(parts["joints"])
            obs = {"joint_position": q, "gripper_position": g,
                   "images": {c: fr3.read_image(parts[f"image/{c}"]) for c in self.cameras}}
        except fr3.BadCommand as exc:
            self.node.get_logger().error(f"{tick.trial_id} step {tick.step}: {exc}; no command sent")
            return
        if self.privileged:
            obs["objects"] = fr3.read_object_poses(parts["objects"])
        self.on_tick(Tick(tick.trial_id, tick.step, obs, tick.header.stamp, tick.sequence))

    def send(self, tick: Tick, action: dict) -> None:
        self.arm_pub.publish(fr3.arm_command(action["joint_velocity"], tick.sequence))
        self.gripper_pub.publish(fr3.gripper_command(action["gripper"], tick.sequence))


POLICY_IO = {
    "blockenv": BlockEnvPolicyIO,
    "droid": DroidPolicyIO,
}
