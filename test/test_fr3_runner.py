"""The FR3 runner's safety behaviour against the hardware stand-in, with this test playing
the policy node and the progression manager: the reset reaches the reset pose; stale,
repeated and garbage commands are never applied; a policy that stops answering, stale joint
states and the soft e-stop each stop the episode as aborted with the robot held; and the
stand-in never reflexes. Plus the camera node and the image encodings the policy node reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
from procs import LoggedProcess
from ros_helpers import spin_until, spinning

from indgen_core import graph, topics
from indgen_core.robot_config import load_robot_config

pytestmark = pytest.mark.ros
rclpy = pytest.importorskip("rclpy")
CONFIG = load_robot_config("fr3_robotiq_zed")


def _start(executable: str, *params: str) -> subprocess.Popen:
    argv = [graph.executable_path(executable), "--ros-args"]
    for p in params:
        argv += ["-p", p]
    env = dict(os.environ)
    env.pop("MENAGERIE_ROOT", None)
    return LoggedProcess(argv, env=env)


def _stop(proc) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.output()


class FakePolicy:
    """Answers every ControlTick like the policy node would (IndGen's command topics, the
    tick's sequence in layout.data_offset); `behaviour(tick)` says what to send."""

    def __init__(self, node):
        from std_msgs.msg import Float64MultiArray

        from indgen_core.nodes import fr3
        from indgen_core.nodes.base import LATCHED, LOCKSTEP
        from indgen_msgs.msg import ControlTick, PolicyStatus

        self.fr3 = fr3
        self.arm = node.create_publisher(Float64MultiArray, topics.ARM_VELOCITY_COMMAND, LOCKSTEP)
        self.gripper = node.create_publisher(Float64MultiArray, topics.GRIPPER_COMMAND, LOCKSTEP)
        self.status = node.create_publisher(PolicyStatus, topics.POLICY_STATUS, LATCHED)
        self.status.publish(PolicyStatus(connected=True, message="connected"))
        # the policy node's heartbeat: the world takes silence for a dead policy node
        node.create_timer(1.0, lambda: self.status.publish(PolicyStatus(connected=True, message="connected")))
        node.create_subscription(ControlTick, topics.CONTROL_TICK, self._on_tick, LOCKSTEP)
        self.behaviour = lambda tick: "still"
        self.ticks = []

    def send(self, velocity, sequence, gripper=0.0):
        self.arm.publish(self.fr3.arm_command(velocity, sequence))
        self.gripper.publish(self.fr3.gripper_command(gripper, sequence))

    def _on_tick(self, tick):
        self.ticks.append(tick)
        what = self.behaviour(tick)
        push = np.zeros(7)
        push[0] = 0.8
        if what == "still":
            self.send(np.zeros(7), tick.sequence)
        elif what == "stale_then_still":  # a command for the previous tick first: never applied
            self.send(push, tick.sequence - 1)
            self.send(np.zeros(7), tick.sequence)
        elif what == "still_then_repeat":  # the tick answered, then again: the repeat is dropped
            self.send(np.zeros(7), tick.sequence)
            self.send(push, tick.sequence)
        elif what == "garbage":
            self.arm.publish(self.fr3.command([float("nan")] * 7, tick.sequence, "joints"))
            self.gripper.publish(self.fr3.gripper_command(0.0, tick.sequence))
        # "silent": nothing


@pytest.fixture
def robot(ros_context):
    stand_in = _start("fr3_stand_in", "builtin:=true", "camera_hz:=2.0", "render_width:=64", "render_height:=36",
                      "image_width:=64", "image_height:=36")
    runner = _start("fr3_runner")
    node = rclpy.create_node("runner_test", context=ros_context)
    try:
        with spinning(node):
            yield node, stand_in, runner
    finally:
        node.destroy_node()
        logs = _stop(runner), _stop(stand_in)
        assert "REFLEX" not in logs[1], logs[1][-3000:]


def _wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _call(client, request, timeout=30.0):
    future = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.service_is_ready():
            future = client.call_async(request)
            if _wait(future.done, min(timeout, 25.0)):
                return future.result()
        time.sleep(0.1)
    raise AssertionError(f"no answer from {client.srv_name}")


def test_the_runner_resets_holds_and_never_applies_a_bad_command(robot):
    from rclpy.action import ActionClient
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from std_srvs.srv import SetBool

    from indgen_core.nodes import convert
    from indgen_core.nodes.base import LATCHED, LOCKSTEP
    from indgen_core.records import TaskSetup
    from indgen_msgs.action import RunEpisode
    from indgen_msgs.srv import PrepareTrial

    node, stand_in, _ = robot
    policy = FakePolicy(node)
    joints, status = [], {}
    node.create_subscription(JointState, "/joint_states", lambda m: joints.append((time.monotonic(),
                                                                                   np.array(m.position[:7]))),
                             LOCKSTEP)
    node.create_subscription(String, "/indgen/sim/stand_in/status", lambda m: status.update(json.loads(m.data)),
                             LATCHED)
    prepare = node.create_client(PrepareTrial, topics.PREPARE_TRIAL)
    estop = node.create_client(SetBool, topics.ESTOP)
    episodes = ActionClient(node, RunEpisode, topics.RUN_EPISODE)

    def setup(name, steps):
        return TaskSetup(campaign_id="c", trial_id=name, world="fr3", axis="stack", level=0, in_distribution=True,
                         parameters=(), trial_index=0, seed=1, policy="p", max_steps=steps)

    def run(name, steps, behaviour, during=None):
        assert _call(prepare, PrepareTrial.Request(setup=convert.setup_to_msg(setup(name, steps)))).ready
        policy.behaviour = behaviour
        goal = RunEpisode.Goal(setup=convert.setup_to_msg(setup(name, steps), node.get_clock().now().to_msg()))
        assert _wait(episodes.server_is_ready, 30)
        send = episodes.send_goal_async(goal)
        assert _wait(send.done, 10) and send.result().accepted
        result = send.result().get_result_async()
        if during is not None:
            during()
        assert _wait(result.done, 120), f"{name} did not end"
        return convert.result_from_msg(result.result().result.result)

    assert _wait(lambda: len(joints) > 5, 60), "no joint states from the stand-in"
    # the reset reaches DROID's reset pose within tolerance
    assert _call(prepare, PrepareTrial.Request(setup=convert.setup_to_msg(setup("r", 10)))).ready
    assert np.max(np.abs(joints[-1][1] - np.array(CONFIG.reset.pose))) <= CONFIG.reset.tolerance
    # the same request again (a reply lost to discovery: the progression manager asks again):
    # answered from where the arm is, nothing sent to the arm
    time.sleep(1.2)  # the stand-in's latched status (every 0.5 s) is current
    before = status.get("trajectories")
    assert _call(prepare, PrepareTrial.Request(setup=convert.setup_to_msg(setup("r", 10)))).ready
    time.sleep(1.2)
    assert before and status.get("trajectories") == before, (before, status.get("trajectories"))

    for behaviour in ("stale_then_still", "still_then_repeat", "garbage"):
        start = joints[-1][1].copy()
        result = run(behaviour, 30, lambda tick, b=behaviour: b)
        moved = max(float(np.max(np.abs(q - start))) for _, q in joints[-40:])
        assert moved < 0.01, f"{behaviour}: the arm moved {moved:.3f} rad"  # nothing of the push was applied
        if behaviour == "garbage":
            assert result.outcome.name == "ABORTED" and "no usable command for 8 ticks" in result.reason
            assert "not finite" in result.reason
        else:
            assert result.outcome.name == "FAILURE" and result.details["judged"] is False, result.reason
            assert result.details["timing"]["missed_ticks"] == 0

    silent = run("silent", 60, lambda tick: "still" if tick.step < 10 else "silent")
    assert silent.outcome.name == "ABORTED" and "no usable command" in silent.reason

    def freeze():  # the driver hangs: joint states stop
        assert _wait(lambda: len(policy.ticks) and policy.ticks[-1].trial_id == "stale" and
                     policy.ticks[-1].step > 10, 30)
        stand_in.send_signal(signal.SIGSTOP)
        time.sleep(1.0)
        stand_in.send_signal(signal.SIGCONT)

    stale = run("stale", 200, lambda tick: "still", during=freeze)
    assert stale.outcome.name == "ABORTED" and "joint states are" in stale.reason

    def press_estop():
        assert _wait(lambda: policy.ticks[-1].trial_id == "estop" and policy.ticks[-1].step > 10, 30)
        assert _call(estop, SetBool.Request(data=True)).success

    stopped = run("estop", 200, lambda tick: "still", during=press_estop)
    assert stopped.outcome.name == "ABORTED" and stopped.reason == "operator e-stop"
    refused = _call(prepare, PrepareTrial.Request(setup=convert.setup_to_msg(setup("after", 10))))
    assert not refused.ready and "e-stop is engaged" in refused.message
    assert _call(estop, SetBool.Request(data=False)).success
    assert _call(prepare, PrepareTrial.Request(setup=convert.setup_to_msg(setup("after", 10)))).ready
    spin_until(node, lambda: False, 0.6)
    assert status.get("reflexes") == 0 and status.get("refused_trajectories") == 0, status


def test_camera_node_publishes_a_video_file_and_refuses_a_missing_camera(tmp_path, ros_context):
    import cv2
    from sensor_msgs.msg import Image

    from indgen_core.nodes import fr3
    from indgen_core.nodes.base import LOCKSTEP

    video = tmp_path / "wrist.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 15, (320, 240))
    for i in range(20):
        frame = np.zeros((240, 320, 3), np.uint8)
        frame[:, :, 2] = 200  # red in BGR
        frame[10:20, i:i + 10] = 255
        writer.write(frame)
    writer.release()
    proc = _start("camera_node", f"sources:=wrist={video}", "loop:=true", "rate_hz:=10.0", "width:=160",
                  "height:=120")
    node = rclpy.create_node("camera_test", context=ros_context)
    got = []
    node.create_subscription(Image, "/cameras/wrist/image_raw", got.append, LOCKSTEP)
    try:
        assert spin_until(node, lambda: len(got) >= 5, 30), _stop(proc)
    finally:
        node.destroy_node()
        _stop(proc)
    rgb = fr3.read_image(got[-1])
    assert rgb.shape == (120, 160, 3) and got[-1].encoding == "bgr8"
    assert rgb[60, 80, 0] > 150 and rgb[60, 80, 2] < 80  # red came through as red
    bad = subprocess.run([graph.executable_path("camera_node"), "--ros-args", "-p", "sources:=wrist=/dev/nonexistent"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "camera 'wrist': cannot open '/dev/nonexistent'" in bad.stderr


def test_the_policy_node_reads_every_camera_encoding_with_row_padding():
    from sensor_msgs.msg import Image

    from indgen_core.nodes import fr3
    from indgen_core.specs.droid import letterbox

    rgb = np.random.default_rng(0).integers(0, 255, (720, 1280, 3), dtype=np.uint8)
    for encoding, channels in (("rgb8", 3), ("bgr8", 3), ("bgra8", 4), ("rgba8", 4)):
        order = [2, 1, 0] if encoding.startswith("bgr") else [0, 1, 2]
        data = np.zeros((720, 1280 * channels + 16), np.uint8)  # 16 bytes of padding per row
        pixels = np.full((720, 1280, channels), 255, np.uint8)
        pixels[..., :3] = rgb[..., order]
        data[:, : 1280 * channels] = pixels.reshape(720, -1)
        msg = Image(height=720, width=1280, encoding=encoding, step=1280 * channels + 16, data=data.tobytes())
        assert np.array_equal(fr3.read_image(msg), rgb), encoding
    assert letterbox(rgb).shape == (224, 224, 3)
    with pytest.raises(fr3.BadCommand, match="not one of"):
        fr3.read_image(Image(height=2, width=2, encoding="mono16", step=4, data=bytes(8)))
    with pytest.raises(fr3.BadCommand, match="bytes"):
        fr3.read_image(Image(height=720, width=1280, encoding="bgra8", step=5120, data=bytes(100)))
