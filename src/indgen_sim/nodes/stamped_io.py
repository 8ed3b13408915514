"""The world side of a stamped lock-step tick, shared by the FR3 twin and LIBERO: each tick
publishes the world's own state topics, the camera images, the privileged object poses and
then /indgen/control_tick, all with the tick's stamp, and waits for the commands that echo the
tick's sequence number (layout.data_offset). A late, repeated or malformed command is dropped
and never applied. Subclasses add their state publishers and command subscriptions."""

from __future__ import annotations

from sensor_msgs.msg import Image
from std_msgs.msg import Float64MultiArray

from indgen_core import topics
from indgen_core.nodes import fr3
from indgen_core.nodes.base import LOCKSTEP, subscribe
from indgen_core.nodes.lockstep import AnswerSlot
from indgen_msgs.msg import ControlTick, ObjectPoses


class StampedWorldIO:
    #: command parts a tick waits for (one subscription each, see `command`)
    parts: tuple[str, ...] = ("action",)
    frame_id = "world"

    def __init__(self, node, world):
        self.node = node
        self.tick_pub = node.create_publisher(ControlTick, topics.CONTROL_TICK, LOCKSTEP)
        self.pose_pub = node.create_publisher(ObjectPoses, topics.OBJECT_POSES, LOCKSTEP)
        self.image_pubs = {cam: node.create_publisher(Image, topics.camera_topic(cam), LOCKSTEP)
                           for cam in getattr(world, "cameras", [])}
        self.slot = AnswerSlot(self.parts)
        self.sequence = 0
        self.malformed = 0

    @property
    def stale(self) -> int:
        return self.slot.stale

    def command(self, topic: str, part: str, read) -> None:
        """Subscribe a Float64MultiArray command; `read` validates it (BadCommand: dropped)."""

        def take(msg: Float64MultiArray) -> None:
            try:
                value = read(msg)
            except fr3.BadCommand as exc:
                self.malformed += 1
                self.node.get_logger().error(f"{part} command dropped: {exc}", throttle_duration_sec=2.0)
                return
            self.slot.offer(msg.layout.data_offset, value, part)

        subscribe(self.node, Float64MultiArray, topic, take, LOCKSTEP)

    def publish_state(self, obs, stamp) -> None:
        """The world's own state topics of this tick."""
        raise NotImplementedError

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort) -> dict:
        self.sequence = (self.sequence + 1) % 2**32
        self.slot.expect(self.sequence)
        self.publish_state(obs, stamp)
        for cam, rgb in (obs.get("images") or {}).items():
            if cam in self.image_pubs:
                self.image_pubs[cam].publish(fr3.image(rgb, stamp, cam))
        if obs.get("objects"):
            self.pose_pub.publish(fr3.object_poses(obs["objects"], stamp, self.frame_id, obs.get("pick", ""),
                                                   obs.get("place", ""), obs.get("grasp")))
        tick = ControlTick(trial_id=setup.trial_id, step=step, sequence=self.sequence)
        tick.header.stamp = stamp
        self.tick_pub.publish(tick)
        return self.slot.wait(timeout, should_abort, f"step {step}")
