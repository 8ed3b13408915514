"""RoboCasa's topics on the world side of the lock-step loop: /robocasa/eef_pose (the end
effector in the base's frame, what the OSC controller moves), /robocasa/base_pose, the fingers
on /joint_states, the camera images, and the privileged poses (the object to pick and where it
goes); one /robocasa/command (Float64MultiArray, 12 values) answers each tick."""

from __future__ import annotations

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from indgen_core import topics
from indgen_core.ros import robocasa as robocasa_msgs
from indgen_core.ros.base import TICKS
from indgen_sim.ros.stamped_io import StampedWorldIO


class RobocasaIO(StampedWorldIO):
    def __init__(self, node, world, render: str = "on_request"):
        super().__init__(node, world, render)
        self.joint_pub = node.create_publisher(JointState, topics.JOINT_STATES, TICKS)
        self.eef_pub = node.create_publisher(PoseStamped, topics.ROBOCASA_EEF_POSE, TICKS)
        self.base_pub = node.create_publisher(PoseStamped, topics.ROBOCASA_BASE_POSE, TICKS)
        self.command(topics.ROBOCASA_COMMAND, "action", robocasa_msgs.read_command)

    def publish_state(self, obs, stamp) -> None:
        eef, base, fingers = robocasa_msgs.state_messages(obs["state"], stamp)
        self.joint_pub.publish(fingers)
        self.eef_pub.publish(eef)
        self.base_pub.publish(base)

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort):
        return super().exchange(setup, step, obs, stamp, timeout, should_abort)["action"]
