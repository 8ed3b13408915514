"""LIBERO's topics on the world side of the lock-step loop: /joint_states (the gripper's
fingers) and /libero/eef_pose (PoseStamped: the end effector the OSC controller moves), the
camera images as rendered (LIBERO's are upside down; the spec turns them) and the privileged
object poses with the task's pick and place objects; one /libero/osc_command
(Float64MultiArray: 6-D delta pose + gripper) answers each tick."""

from __future__ import annotations

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from indgen_core import topics
from indgen_core.ros import libero as libero_msgs
from indgen_core.ros.base import TICKS
from indgen_sim.ros.stamped_io import StampedWorldIO


class LiberoIO(StampedWorldIO):
    def __init__(self, node, world, render: str = "on_request"):
        super().__init__(node, world, render)
        self.joint_pub = node.create_publisher(JointState, topics.JOINT_STATES, TICKS)
        self.eef_pub = node.create_publisher(PoseStamped, topics.LIBERO_EEF_POSE, TICKS)
        self.command(topics.LIBERO_OSC_COMMAND, "action", libero_msgs.read_osc_command)

    def publish_state(self, obs, stamp) -> None:
        eef, fingers = libero_msgs.state_messages(obs["state"], stamp)
        self.joint_pub.publish(fingers)
        self.eef_pub.publish(eef)

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort):
        return super().exchange(setup, step, obs, stamp, timeout, should_abort)["action"]
