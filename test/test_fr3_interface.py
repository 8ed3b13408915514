"""The FR3's topic interface (indgen_core.ros.fr3) and the lock-step answer matching: the
messages the twin, the policy node and later the real robot's driver share, and what happens
to a late, repeated or malformed command (dropped, never applied)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytestmark = pytest.mark.ros

pytest.importorskip("rclpy")

from indgen_core.episode import PolicyUnavailable  # noqa: E402
from indgen_core.nodes.lockstep import AnswerSlot  # noqa: E402
from indgen_core.ros import fr3  # noqa: E402
from indgen_core.waiting import wait_until  # noqa: E402


def test_joint_state_round_trip_in_any_name_order():
    q = np.linspace(-1, 1, 7)
    msg = fr3.joint_state(q, np.zeros(7), 0.5, fr3.JointState().header.stamp)
    assert msg.name[:7] == [f"fr3_joint{i}" for i in range(1, 8)] and msg.name[7] == "robotiq_85_left_knuckle_joint"
    assert msg.position[7] == pytest.approx(0.4)  # half closed: 0.4 of the knuckle's 0.8 rad
    order = [7, 3, 0, 6, 1, 5, 2, 4]
    msg.name, msg.position = [msg.name[i] for i in order], [msg.position[i] for i in order]
    q2, g = fr3.read_joint_state(msg)
    np.testing.assert_allclose(q2, q)
    assert g == pytest.approx(0.5)
    msg.name = msg.name[1:]
    msg.position = msg.position[1:]
    with pytest.raises(fr3.BadCommand, match="lacks"):
        fr3.read_joint_state(msg)


def test_commands_are_rad_per_second_and_carry_the_tick():
    v = np.array([1.0, -0.5, 0, 0, 0, 0, 0.25])
    arm = fr3.arm_command(v, 41)
    assert list(arm.data) == [3.0, -1.5, 0, 0, 0, 0, 0.75] and arm.layout.data_offset == 41
    np.testing.assert_allclose(fr3.read_arm_command(arm), v)
    grip = fr3.gripper_command(1.0, 41)
    assert list(grip.data) == [0.8] and fr3.read_gripper_command(grip) == 1.0
    for bad in ([0.0] * 6, [np.nan] * 7, [0.0] * 6 + [np.inf]):
        with pytest.raises(fr3.BadCommand, match="7 finite"):
            fr3.read_arm_command(fr3.command(bad, 1, "joints"))
    with pytest.raises(fr3.BadCommand):
        fr3.read_gripper_command(fr3.command([np.nan], 1, "gripper"))


def test_one_image_builder_for_every_encoding_the_nodes_publish():
    """fr3.image_msg builds the frames of the twin's bridge, the ZED stand-in (bgra8 and its
    32FC1 depth) and camera_node (bgr8): the step counts channels and bytes per value."""
    stamp = fr3.JointState().header.stamp
    rgb = np.random.default_rng(1).integers(0, 255, (3, 4, 3), dtype=np.uint8)
    bgra = np.concatenate([rgb[..., ::-1], np.full((3, 4, 1), 255, np.uint8)], axis=2)
    msg = fr3.image_msg(bgra, "bgra8", stamp, "cam")
    assert (msg.step, len(msg.data), msg.encoding) == (16, 48, "bgra8")
    np.testing.assert_array_equal(fr3.read_image(msg), rgb)
    depth = fr3.image_msg(np.full((3, 4), 1.25, np.float32), "32FC1", stamp, "cam")
    assert (depth.step, len(depth.data)) == (16, 48)
    assert np.frombuffer(bytes(depth.data), np.float32).tolist() == [1.25] * 12


def test_images_round_trip_rgb_bgr_and_padded_rows():
    rgb = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    msg = fr3.image(rgb, fr3.JointState().header.stamp, "exterior_1")
    assert (msg.height, msg.width, msg.encoding, msg.header.frame_id) == (4, 5, "rgb8", "exterior_1")
    np.testing.assert_array_equal(fr3.read_image(msg), rgb)
    bgr = fr3.image(rgb[..., ::-1], msg.header.stamp, "x")
    bgr.encoding = "bgr8"
    np.testing.assert_array_equal(fr3.read_image(bgr), rgb)
    padded = np.zeros((4, 16), dtype=np.uint8)  # a driver's row padding (step > width * 3)
    padded[:, :15] = rgb.reshape(4, 15)
    msg.step, msg.data = 16, padded.tobytes()
    np.testing.assert_array_equal(fr3.read_image(msg), rgb)
    msg.encoding = "mono8"
    with pytest.raises(fr3.BadCommand, match="mono8"):
        fr3.read_image(msg)


def test_object_poses_round_trip():
    poses = {"orange_block": np.array([0.5, 0.1, 0.025, 1, 0, 0, 0]), "cup": np.array([0.4, 0.3, 0.045, 0, 0, 0, 1])}
    back = fr3.read_object_poses(fr3.object_poses(poses, fr3.JointState().header.stamp))
    assert list(back) == list(poses)
    for name, pose in poses.items():
        np.testing.assert_allclose(back[name], pose)


def test_answer_slot_takes_only_the_expected_tick_once():
    slot = AnswerSlot(("arm", "gripper"))
    slot.expect(7)
    assert not slot.offer(6, "late arm", "arm")  # the previous tick's command: stale
    assert slot.offer(7, "arm", "arm")
    assert not slot.offer(7, "again", "arm")  # a repeat: stale
    assert slot.offer(7, "grip", "gripper")
    assert slot.wait(1.0, lambda: None, "step 3") == {"arm": "arm", "gripper": "grip"}
    assert slot.stale == 2
    assert not slot.offer(7, "after", "arm")  # once answered, the tick takes nothing more
    slot.expect(8)
    slot.offer(8, "arm", "arm")
    with pytest.raises(PolicyUnavailable, match=r"no gripper command for step 4 within 0\.1 s"):
        slot.wait(0.1, lambda: None, "step 4")
    slot.expect(9)
    with pytest.raises(PolicyUnavailable, match="policy lost"):
        slot.wait(5.0, lambda: "policy lost", "step 5")


def test_twin_io_over_dds_drops_stale_and_malformed_commands(ros_context):
    """The bridge side publishes a tick on the FR3 topics; a peer node answers first with a stale
    and a NaN command, then with the right ones: only the right ones are returned."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Float64MultiArray

    from indgen_core import topics
    from indgen_core.ros.base import LOCKSTEP
    from indgen_msgs.msg import ControlTick
    from indgen_sim.ros.droid_io import DroidTwinIO

    world_node = rclpy.create_node("twin_io_test", context=ros_context)
    peer = rclpy.create_node("fake_policy", context=ros_context)
    io = DroidTwinIO(world_node, type("W", (), {"cameras": []})())
    arm_pub = peer.create_publisher(Float64MultiArray, topics.ARM_VELOCITY_COMMAND, LOCKSTEP)
    grip_pub = peer.create_publisher(Float64MultiArray, topics.GRIPPER_COMMAND, LOCKSTEP)

    def answer(tick: ControlTick) -> None:
        arm_pub.publish(fr3.arm_command([0.9] * 7, tick.sequence - 1))  # stale
        arm_pub.publish(fr3.command([np.nan] * 7, tick.sequence, "joints"))  # garbage
        arm_pub.publish(fr3.arm_command([0.1] * 7, tick.sequence))
        grip_pub.publish(fr3.gripper_command(1.0, tick.sequence))

    peer.create_subscription(ControlTick, topics.CONTROL_TICK, answer, LOCKSTEP)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(world_node)
    executor.add_node(peer)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        assert wait_until(lambda: arm_pub.get_subscription_count() > 0 and io.tick_pub.get_subscription_count() > 0,
                          10, poll=0.05), "discovery did not complete"
        setup = type("S", (), {"trial_id": "t-1"})()
        obs = {"joint_position": np.zeros(7), "joint_velocity": np.zeros(7), "gripper_position": 0.0}
        action = io.exchange(setup, 0, obs, fr3.JointState().header.stamp, 10.0, lambda: None)
        np.testing.assert_allclose(action["joint_velocity"], [0.1] * 7)
        assert action["gripper"] == 1.0
        assert io.stale == 1 and io.malformed == 1
    finally:
        executor.shutdown()
        world_node.destroy_node()
        peer.destroy_node()


class _UvcDevice:
    """What OpenCV's VideoCapture does with a UVC device's modes: it takes the mode asked for
    when the device offers it, and otherwise keeps the one it has (CAP_PROP_* read back)."""

    def __init__(self, modes: list[tuple[int, int, float]]):
        self.modes, self.props, self.mode = modes, {}, modes[0]

    def set(self, prop, value):
        self.props[prop] = value
        wanted = tuple(self.props.get(p, m) for p, m in zip((3, 4, 5), self.mode, strict=True))
        if wanted in self.modes:
            self.mode = wanted
        return True

    def get(self, prop):
        return float(self.mode[(3, 4, 5).index(prop)])


def test_a_uvc_camera_is_asked_for_the_configured_mode_and_a_device_without_it_is_one_sentence():
    """camera_node asks a device for the robot configuration's capture mode (a ZED over UVC at
    HD720: 2560 x 720, 15 fps) and reads back what it took; a device that has no such mode
    keeps its own, said in one sentence (the image would otherwise silently be another size)."""
    cv2 = pytest.importorskip("cv2")
    from indgen_core.cell.robot_config import load_robot_config
    from indgen_robot.ros.camera_node import is_device, set_capture_mode

    mode = load_robot_config("fr3_robotiq_zed").uvc
    assert (cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT, cv2.CAP_PROP_FPS) == (3, 4, 5)
    zed = _UvcDevice([(1344, 376, 30.0), (2560, 720, 15.0), (3840, 1080, 15.0)])
    assert set_capture_mode(zed, cv2, "wrist", mode) is None and zed.mode == (2560, 720, 15.0)
    webcam = _UvcDevice([(640, 480, 30.0)])
    problem = set_capture_mode(webcam, cv2, "wrist", mode)
    assert problem == ("camera 'wrist' delivers 640 x 480 at 30 fps, not the robot configuration's 2560 x 720 at "
                       "15 fps (uvc): the device has no such mode")
    assert is_device("0") and is_device("/dev/video2") and not is_device("/data/wrist.mp4")
