"""The FR3 twin's topics on the world side of the lock-step loop: the same topics and types
as the real robot (indgen_core.nodes.fr3). Each tick publishes /joint_states, the camera
images the world renders, the privileged object poses and then /indgen/control_tick, all with
the tick's stamp; it then waits for one arm and one gripper command that carry the tick's
sequence number. A late, repeated or malformed command is dropped and never applied."""

from __future__ import annotations

from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray

from indgen_core import topics
from indgen_core.nodes import fr3
from indgen_core.nodes.base import LOCKSTEP
from indgen_core.nodes.lockstep import AnswerSlot
from indgen_msgs.msg import ControlTick, ObjectPoses


class DroidTwinIO:
    def __init__(self, node, world):
        self.node = node
        self.joint_pub = node.create_publisher(JointState, topics.JOINT_STATES, LOCKSTEP)
        self.tick_pub = node.create_publisher(ControlTick, topics.CONTROL_TICK, LOCKSTEP)
        self.pose_pub = node.create_publisher(ObjectPoses, topics.OBJECT_POSES, LOCKSTEP)
        self.image_pubs = {cam: node.create_publisher(Image, topics.camera_topic(cam), LOCKSTEP)
                           for cam in getattr(world, "cameras", [])}
        node.create_subscription(Float64MultiArray, topics.ARM_VELOCITY_COMMAND, self._on_arm, LOCKSTEP)
        node.create_subscription(Float64MultiArray, topics.GRIPPER_COMMAND, self._on_gripper, LOCKSTEP)
        self.slot = AnswerSlot(("arm", "gripper"))
        self.sequence = 0
        self.malformed = 0

    @property
    def stale(self) -> int:
        return self.slot.stale

    def _take(self, msg: Float64MultiArray, part: str, read) -> None:
        try:
            value = read(msg)
        except fr3.BadCommand as exc:
            self.malformed += 1
            self.node.get_logger().error(f"{part} command dropped: {exc}", throttle_duration_sec=2.0)
            return
        self.slot.offer(msg.layout.data_offset, value, part)

    def _on_arm(self, msg: Float64MultiArray) -> None:
        self._take(msg, "arm", fr3.read_arm_command)

    def _on_gripper(self, msg: Float64MultiArray) -> None:
        self._take(msg, "gripper", fr3.read_gripper_command)

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort) -> dict:
        self.sequence = (self.sequence + 1) % 2**32
        self.slot.expect(self.sequence)
        self.joint_pub.publish(fr3.joint_state(obs["joint_position"], obs["joint_velocity"],
                                               obs["gripper_position"], stamp))
        for cam, rgb in (obs.get("images") or {}).items():
            if cam in self.image_pubs:
                self.image_pubs[cam].publish(fr3.image(rgb, stamp, cam))
        if obs.get("objects"):
            self.pose_pub.publish(fr3.object_poses(obs["objects"], stamp))
        tick = ControlTick(trial_id=setup.trial_id, step=step, sequence=self.sequence)
        tick.header.stamp = stamp
        self.tick_pub.publish(tick)
        got = self.slot.wait(timeout, should_abort, f"step {step}")
        return {"joint_velocity": got["arm"], "gripper": got["gripper"]}
