"""RoboCasa's ROS messages, both directions, in one place (the sim bridge's adapter and the
policy node's): the end effector in the base's frame as geometry_msgs/PoseStamped on
/robocasa/eef_pose, the base in the world on /robocasa/base_pose, the fingers on /joint_states,
and the 12-value command as a Float64MultiArray on /robocasa/command carrying the tick's
sequence in layout.data_offset. Quaternions: robosuite's observations are (x, y, z, w), as
geometry_msgs is."""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Point, PoseStamped, Quaternion
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from indgen_core.ros.fr3 import BadCommand, command, read_fixed

FINGERS = ("robot0_gripper_finger_joint1", "robot0_gripper_finger_joint2")
BASE_FRAME = "robot0_base"


def _pose(position, quat_xyzw, stamp, frame: str) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp, msg.header.frame_id = stamp, frame
    p, q = np.asarray(position, dtype=float), np.asarray(quat_xyzw, dtype=float)
    msg.pose.position = Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))
    msg.pose.orientation = Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3]))
    return msg


def _read_pose(msg: PoseStamped) -> tuple[np.ndarray, np.ndarray]:
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def state_messages(state: dict, stamp) -> tuple[PoseStamped, PoseStamped, JointState]:
    """The world's state (worker/__main__.py `_observation`) as ROS messages."""
    eef = _pose(state["eef_pos_base"], state["eef_quat_base"], stamp, BASE_FRAME)
    base = _pose(state["base_pos"], state["base_quat"], stamp, "world")
    fingers = JointState(name=list(FINGERS), position=[float(v) for v in np.asarray(state["gripper_qpos"])[:2]])
    fingers.header.stamp = stamp
    return eef, base, fingers


def read_state(eef: PoseStamped, base: PoseStamped, fingers: JointState) -> dict[str, np.ndarray]:
    index = {n: i for i, n in enumerate(fingers.name)}
    if any(n not in index for n in FINGERS):
        raise BadCommand(f"joint state lacks {', '.join(n for n in FINGERS if n not in index)}")
    eef_pos, eef_quat = _read_pose(eef)
    base_pos, base_quat = _read_pose(base)
    return {
        "eef_pos_base": eef_pos,
        "eef_quat_base": eef_quat,
        "base_pos": base_pos,
        "base_quat": base_quat,
        "gripper_qpos": np.array([fingers.position[index[n]] for n in FINGERS]),
    }


def robocasa_command(action, sequence: int) -> Float64MultiArray:
    return command(np.asarray(action, dtype=float), sequence, "robocasa")


def read_command(msg: Float64MultiArray) -> np.ndarray:
    return read_fixed(msg, 12, "a RoboCasa command")
