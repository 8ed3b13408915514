"""LIBERO's ROS messages, both directions, in one place (the sim bridge's adapter and the
policy node's): the end-effector pose as geometry_msgs/PoseStamped on /libero/eef_pose, the
fingers on /joint_states, and the OSC command (6-D delta pose + gripper) as a
Float64MultiArray on /libero/osc_command carrying the tick's sequence in layout.data_offset."""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Point, PoseStamped, Quaternion
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from indgen_core.ros.fr3 import BadCommand, command, read_fixed
from indgen_core.specs.libero import axis_angle_to_quat_xyzw, quat_xyzw_to_axis_angle

FINGERS = ("gripper0_finger_joint1", "gripper0_finger_joint2")


def state_messages(state, stamp) -> tuple[PoseStamped, JointState]:
    """The 8-D LIBERO state (eef position, axis-angle, two finger positions) as ROS messages."""
    state = np.asarray(state, dtype=float)
    q = axis_angle_to_quat_xyzw(state[3:6])
    eef = PoseStamped()
    eef.header.stamp, eef.header.frame_id = stamp, "world"
    eef.pose.position = Point(x=float(state[0]), y=float(state[1]), z=float(state[2]))
    eef.pose.orientation = Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3]))
    fingers = JointState(name=list(FINGERS), position=[float(state[6]), float(state[7])])
    fingers.header.stamp = stamp
    return eef, fingers


def read_state(eef: PoseStamped, fingers: JointState) -> np.ndarray:
    index = {n: i for i, n in enumerate(fingers.name)}
    if any(n not in index for n in FINGERS):
        raise BadCommand(f"joint state lacks {', '.join(n for n in FINGERS if n not in index)}")
    p, o = eef.pose.position, eef.pose.orientation
    return np.concatenate(
        [[p.x, p.y, p.z], quat_xyzw_to_axis_angle([o.x, o.y, o.z, o.w]), [fingers.position[index[n]] for n in FINGERS]]
    )


def osc_command(action, sequence: int) -> Float64MultiArray:
    return command(np.asarray(action, dtype=float), sequence, "osc")


def read_osc_command(msg: Float64MultiArray) -> np.ndarray:
    return read_fixed(msg, 7, "LIBERO command")
