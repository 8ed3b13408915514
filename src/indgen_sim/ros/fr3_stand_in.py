"""fr3_stand_in: the FR3 cell (franka_ros2, ros2_control, the Robotiq driver, the ZED wrapper)
as the real stack behaves, on the real topic names, around the MuJoCo twin on the wall clock,
so that the real-robot graph (`indgen launch stack_axis sim:=false robot:=mock`) runs
unchanged against it. The behaviours and their sources are in standin/cell.py (franka,
controller manager, Robotiq), standin/jtc.py (the trajectory controller) and below:

- the arm's joint_state_broadcaster on robot.arm.state_topic (franka.launch.py remaps it to
  franka/joint_states; reliable, SystemDefaultsQoS), at `broadcaster_hz` (the real one runs at
  the controller manager's 1 kHz), silent while the fault has it deactivated;
- franka_robot_state_broadcaster's measured_joint_states, best effort (its convenience
  topics use rclcpp::QoS(1).best_effort()), silent on a fault too, and its full robot state
  (robot_state_hz, 1 kHz as franka's; ros/franka_robot_state.py) on robot.arm.robot_state_topic,
  reliable (SystemDefaultsQoS), in franka_msgs' layout: robot mode, current and last motion
  errors (the last motion's errors stay until the next motion, as libfranka reports them);
- the arm controller's controller_state at controller_state_hz (the JTC publishes it on every
  update: 1 kHz), for the recorder's exclusion list;
- joint_state_publisher merging only franka's own source into robot.merged_joint_states: the
  URDF's joints only (no Robotiq joint), the last received positions, velocities and efforts
  republished with a fresh stamp at `joint_state_rate` whether or not the source still talks
  (joint_state_publisher `ros2`, joint_state_publisher.py source_cb, timer_callback);
- the Robotiq's own joint_state_broadcaster on robot.gripper.state_topic and its position
  controller on robot.gripper.command_topic: a franka fault does not touch them;
- for the cameras, which run in their own process (ros/fr3_cameras.py, as the ZED wrapper
  does on the real cell), the scene's state (sim only, /indgen/sim/stand_in/scene_state) at
  `camera_hz`.

Services (std_srvs/Trigger; franka_msgs and controller_manager_msgs are not on PyPI):
/indgen/sim/stand_in/build_scene (the person builds the latest task setup's scene),
error_recovery (franka's /action_server/error_recovery; it answers topics.STAND_IN_NO_FAULT
when the robot was in no fault), activate_hardware (controller_manager
set_hardware_component_state active), activate_broadcasters and activate_arm_controller
(switch_controller: the broadcasters, then the arm controller, which the runner activates only
once the operator has acknowledged the stop). Test controls on /indgen/sim/stand_in/inject
(std_msgs/String, JSON): {"fault": "communication_constraints_violation"},
{"driver": "crash" | "restart"}, {"contact_thresholds": [7 Nm]},
{"reset_peaks": true}, {"delay_arm_state_s": 0.5} (the arm broadcaster's samples are lost
on the way that long, as when Fast DDS held the stand-in's publish: docs/real-robot.md).
Status (JSON, latched) on /indgen/sim/stand_in/status.

Parameters and endpoints: indgen_sim/node_interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import json
import struct
import threading
import time

import numpy as np
from rclpy import logging as rclpy_logging
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from indgen_core import records, topics
from indgen_core.cell.robot_config import load_robot_config
from indgen_core.cell.trajectory import Point
from indgen_core.errors import IndGenError, first_line
from indgen_core.nodes import messages
from indgen_core.nodes.repeated import RepeatedWarning
from indgen_core.ros import fr3
from indgen_core.ros.base import LATCHED, read_parameters, run_node, serve, subscribe
from indgen_msgs.msg import FrankaRobotState, ObjectPoses, TaskSetup
from indgen_sim.node_interfaces import FR3_STAND_IN_ENDPOINTS, INJECT_TOPIC, SCENE_STATE, STAND_IN, STATUS_TOPIC
from indgen_sim.node_interfaces import Fr3StandInParameters as Parameters
from indgen_sim.ros.fr3_cameras import scene_state
from indgen_sim.ros.franka_robot_state import MODE_IDLE, MODE_MOVE, RobotStateBytes
from indgen_sim.standin.cell import ERRORS, StandInCell

FRANKA_LOG = rclpy_logging.get_logger("FrankaHardwareInterface")
#: rclcpp::SystemDefaultsQoS: reliable, volatile, keep last 10 (the broadcasters, the JTC's topic)
SYSTEM_DEFAULT = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
#: franka_robot_state_broadcaster's convenience topics: rclcpp::QoS(1).best_effort()
BEST_EFFORT = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


class JointStatePublisher:
    """joint_state_publisher's merge: the URDF's joints, the last value each source gave
    (per joint and field, the last message wins), republished with a fresh stamp."""

    def __init__(self, joints: list[str]):
        self.joints = list(joints)
        self.values: dict[str, tuple[float, float, float]] = {}

    def source(self, names, positions, velocities, efforts) -> None:
        for i, name in enumerate(names):
            if name in self.joints:  # source_cb: a joint not in the URDF is dropped
                self.values[name] = (positions[i], velocities[i], efforts[i])

    def message(self, stamp) -> JointState | None:
        if not self.values:
            return None
        msg = JointState(name=list(self.joints))
        msg.position = [self.values.get(j, (0.0, 0.0, 0.0))[0] for j in self.joints]
        msg.velocity = [self.values.get(j, (0.0, 0.0, 0.0))[1] for j in self.joints]
        msg.effort = [self.values.get(j, (0.0, 0.0, 0.0))[2] for j in self.joints]
        msg.header.stamp = stamp
        return msg


class Fr3StandIn(Node):
    ENDPOINTS = FR3_STAND_IN_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("fr3_stand_in")
        self.p = read_parameters(self, Parameters)
        for rate in (
            "broadcaster_hz",
            "measured_hz",
            "joint_state_rate",
            "gripper_hz",
            "camera_hz",
            "robot_state_hz",
            "controller_state_hz",
        ):
            if not getattr(self.p, rate) > 0:
                raise IndGenError(f"{rate} must be positive, got {getattr(self.p, rate)}")
        self.config = c = load_robot_config(self.p.robot)
        thresholds = (self.p.contact_threshold,) * 7 if self.p.contact_threshold > 0 else c.franka.collision_torque
        self.cell = StandInCell(c, builtin=self.p.builtin, contact_thresholds=tuple(thresholds))
        self.jsp = JointStatePublisher(c.arm.joints)
        self.arm_pub = self.create_publisher(JointState, c.arm.state_topic, SYSTEM_DEFAULT)
        measured = c.arm.robot_state_topic.rsplit("/", 1)[0] + "/measured_joint_states"
        self.measured_pub = self.create_publisher(JointState, measured, BEST_EFFORT)
        self.robot_state_pub = self.create_publisher(FrankaRobotState, c.arm.robot_state_topic, SYSTEM_DEFAULT)
        self.robot_state = RobotStateBytes()
        #: messages published per 1 kHz topic (the status reports them)
        self.published = {"robot_state": 0, "controller_state": 0}
        self.controller_state_pub = self.create_publisher(
            JointState, f"/{c.arm.controller}/controller_state", SYSTEM_DEFAULT
        )
        self._controller_state = bytearray(
            serialize_message(JointState(name=list(c.arm.joints), position=[0.0] * 7, velocity=[0.0] * 7))
        )
        self.merged_pub = (
            self.create_publisher(JointState, c.merged_joint_states, SYSTEM_DEFAULT) if c.merged_joint_states else None
        )
        self.gripper_pub = self.create_publisher(JointState, c.gripper.state_topic, SYSTEM_DEFAULT)
        self.scene_pub = self.create_publisher(String, SCENE_STATE, SYSTEM_DEFAULT)
        self.pose_pub = self.create_publisher(ObjectPoses, topics.OBJECT_POSES, SYSTEM_DEFAULT)
        self.status_pub = self.create_publisher(String, STATUS_TOPIC, LATCHED)
        self.trajectory_sub = subscribe(
            self, JointTrajectory, c.arm.trajectory_topic, self._on_trajectory, SYSTEM_DEFAULT
        )
        subscribe(self, Float64MultiArray, c.gripper.command_topic, self._on_gripper, SYSTEM_DEFAULT)
        subscribe(self, TaskSetup, topics.TASK_SETUP, self._on_setup, LATCHED)
        subscribe(self, String, INJECT_TOPIC, self._on_inject, SYSTEM_DEFAULT)
        serve(self, Trigger, f"{STAND_IN}/build_scene", self._build_scene)
        self.recovery_services: list = []
        self._serve_recovery()
        self.setup: records.TaskSetup | None = None
        self._errors_seen = 0
        self._behind = RepeatedWarning(self.get_logger().warning)
        self._arm_held_until = 0.0  # monotonic: a test's {"delay_arm_state_s"}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hardware", daemon=True)
        self._thread.start()
        self.get_logger().info(
            f"FR3 cell stand-in ({self.cell.physics.world.source.detail}) behind robot configuration '{c.name}'"
        )

    # -- the controllers' inputs -------------------------------------------------------------------
    def _on_trajectory(self, msg: JointTrajectory) -> None:
        points = []
        for p in msg.points:
            t = p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
            points.append(
                Point(t, np.array(p.positions, float), np.array(p.velocities, float) if len(p.velocities) else None)
            )
        start = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        refused = self.cell.receive_trajectory(
            list(msg.joint_names), points, start - time.time() + time.monotonic() if start else 0.0
        )
        if refused:
            self.get_logger().warning(f"fr3_arm_controller: {refused}", throttle_duration_sec=2.0)

    def _on_gripper(self, msg: Float64MultiArray) -> None:
        if len(msg.data) == 1:  # forward_command_controller: one value per joint, else ignored
            self.cell.command_gripper(float(msg.data[0]))

    def _on_setup(self, msg: TaskSetup) -> None:
        self.setup = messages.setup_from_msg(msg)

    def _on_inject(self, msg: String) -> None:
        order = json.loads(msg.data)
        if "fault" in order:
            if order["fault"] not in ERRORS:
                raise ValueError(f"unknown fault {order['fault']!r}; known: {', '.join(ERRORS)}")
            self.cell.inject(order["fault"])
        if order.get("driver") == "crash":  # franka's ros2_control_node dies: its interfaces go with it
            self.cell.crash_driver()
            if self.trajectory_sub is not None:
                self.destroy_subscription(self.trajectory_sub)
                self.trajectory_sub = None
            for service in self.recovery_services:
                self.destroy_service(service)
            self.recovery_services = []
        elif order.get("driver") == "restart":
            if self.trajectory_sub is None:
                self.trajectory_sub = subscribe(
                    self, JointTrajectory, self.config.arm.trajectory_topic, self._on_trajectory, SYSTEM_DEFAULT
                )
            if not self.recovery_services:
                self._serve_recovery()
            self.cell.restart_driver()
        if "contact_thresholds" in order:
            values = np.asarray(order["contact_thresholds"], float)
            if values.shape != (7,) or not np.all(values > 0):
                raise ValueError("contact_thresholds must be 7 positive values")
            self.cell.contact_thresholds = values
        if "delay_arm_state_s" in order:  # the broadcaster runs on; its samples are lost on the way
            self._arm_held_until = time.monotonic() + float(order["delay_arm_state_s"])
        if order.get("reset_peaks"):
            self.cell.reset_peaks()
        self._publish_status()

    def _build_scene(self, request, response):
        if self.setup is None:
            response.success, response.message = False, "no task setup received yet"
            return response
        self.cell.build_scene(self.setup)
        response.success, response.message = True, f"scene of {self.setup.trial_id} built"
        return response

    def _serve_recovery(self) -> None:
        """In place of franka's error recovery action and the controller manager's services:
        they live in franka's driver process, and go with it."""
        c, cell = self.config, self.cell
        broadcasters = [n for n in c.recovery.controllers if n != c.arm.controller]
        steps = {
            "error_recovery": cell.error_recovery,
            "activate_hardware": cell.activate_hardware,
            "activate_broadcasters": lambda: cell.activate_controllers(broadcasters),
            topics.STAND_IN_TORQUE_STEP: lambda: cell.activate_controllers([c.arm.controller]),
        }
        self.recovery_services = [
            serve(self, Trigger, f"{STAND_IN}/{step}", self._trigger(steps[step]))
            for step in (*topics.STAND_IN_STATE_STEPS, topics.STAND_IN_TORQUE_STEP)
        ]

    def _trigger(self, action):
        def call(request, response):
            response.success, response.message = action()
            self._publish_status()
            return response

        return call

    # -- the drivers' outputs ------------------------------------------------------------------------
    def _run(self) -> None:
        start = time.monotonic()
        rates = {
            "arm": self.p.broadcaster_hz,
            "measured": self.p.measured_hz,
            "merged": self.p.joint_state_rate,
            "robot_state": self.p.robot_state_hz,
            "controller_state": self.p.controller_state_hz,
            "gripper": self.p.gripper_hz,
            "poses": 15.0,
            "status": 2.0,
            "scene": self.p.camera_hz,
        }
        due = dict.fromkeys(rates, start)
        while not self._stop.is_set():
            try:
                self._cycle(due, rates)
            except Exception as exc:  # the hardware thread must outlive any one bad cycle
                self.get_logger().error(f"stand-in cycle failed: {first_line(exc)}", throttle_duration_sec=5.0)
                time.sleep(0.01)

    def _cycle(self, due: dict, rates: dict) -> None:
        now = time.monotonic()
        stall = self.cell.advance_to(now)
        if stall > 0.0:  # the graph's log says so: the stand-in's pause, not the robot's
            self._behind.warn(
                "the stand-in's hardware thread fell behind the wall clock (a busy host): the robot's time "
                "paused through it; a real FR3 runs on in real time",
                stall * 1000,
                "ms",
            )
        errors = self.cell.status.reflexes + self.cell.status.faults
        if errors != self._errors_seen:
            self._errors_seen = errors
            s = self.cell.status
            # as franka_hardware read() logs libfranka's ControlException (through a logger that
            # is not a node's: the line reaches the console, not /rosout), then the controller
            # manager's own line
            FRANKA_LOG.error(
                f'libfranka: Move command aborted: motion aborted by reflex! ["{s.last_error}"] ({s.last_error_detail})'
            )
            self.get_logger().error(
                "REFLEX or FAULT: Deactivating following hardware components as their read cycle "
                "resulted in an error: [ FrankaHardwareInterface ]"
            )
            self._publish_status()
        stamp = self.get_clock().now().to_msg()
        if now >= due["arm"]:
            state = self.cell.arm_state()
            if state is not None:  # an inactive broadcaster publishes nothing
                q, dq, effort = state
                msg = JointState(
                    name=list(self.config.arm.joints), position=q.tolist(), velocity=dq.tolist(), effort=effort.tolist()
                )
                msg.header.stamp = stamp
                if now >= self._arm_held_until:  # else the middleware holds it: lost on the way
                    self.arm_pub.publish(msg)
                self.jsp.source(msg.name, msg.position, msg.velocity, msg.effort)
        if now >= due["measured"] and self.cell.robot_state_active():
            q, dq = self.cell.physics.state()
            msg = JointState(name=list(self.config.arm.joints), position=q.tolist(), velocity=dq.tolist())
            msg.header.stamp = stamp
            self.measured_pub.publish(msg)
        # franka's 1 kHz topics: as many as are due (this loop comes round every 1-2 ms), so
        # that their subscribers get franka's message rate
        if now >= due["robot_state"] and self.cell.robot_state_active():
            data = self._robot_state(now, stamp)
            for _ in range(_due(now, due["robot_state"], rates["robot_state"])):
                self.robot_state_pub.publish(data)
                self.published["robot_state"] += 1
        if now >= due["controller_state"] and self.cell.jtc.active:
            struct.pack_into("<iI", self._controller_state, 4, stamp.sec, stamp.nanosec)
            for _ in range(_due(now, due["controller_state"], rates["controller_state"])):
                self.controller_state_pub.publish(bytes(self._controller_state))
                self.published["controller_state"] += 1
        if now >= due["merged"] and self.merged_pub is not None:
            merged = self.jsp.message(stamp)
            if merged is not None:
                self.merged_pub.publish(merged)
        if now >= due["gripper"]:
            msg = JointState(name=[self.config.gripper.joint], position=[self.cell.knuckle()], velocity=[0.0])
            msg.header.stamp = stamp
            self.gripper_pub.publish(msg)
        if now >= due["poses"] and self.p.privileged:
            with self.cell.lock:
                poses = self.cell.physics.object_poses()
            self.pose_pub.publish(fr3.object_poses(poses, stamp))
        if now >= due["scene"] and self.scene_pub.get_subscription_count() > 0:
            with self.cell.lock:
                self.scene_pub.publish(scene_state(self.cell.physics.world, stamp))
        if now >= due["status"]:
            self._publish_status()
        for key, rate in rates.items():
            if now >= due[key]:
                due[key] = max(due[key] + _due(now, due[key], rate) / rate, now - 1.0 / rate)
        time.sleep(max(min(min(due.values()) - time.monotonic(), 0.004), 0.0005))

    def _robot_state(self, now: float, stamp) -> bytes:
        cell = self.cell
        with cell.lock:
            state = cell.physics.state() + (cell._tau_sent.copy(),)
            moving = cell.jtc.active and not cell.jtc.holding
            last = list(cell.last_motion_errors)
        mode = MODE_MOVE if moving else MODE_IDLE
        return self.robot_state.message(now, stamp, self.config.arm.joints, state, mode, [], last)

    def _publish_status(self) -> None:
        with self.cell.lock:
            check = self.cell.physics.check()
        self.status_pub.publish(
            String(
                data=json.dumps(
                    {
                        **self.cell.summary(),
                        "trial_id": self.setup.trial_id if self.setup else "",
                        "placed": bool(check.placed),
                        "check": check.detail,
                        "contact_thresholds": self.cell.contact_thresholds.tolist(),
                        "published": dict(self.published),
                        "time": time.monotonic(),
                    }
                )
            )
        )

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._publish_status()
        self.cell.close()


def _due(now: float, due: float, rate: float) -> int:
    """How many messages of a `rate` stream are due at `now` (at most 5 at once)."""
    return max(1, min(int((now - due) * rate) + 1, 5))


def main() -> int:
    return run_node(Fr3StandIn)


if __name__ == "__main__":
    raise SystemExit(main())
