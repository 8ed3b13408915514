"""The policy node's side of each spec's topics: which messages make one observation, and
how a world action goes back out. One class per spec, registered in POLICY_IO."""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray

from indgen_core import topics
from indgen_core.nodes import fr3
from indgen_core.nodes import libero as libero_msgs
from indgen_core.nodes.base import LOCKSTEP, subscribe
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
        subscribe(node, GridObservation, topics.BLOCKENV_OBSERVATION, self._on_obs, LOCKSTEP)
        self.on_tick = on_tick

    def _on_obs(self, msg: GridObservation) -> None:
        if not 0 < msg.rows <= 64 or not 0 < msg.cols <= 64 or len(msg.cells) != msg.rows * msg.cols:
            raise ValueError(f"grid of {msg.rows} x {msg.cols} cells with {len(msg.cells)} values")
        grid = np.frombuffer(bytes(msg.cells), dtype=np.uint8).reshape(msg.rows, msg.cols)
        self.on_tick(Tick(msg.trial_id, msg.step, {"grid": grid, "level": msg.level}, msg.header.stamp))

    def send(self, tick: Tick, action: dict) -> None:
        msg = GridAction(trial_id=tick.trial_id, step=tick.step, row=action["row"], col=action["col"],
                         orientation=action["theta"])
        msg.header.stamp = tick.stamp
        self.pub.publish(msg)


class StampedTickIO:
    """A tick is complete when its ControlTick and every other part it needs (joint state,
    cameras, privileged poses...) with the same stamp have arrived, in whatever order DDS
    delivers them. Subclasses subscribe their parts with `part(msg_type, topic, key)` and turn
    the parts into an observation in `observation`."""

    PENDING = 16  # incomplete ticks kept (older ones can never complete in lock-step)

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        self.node = node
        self.on_tick = on_tick
        self.cameras = [c for c in str(node.p.get("cameras", "")).replace(" ", "").split(",") if c]
        self.privileged = bool(node.p.get("privileged", True))
        self.pending: collections.OrderedDict[tuple[int, int], dict] = collections.OrderedDict()
        self.needed: set[str] = set()
        self.part(ControlTick, topics.CONTROL_TICK, "tick")
        if self.privileged:
            self.part(ObjectPoses, topics.OBJECT_POSES, "objects")
        for cam in self.cameras:
            self.part(Image, topics.camera_topic(cam), f"image/{cam}")

    def part(self, msg_type, topic: str, key: str) -> None:
        self.needed.add(key)
        subscribe(self.node, msg_type, topic, lambda m: self._part(m, key), LOCKSTEP)

    def _part(self, msg, key: str) -> None:
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        parts = self.pending.setdefault(stamp, {})
        parts[key] = msg
        while len(self.pending) > self.PENDING:
            self.pending.popitem(last=False)
        if self.needed <= parts.keys():
            del self.pending[stamp]
            tick = parts["tick"]
            try:
                obs = self.observation(parts)
                obs["images"] = {c: fr3.read_image(parts[f"image/{c}"]) for c in self.cameras}
            except fr3.BadCommand as exc:
                self.node.get_logger().error(f"{tick.trial_id} step {tick.step}: {exc}; no command sent")
                return
            if self.privileged:
                obs["objects"] = fr3.read_object_poses(parts["objects"])
                self.privileged_extras(parts["objects"], obs)
            self.on_tick(Tick(tick.trial_id, tick.step, obs, tick.header.stamp, tick.sequence))

    def observation(self, parts: dict) -> dict:
        raise NotImplementedError

    def privileged_extras(self, msg, obs: dict) -> None:
        """More privileged state from the ObjectPoses message (LIBERO: pick, place, grasp)."""


class DroidPolicyIO(StampedTickIO):
    """The FR3's topics (indgen_core.nodes.fr3)."""

    spec = "droid"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        super().__init__(node, on_tick)
        self.part(JointState, topics.JOINT_STATES, "joints")
        self.arm_pub = node.create_publisher(Float64MultiArray, topics.ARM_VELOCITY_COMMAND, LOCKSTEP)
        self.gripper_pub = node.create_publisher(Float64MultiArray, topics.GRIPPER_COMMAND, LOCKSTEP)

    def observation(self, parts: dict) -> dict:
        q, g = fr3.read_joint_state(parts["joints"])
        return {"joint_position": q, "gripper_position": g}

    def send(self, tick: Tick, action: dict) -> None:
        self.arm_pub.publish(fr3.arm_command(action["joint_velocity"], tick.sequence))
        self.gripper_pub.publish(fr3.gripper_command(action["gripper"], tick.sequence))


class LiberoPolicyIO(StampedTickIO):
    """LIBERO's topics (indgen_core.nodes.libero)."""

    spec = "libero"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        super().__init__(node, on_tick)
        self.part(JointState, topics.JOINT_STATES, "fingers")
        self.part(PoseStamped, topics.LIBERO_EEF_POSE, "eef")
        self.pub = node.create_publisher(Float64MultiArray, topics.LIBERO_OSC_COMMAND, LOCKSTEP)

    def observation(self, parts: dict) -> dict:
        return {"state": libero_msgs.read_state(parts["eef"], parts["fingers"])}

    def privileged_extras(self, msg, obs: dict) -> None:
        obs["pick"], obs["place"], obs["grasp"] = msg.pick, msg.place, fr3.read_grasp(msg)

    def send(self, tick: Tick, action) -> None:
        self.pub.publish(libero_msgs.osc_command(action, tick.sequence))


POLICY_IO = {
    "blockenv": BlockEnvPolicyIO,
    "droid": DroidPolicyIO,
    "libero": LiberoPolicyIO,
}
