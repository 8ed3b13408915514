"""The parameters and endpoints of the simulation's nodes (sim_bridge, fr3_stand_in, fr3_cameras), declared once.

Plain code on purpose: the nodes (under ros/) read their parameters from these dataclasses and
hold what they create to these endpoints (indgen_core.ros.base), and the reference page
(docs/reference/nodes.md) is generated from the same declarations without importing ROS.
"""

from __future__ import annotations

from dataclasses import dataclass

from indgen_core import topics
from indgen_core.nodes.declarations import param, publishes, serves, subscribes
from indgen_core.nodes.interfaces import world_node_endpoints

#: the FR3 stand-in's own topics and services (simulation only)
STAND_IN = topics.STAND_IN
SCENE_STATE = f"{STAND_IN}/scene_state"  # the scene for the camera process
INJECT = f"{STAND_IN}/inject"  # test controls: faults, driver crashes, frozen cameras
STATUS = f"{STAND_IN}/cameras"  # the camera process's status
STATUS_TOPIC = f"{STAND_IN}/status"  # the stand-in's status
INJECT_TOPIC = INJECT


# -- sim_bridge --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SimBridgeParameters:
    world: str = param("blockenv", "registered world (blockenv, droid_twin, libero, ...)")
    world_options: str = param(
        "", 'keyword arguments of the world as a YAML mapping, e.g. "{cameras: [exterior_1], image_size: 224}"'
    )
    level_images: bool = param(
        False, "save the world's preview after the first reset of each level, as the report's per-level image"
    )
    render: str = param(
        "on_request",
        "camera images: on_request (only the ticks the policy node asks for, the start of each open-loop chunk; "
        "the same pixels as every tick) or every_tick (a frame per camera per tick, e.g. for full-rate videos)",
    )
    action_timeout_s: float = param(10.0, "how long one tick may wait for its command")
    policy_silence_s: float = param(5.0, "no /indgen/policy_status for this long: the policy node is gone")
    feedback_period_s: float = param(0.5, "wall time between feedback messages")


SIM_BRIDGE_ENDPOINTS = (
    *world_node_endpoints(
        "one episode in lock-step",
        "ready unless the soft e-stop is engaged (a simulated world resets itself)",
        "the episode stops, aborted",
    ),
    subscribes(topics.TASK_SETUP, "indgen_msgs/msg/TaskSetup", "a newer setup ends a running episode as aborted"),
    subscribes(topics.POLICY_STATUS, "indgen_msgs/msg/PolicyStatus", "a lost policy ends the episode as aborted"),
    subscribes(
        topics.EPISODE_RESULT,
        "indgen_msgs/msg/EpisodeResult",
        "a level's image rides on each attempt until a result the manager took carries it",
    ),
    publishes(topics.CLOCK, "rosgraph_msgs/msg/Clock", "simulated time, one step per tick"),
    publishes(
        topics.FINAL_STATE,
        "indgen_msgs/msg/WorldFinalState",
        "the world's state when an episode ends, before it is judged",
    ),
    publishes(topics.BLOCKENV_OBSERVATION, "indgen_msgs/msg/GridObservation", "world blockenv: the grid each tick"),
    subscribes(topics.BLOCKENV_ACTION, "indgen_msgs/msg/GridAction", "world blockenv: the move that answers it"),
    publishes(topics.CONTROL_TICK, "indgen_msgs/msg/ControlTick", "worlds droid_twin, libero, robocasa: each tick"),
    publishes(
        topics.JOINT_STATES, "sensor_msgs/msg/JointState", "world droid_twin: the arm's and gripper's joint states"
    ),
    publishes(
        "/cameras/<name>/image_raw",
        "sensor_msgs/msg/Image",
        "world droid_twin: each camera's frame (every tick or on request)",
    ),
    subscribes(
        topics.IMAGE_REQUEST, "indgen_msgs/msg/ImageRequest", "world droid_twin: the cameras to render this tick"
    ),
    publishes(
        topics.OBJECT_POSES,
        "indgen_msgs/msg/ObjectPoses",
        "worlds droid_twin, libero, robocasa: privileged object poses",
    ),
    subscribes(topics.ARM_VELOCITY_COMMAND, "std_msgs/msg/Float64MultiArray", "world droid_twin: joint velocities"),
    subscribes(topics.GRIPPER_COMMAND, "std_msgs/msg/Float64MultiArray", "world droid_twin: gripper position"),
    publishes(topics.LIBERO_EEF_POSE, "geometry_msgs/msg/PoseStamped", "world libero: the end effector's pose"),
    subscribes(topics.LIBERO_OSC_COMMAND, "std_msgs/msg/Float64MultiArray", "world libero: the OSC command"),
    publishes(
        topics.ROBOCASA_EEF_POSE, "geometry_msgs/msg/PoseStamped", "world robocasa: the end effector, base frame"
    ),
    publishes(topics.ROBOCASA_BASE_POSE, "geometry_msgs/msg/PoseStamped", "world robocasa: the mobile base's pose"),
    subscribes(topics.ROBOCASA_COMMAND, "std_msgs/msg/Float64MultiArray", "world robocasa: the 12-value command"),
)


# -- fr3_stand_in ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fr3StandInParameters:
    robot: str = param("fr3_robotiq_zed", "robot configuration (config/robots/NAME.yaml): topics, controllers, limits")
    builtin: bool = param(False, "the twin's built-in FR3 instead of mujoco_menagerie's")
    broadcaster_hz: float = param(
        100.0, "rate of the arm's joint_state_broadcaster (the real one runs at the controller manager's 1 kHz)"
    )
    measured_hz: float = param(50.0, "rate of franka_robot_state_broadcaster's measured_joint_states (best effort)")
    joint_state_rate: float = param(30.0, "rate of joint_state_publisher's merged joint states")
    gripper_hz: float = param(50.0, "rate of the Robotiq's joint_state_broadcaster")
    camera_hz: float = param(15.0, "rate of the scene state the camera process renders from")
    privileged: bool = param(True, "publish the object poses (sim only: the oracle and state policies need them)")
    contact_threshold: float = param(
        0.0,
        "contact reflex threshold in Nm, every joint (0: the robot configuration's franka.collision_torque, which "
        "the bring-up sets on a real FR3: DROID's 40 Nm)",
    )
    robot_state_hz: float = param(
        1000.0, "rate of franka_robot_state_broadcaster's full robot state (franka's: 1 kHz whatever its settings)"
    )
    controller_state_hz: float = param(
        1000.0, "rate of the arm controller's controller_state (ros2_controllers' JTC: every update, 1 kHz)"
    )


FR3_STAND_IN_ENDPOINTS = (
    publishes(
        "<robot.arm.state_topic>", "sensor_msgs/msg/JointState", "franka's joint_state_broadcaster (silent on a fault)"
    ),
    publishes(
        "/franka_robot_state_broadcaster/measured_joint_states",
        "sensor_msgs/msg/JointState",
        "franka_robot_state_broadcaster's measured joints (best effort)",
    ),
    publishes(
        "<robot.merged_joint_states>",
        "sensor_msgs/msg/JointState",
        "joint_state_publisher's merged states, republished whether or not the source talks",
    ),
    publishes("<robot.gripper.state_topic>", "sensor_msgs/msg/JointState", "the Robotiq's joint_state_broadcaster"),
    publishes(
        "<robot.arm.robot_state_topic>",
        "indgen_msgs/msg/FrankaRobotState",
        "franka_robot_state_broadcaster's full state (franka_msgs' layout; silent on a fault)",
    ),
    publishes(
        "/<robot.arm.controller>/controller_state",
        "sensor_msgs/msg/JointState",
        "the arm controller's state at its update rate (control_msgs/JointTrajectoryControllerState on a real "
        "stack: not on PyPI; the recorder leaves it out by name)",
    ),
    subscribes(
        "<robot.arm.trajectory_topic>", "trajectory_msgs/msg/JointTrajectory", "the arm's JointTrajectoryController"
    ),
    subscribes("<robot.gripper.command_topic>", "std_msgs/msg/Float64MultiArray", "the Robotiq's position controller"),
    publishes(SCENE_STATE, "std_msgs/msg/String", "sim only: the scene's state for the camera process"),
    publishes(topics.OBJECT_POSES, "indgen_msgs/msg/ObjectPoses", "sim only: object poses (privileged)"),
    publishes(STATUS_TOPIC, "std_msgs/msg/String", "JSON (latched): faults, peaks, what was injected"),
    subscribes(topics.TASK_SETUP, "indgen_msgs/msg/TaskSetup", "the scene the person builds next"),
    subscribes(
        INJECT_TOPIC, "std_msgs/msg/String", "test controls (JSON): a fault, a driver crash, contact thresholds"
    ),
    serves(f"{STAND_IN}/build_scene", "std_srvs/srv/Trigger", "the person builds the latest setup's scene"),
    serves(
        f"{STAND_IN}/<step>",
        "std_srvs/srv/Trigger",
        "error_recovery, activate_hardware, activate_broadcasters, activate_arm_controller: franka's recovery steps",
    ),
)


# -- fr3_cameras -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fr3CamerasParameters:
    robot: str = param("fr3_robotiq_zed", "robot configuration (config/robots/NAME.yaml): the camera topics")
    builtin: bool = param(False, "the twin's built-in FR3 (the stand-in's own setting)")
    image_width: int = param(1280, "width of the published frames (the ZED's HD720)")
    image_height: int = param(720, "height of the published frames")
    render_width: int = param(320, "width MuJoCo renders at (scaled up to image_width)")
    render_height: int = param(180, "height MuJoCo renders at")
    encoding: str = param("bgra8", "image encoding: bgra8 (the ZED wrapper's), bgr8 or rgb8")
    camera_hz: float = param(15.0, "at most this many frames per second and camera")


FR3_CAMERAS_ENDPOINTS = (
    publishes(
        "<robot.cameras.NAME>",
        "sensor_msgs/msg/Image",
        "the ZED wrapper's rgb/color/rect/image per camera, only while subscribed",
    ),
    publishes(
        "<robot.cameras.NAME depth>",
        "sensor_msgs/msg/Image",
        "depth/depth_registered (32FC1) per camera, only while subscribed",
    ),
    publishes(STATUS, "std_msgs/msg/String", "JSON (latched): frames sent, streams on, frozen cameras"),
    subscribes(SCENE_STATE, "std_msgs/msg/String", "the stand-in's scene to render"),
    subscribes(INJECT, "std_msgs/msg/String", "freeze a camera: stop, repeat or off"),
)
