"""The FR3 runner's wires to the robot's drivers, and the port the reset and the episode loop
use (reset.RobotPort): the arm's and gripper's joint states in, each from its own driver's topic
and taken newest-first (franka's come at 1 kHz: indgen_core/ros/latest.py), segments to the arm
controller and targets to the Robotiq's out, franka's own report of a stop, and recovery in its
two stages, torque control only once the operator has acknowledged (torque_control.py)."""

from __future__ import annotations

from collections.abc import Callable

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from indgen_core.cell.robot_config import RobotConfig
from indgen_core.nodes import messages
from indgen_core.ros import fr3
from indgen_core.ros.base import LOCKSTEP
from indgen_core.ros.latest import LatestReader, Poller
from indgen_robot.arm_state import StateSource
from indgen_robot.ros.recovery import make_recovery
from indgen_robot.ros.robot_report import RobotReport
from indgen_robot.safety import Recovery
from indgen_robot.torque_control import TorqueControl

#: s between two takes of the arm's and gripper's newest joint states (franka's come at 1 kHz)
STATE_POLL_S = 0.01


class CellIO:
    def __init__(self, node, io, config: RobotConfig, recovery_method: str, on_change=lambda: None):
        c = self.config = config
        self.log = node.get_logger()
        self.on_change = on_change  # the runner republishes its status
        self.arm = StateSource("arm", c.arm.joints, c.control.arm_state_max_age_s, c.control.clock_tolerance_s)
        self.gripper = StateSource(
            "gripper", [c.gripper.joint], c.control.gripper_state_max_age_s, c.control.clock_tolerance_s
        )
        name = node.get_name()
        self.readers = [
            (LatestReader(node.context, JointState, c.arm.state_topic, f"{name}_arm_state"), self.arm),
            (LatestReader(node.context, JointState, c.gripper.state_topic, f"{name}_gripper_state"), self.gripper),
        ]
        self.report = RobotReport(node.context, c.arm.robot_state_topic, f"{name}_robot_state")
        self.arm_pub = io.create_publisher(JointTrajectory, c.arm.trajectory_topic, LOCKSTEP)
        self.gripper_pub = io.create_publisher(Float64MultiArray, c.gripper.command_topic, LOCKSTEP)
        self.recovery = make_recovery(io, c, recovery_method)
        self.torque = TorqueControl(self.recovery)
        self.after_sample: Callable[[], object] = lambda: None  # the runner's owed hold
        self.poller = Poller(self._poll, STATE_POLL_S, "joint states", self._poll_failed)

    def _poll(self) -> None:
        for reader, source in self.readers:
            msg = reader.take()
            if msg is not None:
                source.update(msg.name, msg.position, msg.velocity, messages.seconds(msg.header.stamp))
        self.after_sample()

    def _poll_failed(self, why: str) -> None:
        self.log.warning(f"dropped a joint state it cannot use: {why}", throttle_duration_sec=5.0)

    def driver_alive(self) -> bool:
        """The arm controller's topic still has its subscriber (franka's controller manager)."""
        return self.arm_pub.get_subscription_count() > 0

    # -- out ----------------------------------------------------------------------------------------
    def publish_segment(self, points) -> None:
        self.arm_pub.publish(fr3.trajectory(self.config.arm.joints, points))  # stamp zero: start at once

    def gripper_command(self, knuckle_rad: float) -> None:
        self.gripper_pub.publish(Float64MultiArray(data=[float(knuckle_rad)]))

    # -- recovery -----------------------------------------------------------------------------------
    def restore_state(self) -> Recovery:
        """Recovery's first stage (nothing moves): the robot's state and report back."""
        self.log.warning(f"the robot is in a fault: restoring its state ({self.recovery.describe()})")
        self.report.forget()  # what it reports after the recovery is about the stop that was
        recovery = self.torque.restore_state()
        self.arm.forget()
        self._log(recovery)
        self.on_change()
        return recovery

    def recover(self) -> Recovery:
        """Both stages, the second only once the operator has acknowledged (the reset's port)."""
        restored = self.restore_state() if self.arm.fresh() is None else Recovery(True, "state fresh")
        return restored if not restored.ok else self.enable_torque()

    def enable_torque(self) -> Recovery:
        """The second stage where torque control is off (the reset's port): once acknowledged."""
        if not self.torque.off:
            return Recovery(True, "torque control is on")
        recovery = self.torque.enable_torque()
        self._log(recovery)
        self.on_change()
        return recovery

    def _log(self, recovery: Recovery) -> None:
        if recovery.ok:  # (rclpy ties one severity to each logging call site)
            self.log.info(f"recovery: {recovery.message}")
        else:
            self.log.error(f"recovery: {recovery.message}")

    def close(self) -> None:
        self.poller.stop()
        for reader, _ in self.readers:
            reader.close()
        self.report.close()
