"""fr3_stand_in: the MuJoCo twin on the wall clock behind the FR3's real interfaces (what
franka_ros2, ros2_controllers, the Robotiq driver and the ZED wrapper give a user), so that
the real-robot graph (`indgen launch stack_axis sim:=false robot:=mock`) runs unchanged
against it. Topics and joint names come from the same robot configuration the runner reads.

Publishes /joint_states (arm + knuckle joint, reliable, `joint_state_hz`), one
sensor_msgs/Image per configured camera (`image_width` x `image_height`, `encoding`, as the
ZED wrapper does: rendered at `render_width` x `render_height` and scaled up, a CPU cannot
render HD720 at 15 Hz) and, sim only and marked as such, the objects' poses on
/indgen/sim/object_poses for the oracle. Subscribes the arm's JointTrajectory topic and the
gripper's position command. `/indgen/sim/stand_in/build_scene` (std_srvs/Trigger) is the
person at the robot building the scene of the latest task setup;
`/indgen/sim/stand_in/recover` is franka's error recovery after a reflex. Its status (reflexes,
segments taken) is latched on /indgen/sim/stand_in/status (std_msgs/String, JSON), with the twin's own success check
of the scene as it stands (sim only: what the person at the robot would see).

Parameters: robot (robot configuration), builtin (the twin's built-in FR3), joint_state_hz,
camera_hz, image_width, image_height, render_width, render_height, encoding (bgra8, bgr8,
rgb8), privileged (publish the object poses).
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from indgen_core import topics
from indgen_core.nodes import convert, fr3
from indgen_core.nodes.base import LATCHED, LOCKSTEP, declare, one_line, run_node, serve, subscribe
from indgen_core.robot_config import load_robot_config
from indgen_core.trajectory import Point
from indgen_msgs.msg import ObjectPoses, TaskSetup
from indgen_sim.twin.hardware import HardwareStandIn

STATUS_TOPIC = "/indgen/sim/stand_in/status"


def image_message(rgb: np.ndarray, size: tuple[int, int], encoding: str, stamp, frame_id: str) -> Image:
    """An upscaled frame in a camera driver's encoding (bgra8 like the ZED wrapper)."""
    height, width = size
    fy, fx = max(height // rgb.shape[0], 1), max(width // rgb.shape[1], 1)
    big = np.repeat(np.repeat(rgb, fy, axis=0), fx, axis=1)[:height, :width]
    if encoding == "bgra8":
        data = np.empty((*big.shape[:2], 4), np.uint8)
        data[..., :3], data[..., 3] = big[..., ::-1], 255
    elif encoding == "bgr8":
        data = big[..., ::-1]
    else:
        data = big
    data = np.ascontiguousarray(data)
    msg = Image(height=data.shape[0], width=data.shape[1], encoding=encoding, is_bigendian=0,
                step=data.shape[1] * data.shape[2], data=data.tobytes())
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    return msg


class Fr3StandIn(Node):
    def __init__(self):
        super().__init__("fr3_stand_in")
        self.p = declare(self, robot="fr3_robotiq_zed", builtin=False, joint_state_hz=30.0, camera_hz=15.0,
                         image_width=1280, image_height=720, render_width=320, render_height=180, encoding="bgra8",
                         privileged=True)
        if self.p["encoding"] not in ("bgra8", "bgr8", "rgb8"):
            from indgen_core.errors import IndGenError

            raise IndGenError(f"encoding must be bgra8, bgr8 or rgb8, got {self.p['encoding']!r}")
        self.config = load_robot_config(self.p["robot"])
        self.hw = HardwareStandIn(builtin=self.p["builtin"], joint_names=self.config.arm.joints)
        self.joint_pub = self.create_publisher(JointState, self.config.joint_states_topic, LOCKSTEP)
        self.image_pubs = {cam: self.create_publisher(Image, topic, LOCKSTEP)
                           for cam, topic in self.config.cameras.items()}
        self.pose_pub = self.create_publisher(ObjectPoses, topics.OBJECT_POSES, LOCKSTEP)
        self.status_pub = self.create_publisher(String, STATUS_TOPIC, LATCHED)
        subscribe(self, JointTrajectory, self.config.arm.trajectory_topic, self._on_trajectory, LOCKSTEP)
        subscribe(self, Float64MultiArray, self.config.gripper.command_topic, self._on_gripper, LOCKSTEP)
        subscribe(self, TaskSetup, topics.TASK_SETUP, self._on_setup, LATCHED)
        serve(self, Trigger, "/indgen/sim/stand_in/build_scene", self._build_scene)
        serve(self, Trigger, "/indgen/sim/stand_in/recover", self._recover)
        self.setup = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hardware", daemon=True)
        self._thread.start()
        # cameras on their own thread, as a camera driver is its own process: a 3.7 MB frame
        # being built and sent never delays the joint states
        self._cameras = threading.Thread(target=self._run_cameras, name="cameras", daemon=True)
        self._cameras.start()
        self.get_logger().info(f"FR3 hardware stand-in ({self.hw.world.source.detail}) behind robot configuration "
                               f"'{self.config.name}'")

    # -- the controllers' inputs -------------------------------------------------------------------
    def _on_trajectory(self, msg: JointTrajectory) -> None:
        points = []
        for p in msg.points:
            t = p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
            points.append(Point(t, np.array(p.positions, float), np.array(p.velocities, float)
                                if len(p.velocities) else None))
        refused = self.hw.command_trajectory(list(msg.joint_names), points)
        if refused:
            self.get_logger().warning(f"trajectory refused: {refused}", throttle_duration_sec=2.0)

    def _on_gripper(self, msg: Float64MultiArray) -> None:
        if len(msg.data) == 1:
            self.hw.command_gripper(float(msg.data[0]))

    def _on_setup(self, msg: TaskSetup) -> None:
        self.setup = convert.setup_from_msg(msg)

    def _build_scene(self, request, response):
        if self.setup is None:
            response.success, response.message = False, "no task setup received yet"
            return response
        self.hw.build_scene(self.setup)
        response.success, response.message = True, f"scene of {self.setup.trial_id} built"
        return response

    def _recover(self, request, response):
        self.hw.recover()
        response.success, response.message = True, "recovered"
        return response

    # -- the hardware's outputs --------------------------------------------------------------------
    def _run(self) -> None:
        start = time.monotonic()
        due = {"joints": start, "poses": start, "status": start}
        periods = {"joints": 1.0 / self.p["joint_state_hz"], "poses": 1.0 / 15.0, "status": 0.5}
        reflexes = 0
        while not self._stop.is_set():
            try:
                reflexes = self._cycle(start, due, periods, reflexes)
            except Exception as exc:  # the hardware thread must outlive any one bad cycle
                self.get_logger().error(f"stand-in cycle failed: {one_line(exc)}", throttle_duration_sec=5.0)
                time.sleep(0.01)

    def _run_cameras(self) -> None:
        if not self.image_pubs:
            return
        size = (self.p["image_height"], self.p["image_width"])
        render = (self.p["render_height"], self.p["render_width"])
        period = 1.0 / max(self.p["camera_hz"], 1e-3)
        due = time.monotonic()
        while not self._stop.is_set():
            due += period
            try:
                stamp = self.get_clock().now().to_msg()
                frames = {cam: self.hw.render(cam, render) for cam in self.image_pubs}
                for cam, rgb in frames.items():
                    self.image_pubs[cam].publish(image_message(rgb, size, self.p["encoding"], stamp, cam))
            except Exception as exc:
                self.get_logger().error(f"stand-in camera failed: {one_line(exc)}", throttle_duration_sec=5.0)
            self._stop.wait(max(due - time.monotonic(), 0.0))
            due = max(due, time.monotonic() - period)

    def _cycle(self, start, due, periods, reflexes) -> int:
        now = time.monotonic()
        self.hw.advance_to(now, start)
        if self.hw.status.reflexes != reflexes:
            reflexes = self.hw.status.reflexes
            self.get_logger().error(f"REFLEX: {self.hw.status.last_reflex}; the hardware is inactive until "
                                    "/indgen/sim/stand_in/recover (franka: error recovery)")
            self._publish_status()
        stamp = self.get_clock().now().to_msg()
        if now >= due["joints"] and self.hw.status.active:  # an inactive hardware publishes nothing
            q, dq, knuckle = self.hw.joint_state()
            self.joint_pub.publish(fr3.joint_state(q, dq, knuckle / fr3.GRIPPER_CLOSED_RAD, stamp))
        if now >= due["poses"] and self.p["privileged"]:
            self.pose_pub.publish(fr3.object_poses(self.hw.object_poses(), stamp))
        if now >= due["status"]:
            self._publish_status()
        for key, period in periods.items():
            if now >= due[key]:
                due[key] = max(due[key] + period, now)
        time.sleep(max(min(min(due.values()) - time.monotonic(), 0.004), 0.0005))
        return reflexes

    def _publish_status(self) -> None:
        s = self.hw.status
        holds = [t for t, rest in s.segments if rest]
        check = self.hw.check()
        self.status_pub.publish(String(data=json.dumps({
            "trial_id": self.setup.trial_id if self.setup else "", "scene": self.hw.scenes,
            "placed": bool(check.placed), "check": check.detail,
            "reflexes": s.reflexes, "last_reflex": s.last_reflex, "active": s.active, "trajectories": s.trajectories,
            "refused_trajectories": s.refused_trajectories, "holds": len(holds), "hold_times": holds[-20:],
            "last_hold_wall": holds[-1] if holds else None, "sim_steps": self.hw.sim_steps})))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._cameras.join(timeout=2.0)
        self._publish_status()
        self.hw.close()


def main() -> int:
    return run_node(Fr3StandIn)


if __name__ == "__main__":
    raise SystemExit(main())
