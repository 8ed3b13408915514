"""The FR3's ROS messages, both directions, in one place: the twin's topic adapter and the
policy node's build and read exactly the same messages, and so will the real robot's driver.

- /joint_states (sensor_msgs/JointState): fr3_joint1..7 (rad, rad/s) as franka_ros2's
  joint_state_broadcaster names them, plus the Robotiq 2F-85's driver joint
  robotiq_85_left_knuckle_joint (0 rad open .. 0.8 rad closed; DROID's gripper position
  0..1 is its fraction of 0.8 rad).
- /indgen/fr3/joint_velocity_command (std_msgs/Float64MultiArray): 7 joint velocities in
  rad/s. DROID's normalised velocity v moves a joint by 0.2 v rad per 15 Hz tick, 3 v rad/s.
- /indgen/fr3/gripper_command (std_msgs/Float64MultiArray): 1 value, the knuckle joint's
  target in rad.
Both commands carry the tick's sequence number in layout.data_offset, so a command answers
exactly one tick. They go to the world (the twin, or the FR3 runner), never to a controller
of the robot: only the runner writes those, after its checks.
- camera images: rgb8, bgr8, bgra8 (the ZED wrapper) or rgba8, any size and row padding.
"""

from __future__ import annotations

import numpy as np
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from indgen_core.ros import convert
from indgen_core.specs.droid import GRIPPER_CLOSED_RAD, RAD_PER_S_AT_ONE

ARM_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))
GRIPPER_JOINT = "robotiq_85_left_knuckle_joint"


class BadCommand(ValueError):
    """A command message that must not be applied (wrong size, NaN)."""


def brief(values: np.ndarray, shown: int = 8) -> str:
    """The first values of what a message carried and how many there were: a log line about a
    garbage command stays one line, however many values the garbage had."""
    flat = np.asarray(values).ravel()
    head = ", ".join(f"{v:.6g}" for v in flat[:shown])
    return f"[{head}]" if flat.size <= shown else f"[{head}, ...] ({flat.size} values)"


def joint_state(q, dq, gripper: float, stamp) -> JointState:
    msg = JointState(
        name=[*ARM_JOINTS, GRIPPER_JOINT],
        position=[*map(float, q), float(gripper) * GRIPPER_CLOSED_RAD],
        velocity=[*map(float, dq), 0.0],
    )
    msg.header.stamp = stamp
    return msg


def read_joint_state(msg: JointState) -> tuple[np.ndarray, float]:
    """(arm joint positions in FR3 order, DROID gripper position 0..1), whatever the order of
    names in the message."""
    index = {n: i for i, n in enumerate(msg.name)}
    missing = [n for n in (*ARM_JOINTS, GRIPPER_JOINT) if n not in index]
    if missing:
        raise BadCommand(f"joint state lacks {', '.join(missing)}")
    q = np.array([msg.position[index[n]] for n in ARM_JOINTS], dtype=np.float64)
    g = float(np.clip(msg.position[index[GRIPPER_JOINT]] / GRIPPER_CLOSED_RAD, 0.0, 1.0))
    return q, g


def read_fixed(msg, size: int, what: str) -> np.ndarray:
    """A command's `size` values, finite; BadCommand (with a brief of what came) otherwise."""
    a = np.asarray(msg.data, dtype=np.float64)
    if a.shape != (size,) or not np.all(np.isfinite(a)):
        raise BadCommand(f"{what} must be {size} finite values, got {brief(a)}")
    return a


def command(values, sequence: int, label: str) -> Float64MultiArray:
    values = [float(v) for v in values]
    msg = Float64MultiArray(data=values)
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    msg.layout.data_offset = int(sequence) % 2**32
    return msg


def arm_command(droid_velocity, sequence: int) -> Float64MultiArray:
    """DROID's normalised joint velocities as the controller's rad/s."""
    return command(np.asarray(droid_velocity, dtype=float) * RAD_PER_S_AT_ONE, sequence, "joints")


def gripper_command(droid_gripper: float, sequence: int) -> Float64MultiArray:
    return command([float(droid_gripper) * GRIPPER_CLOSED_RAD], sequence, "gripper")


#: the label of a command message that carries no values but the reason there are none
NO_COMMAND = "no command: "


def no_command(sequence: int, why: str) -> Float64MultiArray:
    """The policy node's answer to a tick it cannot command (a stale camera frame...): no
    values, the reason in the label, so that the world holds at once and says why."""
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=(NO_COMMAND + why)[:400], size=0, stride=0)]
    msg.layout.data_offset = int(sequence) % 2**32
    return msg


def refusal(msg: Float64MultiArray) -> str | None:
    """The reason a no_command message gives, or None for a command."""
    if len(msg.data) == 0 and msg.layout.dim and msg.layout.dim[0].label.startswith(NO_COMMAND):
        return msg.layout.dim[0].label[len(NO_COMMAND) :]
    return None


def read_arm_command(msg: Float64MultiArray) -> np.ndarray:
    """rad/s back to DROID's normalised velocities; BadCommand for anything not executable."""
    v = np.asarray(msg.data, dtype=np.float64)
    if v.shape != (7,) or not np.all(np.isfinite(v)):
        raise BadCommand(f"arm command must be 7 finite velocities, got {brief(v)}")
    return v / RAD_PER_S_AT_ONE


def read_gripper_command(msg: Float64MultiArray) -> float:
    g = np.asarray(msg.data, dtype=np.float64)
    if g.shape != (1,) or not np.isfinite(g[0]):
        raise BadCommand(f"gripper command must be one finite position, got {brief(g)}")
    return float(np.clip(g[0] / GRIPPER_CLOSED_RAD, 0.0, 1.0))


def image_msg(pixels: np.ndarray, encoding: str, stamp, frame_id: str) -> Image:
    """A sensor_msgs/Image of `pixels` (height x width [x channels], already in `encoding`'s
    layout: uint8 for rgb8/bgr8/bgra8, float32 for 32FC1), the one builder of every node that
    publishes images. The bytes go into the message as an array: rclpy checks a `bytes` value
    element by element (about 11 ms against 6 for a 1280 x 720 frame)."""
    import array

    pixels = np.ascontiguousarray(pixels)
    msg = Image(
        height=pixels.shape[0],
        width=pixels.shape[1],
        encoding=encoding,
        is_bigendian=0,
        step=pixels.shape[1] * (pixels.shape[2] if pixels.ndim == 3 else 1) * pixels.itemsize,
    )
    buffer = array.array("B")
    buffer.frombytes(pixels.tobytes())
    msg.data = buffer
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    return msg


def image(rgb: np.ndarray, stamp, frame_id: str) -> Image:
    return image_msg(np.asarray(rgb, dtype=np.uint8), "rgb8", stamp, frame_id)


#: encoding -> (channels, the channel order that gives RGB)
ENCODINGS = {"rgb8": (3, [0, 1, 2]), "bgr8": (3, [2, 1, 0]), "rgba8": (4, [0, 1, 2]), "bgra8": (4, [2, 1, 0])}
MAX_IMAGE_SIDE = 8192


def read_image(msg: Image) -> np.ndarray:
    """An (h, w, 3) RGB array from any of ENCODINGS; BadCommand for anything else."""
    if msg.encoding not in ENCODINGS:
        raise BadCommand(f"camera image encoding {msg.encoding[:32]!r} is not one of {', '.join(ENCODINGS)}")
    channels, order = ENCODINGS[msg.encoding]
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    if not (0 < h <= MAX_IMAGE_SIDE and 0 < w <= MAX_IMAGE_SIDE) or step < w * channels or len(msg.data) < h * step:
        raise BadCommand(f"camera image of {w} x {h} ({msg.encoding}, step {step}) with {len(msg.data)} bytes")
    rows = np.frombuffer(msg.data, dtype=np.uint8, count=h * step).reshape(h, step)
    return rows[:, : w * channels].reshape(h, w, channels)[..., order].copy()


def _pose(p):
    from geometry_msgs.msg import Point, Pose, Quaternion

    return Pose(
        position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=Quaternion(w=float(p[3]), x=float(p[4]), y=float(p[5]), z=float(p[6])),
    )


def _array(p) -> np.ndarray:
    return np.array(
        [p.position.x, p.position.y, p.position.z, p.orientation.w, p.orientation.x, p.orientation.y, p.orientation.z]
    )


def object_poses(
    poses: dict[str, np.ndarray],
    stamp,
    frame_id: str = "fr3_link0",
    pick: str = "",
    place: str = "",
    grasp: np.ndarray | None = None,
):
    """Privileged object poses (position + wxyz quaternion each) as an ObjectPoses message;
    `grasp` (x, y, top z, yaw) becomes pick_grasp."""
    from indgen_msgs.msg import ObjectPoses

    msg = ObjectPoses(names=list(poses), pick=pick, place=place)
    msg.poses = [_pose(p) for p in poses.values()]
    if grasp is not None:
        yaw = float(grasp[3])
        msg.pick_grasp = _pose([grasp[0], grasp[1], grasp[2], np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    return msg


def read_object_poses(msg) -> dict[str, np.ndarray]:
    return {n: _array(p) for n, p in zip(msg.names, msg.poses, strict=True)}


def read_grasp(msg) -> np.ndarray:
    """pick_grasp back as (x, y, top z, yaw)."""
    g = _array(msg.pick_grasp)
    return np.array([g[0], g[1], g[2], 2.0 * np.arctan2(g[6], g[3])])


def trajectory(joints, points) -> JointTrajectory:
    """A segment for the arm's JointTrajectoryController (indgen_core.cell.trajectory.Point list);
    header.stamp zero: the controller starts it at once."""
    msg = JointTrajectory(joint_names=list(joints))
    for p in points:
        point = JointTrajectoryPoint(
            positions=[float(x) for x in p.positions],
            velocities=[float(x) for x in p.velocities] if p.velocities is not None else [],
        )
        point.time_from_start = convert.duration(p.t)
        msg.points.append(point)
    return msg
