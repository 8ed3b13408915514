"""The FR3 twin's topics on the world side of the lock-step loop: the same topics and types
as the real robot (indgen_core.ros.fr3): /joint_states, the camera images the world renders
and the privileged object poses out; one arm and one gripper command answer each tick."""

from __future__ import annotations

from sensor_msgs.msg import JointState

from indgen_core import topics
from indgen_core.ros import fr3
from indgen_core.ros.base import TICKS
from indgen_sim.ros.stamped_io import StampedWorldIO


class DroidTwinIO(StampedWorldIO):
    parts = ("arm", "gripper")
    frame_id = "fr3_link0"

    def __init__(self, node, world, render: str = "on_request"):
        super().__init__(node, world, render)
        self.joint_pub = node.create_publisher(JointState, topics.JOINT_STATES, TICKS)
        self.command(topics.ARM_VELOCITY_COMMAND, "arm", fr3.read_arm_command)
        self.command(topics.GRIPPER_COMMAND, "gripper", fr3.read_gripper_command)

    def publish_state(self, obs, stamp) -> None:
        self.joint_pub.publish(
            fr3.joint_state(obs["joint_position"], obs["joint_velocity"], obs["gripper_position"], stamp)
        )

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort) -> dict:
        got = super().exchange(setup, step, obs, stamp, timeout, should_abort)
        return {"joint_velocity": got["arm"], "gripper": got["gripper"]}
