"""A robot configuration (config/robots/<name>.yaml): every name, topic, limit and timing the
FR3 runner, the hardware stand-in, the policy node and the recorder need, in one file a user
edits for their cell. The runner (indgen_robot) and the stand-in (indgen_sim) read the same
file, so the stand-in offers exactly the interface the real bring-up must provide; it lives in
the core because both sides read it and neither may import the other.

The arm controller's gains and tolerances are not repeated here: they are read from the
ros2_control YAML the spawner loads (`bringup.arm_controllers`), so the bound the runner
promises (the reference never leads the measured arm by more than `arm.max_lead`, which with
the controller's p gains is at most `arm.lead_torque_fraction` of each joint's torque limit)
is checked against the gains the controller really runs with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from indgen_core import paths
from indgen_core.configfile import ConfigError, load_model

DOF = 7


def _seven(v: list[float]) -> list[float]:
    if len(v) != DOF:
        raise ValueError(f"needs {DOF} values (one per arm joint), got {len(v)}")
    return v


#: the joint names franka_ros2 and the Robotiq driver publish (the defaults of a robot file)
FR3_ARM_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))
ROBOTIQ_JOINT = "robotiq_85_left_knuckle_joint"


class ArmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    joints: list[str] = Field(default_factory=lambda: list(FR3_ARM_JOINTS))
    #: the JointTrajectoryController's name in franka's controller manager (its gains and
    #: tolerances are read from bringup.arm_controllers)
    controller: str = "fr3_arm_controller"
    #: its topic (ros2_controllers: <controller>/joint_trajectory)
    trajectory_topic: str = "/fr3_arm_controller/joint_trajectory"
    #: the joint_state_broadcaster's own topic: it stops when the hardware faults (franka.launch.py
    #: remaps it to franka/joint_states); never the merged /joint_states
    state_topic: str = "/franka/joint_states"
    #: franka_robot_state_broadcaster's full state (franka_msgs/FrankaRobotState: robot_mode, errors),
    #: read only where franka_msgs can be imported (a ROS install)
    robot_state_topic: str = "/franka_robot_state_broadcaster/robot_state"
    lower: list[float]
    upper: list[float]
    #: rad/s, rad/s^2 and Nm: the robot's own limits
    velocity_limits: list[float]
    acceleration_limits: list[float]
    torque_limits: list[float] = Field(default_factory=lambda: [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])
    #: the runner commands at most these fractions of them
    velocity_fraction: float = Field(default=0.5, gt=0, le=1)
    acceleration_fraction: float = Field(default=0.3, gt=0, le=1)
    #: rad kept clear of every position limit
    position_margin: float = Field(default=0.05, ge=0)
    #: rad: the most the commanded reference may lead the measured arm, per joint (a blocked arm
    #: is pushed with at most p x max_lead). The runner's speed is capped so that one tick of
    #: motion (times lead_ticks) stays within it, and the controller's path tolerance holds the
    #: arm beyond it.
    max_lead: list[float] = Field(default_factory=lambda: [0.1, 0.1, 0.1, 0.1, 0.15, 0.15, 0.15])
    #: p_i x max_lead_i must stay within this fraction of torque_limits_i
    lead_torque_fraction: float = Field(default=0.4, gt=0, le=1)
    #: ticks of motion a blocked arm can fall behind before the next segment re-bases the
    #: reference on it (1.5: a segment may come half a tick late and the bound still holds)
    lead_ticks: float = Field(default=1.5, ge=1.0)

    @field_validator("joints", "lower", "upper", "velocity_limits", "acceleration_limits", "torque_limits", "max_lead")
    @classmethod
    def _per_joint(cls, v):
        return _seven(v)

    @model_validator(mode="after")
    def _ordered(self):
        for i, (lo, hi) in enumerate(zip(self.lower, self.upper, strict=True)):
            if not lo + 2 * self.position_margin < hi:
                raise ValueError(f"joint {self.joints[i]}: lower {lo} must be below upper {hi} (with the margin)")
        if any(v <= 0 for v in self.velocity_limits + self.acceleration_limits + self.torque_limits + self.max_lead):
            raise ValueError("velocity, acceleration and torque limits and max_lead must be positive")
        if not self.trajectory_topic.rstrip("/").endswith(f"{self.controller}/joint_trajectory"):
            raise ValueError(
                f"trajectory_topic {self.trajectory_topic} is not {self.controller}'s (<controller>/joint_trajectory)"
            )
        return self


class GripperConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    joint: str = ROBOTIQ_JOINT
    #: the gripper's own joint state broadcaster (its controller manager, namespaced /robotiq)
    state_topic: str = "/robotiq/joint_states"
    #: a forward position controller on the knuckle joint (std_msgs/Float64MultiArray, rad)
    command_topic: str = "/robotiq/robotiq_position_controller/commands"
    #: the knuckle's closed position (robotiq_description's gripper_closed_position default)
    closed: float = Field(default=0.7929, gt=0)


class ControlConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rate_hz: float = Field(default=15.0, gt=0, le=100)
    #: how long a tick waits for the command that answers it; the robot finishes its previous
    #: segment meanwhile (which ends at rest), then holds
    command_timeout_s: float = Field(default=0.3, gt=0)
    #: consecutive ticks without a usable command before the trial is aborted
    max_missed_ticks: int = Field(default=8, ge=1)
    #: the arm's broadcaster sample older than this (by its header stamp) is a fault: the
    #: hardware stopped or the driver is down (detected within 3 ticks at 15 Hz)
    arm_state_max_age_s: float = Field(default=0.15, gt=0)
    #: the gripper's joint state older than this (header stamp) is a fault
    gripper_state_max_age_s: float = Field(default=0.5, gt=0)
    #: a camera frame older than this (header stamp) is not used: no command from it
    image_max_age_s: float = Field(default=0.25, gt=0)
    #: ticks ahead each streamed segment's first point lies (indgen_robot/control.py)
    lookahead_ticks: float = Field(default=3.0, ge=1.0, le=10.0)
    #: |offset| between the robot's stamps and this computer's clock tolerated at start-up
    clock_tolerance_s: float = Field(default=0.05, gt=0)
    #: how long an episode waits (holding) for the policy to be connected and warmed up
    policy_ready_timeout_s: float = Field(default=120.0, gt=0)


class ResetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pose: list[float] = Field(default_factory=lambda: [0.0, -0.6283185, 0.0, -2.5132741, 0.0, 1.8849556, 0.0])
    #: "direct": one smooth segment through the trajectory controller, from the measured arm
    method: Literal["direct"] = "direct"
    max_speed: float = Field(default=0.5, gt=0)
    tolerance: float = Field(default=0.03, gt=0)
    timeout_s: float = Field(default=20.0, gt=0)
    #: joint speeds (rad/s) under which the arm counts as at rest
    at_rest_speed: float = Field(default=0.05, gt=0)
    #: how long (s) the arm must stay at the pose and at rest, without a break, to count as reset
    settle_s: float = Field(default=0.3, ge=0, le=2.0)

    @field_validator("method", mode="before")
    @classmethod
    def _no_moveit(cls, v):
        if v == "moveit":
            raise ValueError(
                "'moveit' was removed (it never ran: moveit_py needs the robot's MoveIt configuration, "
                "which IndGen cannot check without hardware); use 'direct'"
            )
        return v

    @field_validator("pose")
    @classmethod
    def _per_joint(cls, v):
        return _seven(v)


class RecoveryConfig(BaseModel):
    """How the runner brings the robot back after a reflex or fault (franka_hardware's
    documented procedure: error recovery, the hardware component active again, its
    controllers activated)."""

    model_config = ConfigDict(extra="forbid")
    #: franka: /action_server/error_recovery and controller_manager's services (franka_msgs and
    #: controller_manager_msgs, a ROS install); stand_in: the stand-in's Trigger services;
    #: manual: a person does it (the runner waits for the arm's state to come back)
    method: Literal["franka", "stand_in", "manual"] = "franka"
    error_recovery_action: str = "/action_server/error_recovery"
    controller_manager: str = "/controller_manager"
    hardware_component: str = "FrankaHardwareInterface"
    #: controllers the fault deactivated that the runner activates again
    controllers: list[str] = Field(
        default_factory=lambda: ["joint_state_broadcaster", "franka_robot_state_broadcaster", "fr3_arm_controller"]
    )
    timeout_s: float = Field(default=30.0, gt=0)


class RecorderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: topic prefixes the recorder never subscribes to: high-rate streams (franka's 1 kHz
    #: broadcasters) and the cameras' other streams (the ZED wrapper computes depth, point
    #: clouds and raw images only while someone subscribes). The camera topics above are kept.
    exclude: list[str] = Field(
        default_factory=lambda: [
            "/franka/",
            "/franka_robot_state_broadcaster/",
            "/dynamic_joint_states",
            "/robotiq/dynamic_joint_states",
            "/zed",
        ]
    )


class BringupConfig(BaseModel):
    """What `indgen bringup` and launch/fr3_cell.launch.py start (indgen_robot/bringup.py)."""

    model_config = ConfigDict(extra="forbid")
    #: files relative to config/robots/
    arm_controllers: str = ""
    gripper_controllers: str = ""
    camera_overrides: str = ""
    #: camera name -> the ZED wrapper's camera_model (zed2, zed2i, zedm, zedx...)
    camera_models: dict[str, str] = Field(
        default_factory=lambda: {"exterior_1": "zed2", "exterior_2": "zed2", "wrist": "zedm"}
    )


class ArmController(BaseModel):
    """The arm controller's settings that the runner's promises depend on, as loaded from
    bringup.arm_controllers (ros2_controllers' joint_trajectory_controller parameters)."""

    p: list[float]
    d: list[float]
    path_tolerance: list[float]
    goal_tolerance: list[float]
    goal_time: float
    interpolate_from_desired_state: bool


class RobotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    arm: ArmConfig
    gripper: GripperConfig = GripperConfig()
    #: joint_state_publisher's merged topic (robot_state_publisher reads it): never a safety source
    merged_joint_states: str = "/joint_states"
    control: ControlConfig = ControlConfig()
    reset: ResetConfig = ResetConfig()
    recovery: RecoveryConfig = RecoveryConfig()
    recorder: RecorderConfig = RecorderConfig()
    #: camera name (as the DROID spec calls them: exterior_1, wrist) -> sensor_msgs/Image topic
    cameras: dict[str, str] = {}
    #: how the policy node subscribes the cameras: reliable (the ZED wrapper publishes reliable,
    #: zed_camera_component: QOS_QUEUE_SIZE 10) or best_effort (matches any publisher; a lost
    #: fragment drops a frame)
    cameras_qos: Literal["reliable", "best_effort"] = "reliable"
    bringup: BringupConfig = BringupConfig()
    _controller: ArmController | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _layout(self):
        for i, q in enumerate(self.reset.pose):
            if not self.arm.lower[i] + self.arm.position_margin <= q <= self.arm.upper[i] - self.arm.position_margin:
                raise ValueError(f"reset pose of {self.arm.joints[i]} ({q}) is outside its limits")
        merged = self.merged_joint_states
        if merged and merged in (self.arm.state_topic, self.gripper.state_topic):
            raise ValueError(
                f"{merged} is joint_state_publisher's merged topic, which keeps republishing the last "
                "values with fresh stamps after a fault: name each driver's own joint state topic "
                "(arm.state_topic, gripper.state_topic)"
            )
        if len(set(self.arm.joints)) != DOF or self.gripper.joint in self.arm.joints:
            raise ValueError("arm.joints must be 7 distinct names and gripper.joint none of them")
        return self

    @property
    def controller(self) -> ArmController:
        if self._controller is None:
            raise ConfigError(self.name, "has no arm controller settings (bringup.arm_controllers)")
        return self._controller

    def lead_torques(self) -> np.ndarray:
        """Nm: the most the arm controller pushes a blocked joint with (p x max_lead)."""
        return np.asarray(self.controller.p) * np.asarray(self.arm.max_lead)


def robot_config_path(name: str) -> Path:
    return paths.named_config("robots", name, "robot configuration")


def load_robot_config(name: str) -> RobotConfig:
    path = robot_config_path(name)
    config = load_model(path, RobotConfig)
    if config.bringup.arm_controllers:
        config._controller = _arm_controller(path.parent / config.bringup.arm_controllers, config)
        _check_lead(path, config)
    return config


def _params_of(data: dict, name: str) -> dict | None:
    """A node's ros__parameters in a ROS 2 parameter file, under the keys the spawner accepts
    (controller_manager/spawner: name, /name, /**/name)."""
    for key in (name, f"/{name}", f"/**/{name}"):
        if isinstance(data.get(key), dict) and isinstance(data[key].get("ros__parameters"), dict):
            return data[key]["ros__parameters"]
    return None


def _arm_controller(path: Path, config: RobotConfig) -> ArmController:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(path, f"cannot be read as YAML ({exc.__class__.__name__})") from None
    name = config.arm.controller
    params = _params_of(data, name)
    if params is None:
        raise ConfigError(
            path,
            f"has no '{name}: ros__parameters:' section (the spawner reads the controller's "
            "type and parameters from it)",
        )
    if params.get("type") != "joint_trajectory_controller/JointTrajectoryController":
        raise ConfigError(
            path,
            f"{name}'s type must be joint_trajectory_controller/JointTrajectoryController in its "
            f"own ros__parameters (Jazzy's spawner reads it there), got {params.get('type')!r}",
        )
    if list(params.get("joints") or []) != list(config.arm.joints):
        raise ConfigError(path, f"{name}'s joints {params.get('joints')} are not the robot's {config.arm.joints}")
    gains, constraints = params.get("gains") or {}, params.get("constraints") or {}
    try:
        p = [float(gains[j]["p"]) for j in config.arm.joints]
        d = [float(gains[j].get("d", 0.0)) for j in config.arm.joints]
        path_tol = [float(constraints[j]["trajectory"]) for j in config.arm.joints]
        goal_tol = [float(constraints[j].get("goal", 0.0)) for j in config.arm.joints]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            path,
            f"{name} needs gains.<joint>.p and constraints.<joint>.trajectory for every arm joint "
            f"(missing or not a number: {exc})",
        ) from None
    return ArmController(
        p=p,
        d=d,
        path_tolerance=path_tol,
        goal_tolerance=goal_tol,
        goal_time=float(constraints.get("goal_time", 0.0)),
        interpolate_from_desired_state=bool(params.get("interpolate_from_desired_state", False)),
    )


def _check_lead(path: Path, config: RobotConfig) -> None:
    arm, ctl = config.arm, config.controller
    torques = config.lead_torques()
    budget = arm.lead_torque_fraction * np.asarray(arm.torque_limits)
    worst = int(np.argmax(torques / budget))
    if torques[worst] > budget[worst] + 1e-9:
        raise ConfigError(
            path,
            f"{arm.joints[worst]}: p {ctl.p[worst]:g} x max_lead {arm.max_lead[worst]:g} rad = "
            f"{torques[worst]:.1f} Nm exceeds {arm.lead_torque_fraction:g} of its torque limit "
            f"({budget[worst]:.1f} Nm); lower the gain or max_lead",
        )
    for i, joint in enumerate(arm.joints):
        if not 0 < ctl.path_tolerance[i] <= arm.max_lead[i] + 1e-9:
            raise ConfigError(
                path,
                f"{arm.controller}'s path tolerance for {joint} ({ctl.path_tolerance[i]:g}) must "
                f"be positive and at most max_lead ({arm.max_lead[i]:g}): the controller itself holds "
                "the arm on a violation",
            )
