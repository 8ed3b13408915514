"""The parameters and endpoints of the real robot's nodes (policy_node, fr3_runner, camera_node), declared once.

Plain code on purpose: the nodes (under ros/) read their parameters from these dataclasses and
hold what they create to these endpoints (indgen_core.ros.base), and the reference page
(docs/reference/nodes.md) is generated from the same declarations without importing ROS.
"""

from __future__ import annotations

from dataclasses import dataclass

from indgen_core import topics
from indgen_core.nodes.declarations import calls, calls_action, param, publishes, serves, subscribes
from indgen_core.nodes.interfaces import world_node_endpoints

# -- policy_node -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyNodeParameters:
    spec: str = param("blockenv", "observation/action spec: blockenv, droid, libero, robocasa")
    server_uri: str = param(
        "ws://127.0.0.1:8000",
        "ws://host:port of the policy server (of every policy the campaign's `endpoints` do not route elsewhere: "
        "the progression manager answers the routes on /indgen/get_policy_routes, and the node switches server when "
        "a trial's policy is served by another, before that trial's first tick)",
    )
    api_key_file: str = param(
        "",
        'file whose first line is sent as "Authorization: Api-Key <key>" (default: $INDGEN_POLICY_API_KEY; never '
        "a parameter value, which any node on the domain can read through the parameter services)",
    )
    action_horizon: int = param(0, "actions of a chunk executed open-loop (0: the spec's default)")
    connect_timeout_s: float = param(2.0, "how long one connection attempt may take")
    reconnect_max_s: float = param(5.0, "longest wait between reconnection attempts (the backoff doubles up to it)")
    request_timeout_s: float = param(
        30.0,
        "deadline of one reply: a server that does not answer in time counts as lost (the trial is aborted, the "
        "node reconnects)",
    )
    cameras: str = param("", "droid: comma-separated cameras a request needs (exterior_1, wrist; empty: none)")
    privileged: bool = param(True, "droid: wait for the simulator's object poses (sim-only state policies)")
    robot: str = param(
        "",
        "robot configuration (config/robots/; empty: the twin): the camera topics and QoS, the arm's and the "
        "gripper's own joint state topics, the ages",
    )
    max_image_age_s: float = param(
        0.0,
        "on the real robot's wall clock, how old (by its header stamp) the latest frame may be for a tick (older: "
        "no command, the runner holds); 0: the robot configuration's",
    )
    max_state_age_s: float = param(0.0, "the same for the latest joint state; 0: the robot configuration's")
    image_timeout_s: float = param(
        5.0,
        "lock-step sim with images on request: how long a request waits for the tick's frames (none: no command, "
        "the world times the tick out)",
    )
    image_size: int = param(
        0, "lock-step sim with images on request: the size asked for (0: the world's configured size)"
    )
    publish_exchanges: bool = param(
        True,
        "publish every request and reply, as the bytes that crossed the wire, with their timing on "
        "/indgen/policy/exchange (recorded in the bag: `indgen bag replay` and `indgen bag latency` read them)",
    )
    warmup_timeout_s: float = param(
        300.0,
        "how long the warm-up request may take (openpi's server compiles its model on the first request; the node "
        "reports itself connected only after it)",
    )


POLICY_NODE_ENDPOINTS = (
    subscribes(topics.TASK_SETUP, "indgen_msgs/msg/TaskSetup", "the trial: its policy, instruction and stamp"),
    subscribes(topics.POLICY_ROUTES, "std_msgs/msg/String", "that routes are there to fetch, and blind or not"),
    calls(topics.GET_POLICY_ROUTES, "std_srvs/srv/Trigger", "which policy server serves which policy"),
    publishes(topics.POLICY_STATUS, "indgen_msgs/msg/PolicyStatus", "connected or lost, and a heartbeat (latched)"),
    publishes(
        topics.POLICY_EXCHANGE,
        "indgen_msgs/msg/PolicyExchange",
        "each request and reply as it crossed the wire (publish_exchanges)",
    ),
    subscribes(topics.BLOCKENV_OBSERVATION, "indgen_msgs/msg/GridObservation", "spec blockenv: the grid"),
    publishes(topics.BLOCKENV_ACTION, "indgen_msgs/msg/GridAction", "spec blockenv: the move"),
    subscribes(topics.CONTROL_TICK, "indgen_msgs/msg/ControlTick", "spec droid: the tick to answer"),
    subscribes(
        "<robot camera topics>",
        "sensor_msgs/msg/Image",
        "spec droid: the cameras a request needs (robot configuration, else /cameras/NAME/image_raw)",
    ),
    subscribes(
        "<robot.arm.state_topic>",
        "sensor_msgs/msg/JointState",
        "spec droid: the arm's joint states (/joint_states in the twin)",
    ),
    subscribes("<robot.gripper.state_topic>", "sensor_msgs/msg/JointState", "spec droid: the gripper's joint states"),
    subscribes(
        topics.OBJECT_POSES, "indgen_msgs/msg/ObjectPoses", "spec droid, privileged: the simulator's object poses"
    ),
    publishes(
        topics.IMAGE_REQUEST, "indgen_msgs/msg/ImageRequest", "lock-step sim: the cameras this tick's request needs"
    ),
    publishes(topics.ARM_VELOCITY_COMMAND, "std_msgs/msg/Float64MultiArray", "spec droid: joint velocities"),
    publishes(topics.GRIPPER_COMMAND, "std_msgs/msg/Float64MultiArray", "spec droid: gripper position"),
    subscribes(topics.LIBERO_EEF_POSE, "geometry_msgs/msg/PoseStamped", "spec libero: the end effector's pose"),
    publishes(topics.LIBERO_OSC_COMMAND, "std_msgs/msg/Float64MultiArray", "spec libero: the OSC command"),
    subscribes(
        topics.ROBOCASA_EEF_POSE, "geometry_msgs/msg/PoseStamped", "spec robocasa: the end effector, base frame"
    ),
    subscribes(topics.ROBOCASA_BASE_POSE, "geometry_msgs/msg/PoseStamped", "spec robocasa: the mobile base's pose"),
    publishes(topics.ROBOCASA_COMMAND, "std_msgs/msg/Float64MultiArray", "spec robocasa: the 12-value command"),
)


# -- fr3_runner --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fr3RunnerParameters:
    robot: str = param("fr3_robotiq_zed", "robot configuration (config/robots/NAME.yaml)")
    recovery: str = param(
        "",
        "how to recover after a reflex or fault: franka, stand_in or manual "
        "(empty: the robot configuration's recovery.method)",
    )
    feedback_period_s: float = param(0.5, "wall time between RunEpisode feedback messages")


FR3_RUNNER_ENDPOINTS = (
    *world_node_endpoints(
        "one episode on the real robot, on the wall clock",
        "recover a fault, open the gripper, move to the reset pose",
        "hold at once, abort the trial, refuse new ones until released",
    ),
    serves(
        topics.ACKNOWLEDGE_STOP,
        "std_srvs/srv/Trigger",
        "the operator says the arm is clear after a stop: torque control is re-enabled before the next reset",
    ),
    subscribes(topics.TASK_SETUP, "indgen_msgs/msg/TaskSetup", "the trial the progression manager runs"),
    subscribes(
        topics.POLICY_STATUS, "indgen_msgs/msg/PolicyStatus", "a lost policy node or server: hold, abort the trial"
    ),
    subscribes(
        topics.ARM_VELOCITY_COMMAND, "std_msgs/msg/Float64MultiArray", "the policy's joint velocities for a tick"
    ),
    subscribes(topics.GRIPPER_COMMAND, "std_msgs/msg/Float64MultiArray", "the policy's gripper position for a tick"),
    subscribes(
        "<robot.arm.state_topic>",
        "sensor_msgs/msg/JointState",
        "the arm's own joint_state_broadcaster (silent on a fault): its newest sample, taken at 100 Hz",
    ),
    subscribes(
        "<robot.gripper.state_topic>",
        "sensor_msgs/msg/JointState",
        "the gripper's own joint states: the newest, taken at 100 Hz",
    ),
    subscribes(
        "<robot.arm.robot_state_topic>",
        "franka_msgs/msg/FrankaRobotState",
        "the robot's mode and errors (franka_msgs where installed, else indgen_msgs' copy of its layout, which only "
        "the stand-in publishes): the newest sample, taken at each tick and after a recovery",
    ),
    publishes(
        "<robot.arm.trajectory_topic>",
        "trajectory_msgs/msg/JointTrajectory",
        "segments for the arm's JointTrajectoryController (the only writer)",
    ),
    publishes("<robot.gripper.command_topic>", "std_msgs/msg/Float64MultiArray", "the gripper's position command"),
    publishes(topics.CONTROL_TICK, "indgen_msgs/msg/ControlTick", "each control tick: the policy node answers it"),
    publishes(topics.ROBOT_STATUS, "indgen_msgs/msg/RobotStatus", "the robot's state for the console (latched)"),
    calls_action(
        "<recovery.error_recovery_action>",
        "franka_msgs/action/ErrorRecovery",
        "recovery: franka's error recovery (recovery=franka)",
    ),
    calls(
        "<recovery.controller_manager>/set_hardware_component_state",
        "controller_manager_msgs/srv/SetHardwareComponentState",
        "recovery: the hardware component active again (recovery=franka)",
    ),
    calls(
        "<recovery.controller_manager>/switch_controller",
        "controller_manager_msgs/srv/SwitchController",
        "recovery: the controllers the fault stopped (recovery=franka)",
    ),
    calls(
        "/indgen/sim/stand_in/<step>",
        "std_srvs/srv/Trigger",
        "recovery against the stand-in: error_recovery, activate_hardware, activate_controllers",
    ),
)


# -- camera_node -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CameraNodeParameters:
    sources: str = param(
        "",
        'name=source pairs, comma-separated: "exterior_1=0,wrist=/dev/video2", "exterior_1=rtsp://10.0.0.5/stream" '
        'or a file "wrist=/data/wrist.mp4"',
    )
    robot: str = param("", "robot configuration whose camera topics to publish on (empty: /cameras/<name>/image_raw)")
    rate_hz: float = param(15.0, "frames published per second and camera (the latest frame each time)")
    width: int = param(0, "resize to this width (0: as the camera delivers)")
    height: int = param(0, "resize to this height (0: as the camera delivers)")
    loop: bool = param(False, "start a video file again at its end (tests, demos)")
    stereo: str = param(
        "auto",
        "auto: a side-by-side stereo frame (a ZED over UVC gives both eyes in one frame, 2560 x 720 at HD720; "
        "zed-open-capture videocapture.cpp) is cropped to its left half, as the ZED wrapper's rgb image is the left "
        "eye; left: always crop; none: never",
    )


CAMERA_NODE_ENDPOINTS = (
    publishes(
        "<robot.cameras.NAME>",
        "sensor_msgs/msg/Image",
        "each camera's frames on the robot configuration's topic, else /cameras/NAME/image_raw",
    ),
)
