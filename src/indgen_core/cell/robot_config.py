"""A robot configuration (config/robots/<name>.yaml): every name, topic, limit and timing the
FR3 runner, the hardware stand-in, the policy node and the recorder need, in one file a user
edits for their cell. The runner (indgen_robot) and the stand-in (indgen_sim) read the same
file, so the stand-in offers exactly the interface the real bring-up must provide; it lives in
the core because both sides read it and neither may import the other.

The arm controller's gains, clamps and tolerances are not repeated here: they are read from
the ros2_control YAML the spawner loads (`bringup.arm_controllers`), so the bounds the runner
promises (no segment carries the reference more than `arm.max_lead` ahead of the measured arm,
and the controller's worst-case torque against a blocked joint stays within
`arm.max_torque_fraction` of its limit: indgen_core/cell/arm_bounds.py) are checked against the
gains the controller really runs with.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from indgen_core import paths
from indgen_core.cell import arm_bounds
from indgen_core.cell.arm_controller import ArmController, read_arm_controller
from indgen_core.cell.cell_config import BringupConfig, FrankaConfig, RecorderConfig, UvcConfig
from indgen_core.configfile import ConfigError, load_model

DOF = 7
#: s: the shortest tail of a streamed segment (a slow segment still ends in a smooth stop)
MIN_STOP_S = 0.1


def _seven(v: list[float]) -> list[float]:
    if len(v) != DOF:
        raise ValueError(f"needs {DOF} values (one per arm joint), got {len(v)}")
    return v


#: the joint names franka_ros2 and the Robotiq driver publish (the defaults of a robot file)
FR3_ARM_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))
ROBOTIQ_JOINT = "robotiq_85_left_knuckle_joint"


class ArmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: the 7 arm joint names, in the order of every per-joint list here; joint states and commands are matched
    #: by them
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
    #: rad, per joint: the lower position limits; commands stay position_margin above them, and an arm
    #: measured below them ends the episode
    lower: list[float]
    #: rad, per joint: the upper position limits; commands stay position_margin below them, and an arm
    #: measured above them ends the episode
    upper: list[float]
    #: rad/s, rad/s^2 and Nm: the robot's own limits
    velocity_limits: list[float]
    #: rad/s^2, per joint: the robot's acceleration limits; the runner uses acceleration_fraction and
    #: stop_fraction of them
    acceleration_limits: list[float]
    #: Nm, per joint: the robot's torque limits; the arm controller's worst-case torque and output clamp are
    #: checked against max_torque_fraction of them
    torque_limits: list[float] = Field(default_factory=lambda: [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])
    #: the runner commands at most these fractions of them
    velocity_fraction: float = Field(default=0.5, gt=0, le=1)
    #: the fraction of acceleration_limits a streamed segment may accelerate at
    acceleration_fraction: float = Field(default=0.3, gt=0, le=1)
    #: each segment's tail decelerates the reference at this fraction of acceleration_limits
    stop_fraction: float = Field(default=0.5, gt=0, le=1)
    #: rad kept clear of every position limit
    position_margin: float = Field(default=0.05, ge=0)
    #: rad, per joint: the most any segment the runner sends can carry the controller's
    #: reference ahead of where the arm was measured (its reach: indgen_core/cell/arm_bounds.py). It
    #: bounds the lead over a blocked joint (which the controller pushes with at most
    #: p x max_lead) and how far the arm moves if no further command comes (a stalled or killed
    #: runner, a late policy); the runner caps each joint's speed to keep it.
    max_lead: list[float] = Field(default_factory=lambda: [0.1, 0.1, 0.1, 0.1, 0.15, 0.15, 0.15])
    #: the arm controller's worst-case torque against a blocked joint (P, D, feed-forward and
    #: integral terms: arm_bounds.worst_torques) and its output clamp must stay within this
    #: fraction of torque_limits
    max_torque_fraction: float = Field(default=0.4, gt=0, le=1)

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
    #: the gripper joint read from state_topic (the Robotiq's left knuckle); none of arm.joints
    joint: str = ROBOTIQ_JOINT
    #: the gripper's own joint state broadcaster (its controller manager, namespaced /robotiq)
    state_topic: str = "/robotiq/joint_states"
    #: a forward position controller on the knuckle joint (std_msgs/Float64MultiArray, rad)
    command_topic: str = "/robotiq/robotiq_position_controller/commands"
    #: the knuckle's closed position (robotiq_description's gripper_closed_position default)
    closed: float = Field(default=0.7929, gt=0)


class ControlConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: Hz: the runner's control rate, one command per tick (DROID: 15); the look-ahead and the rad/s of DROID's
    #: velocity 1 (0.2 rad per tick) follow from it
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
    #: ticks ahead each streamed segment's first point lies (indgen_robot/control.py): the next
    #: tick's segment may come half a tick late without the arm slowing down
    lookahead_ticks: float = Field(default=1.5, ge=1.0, le=10.0)
    #: at most this long (s) the runner extrapolates a joint-state sample by its velocity to the
    #: moment it sends a segment (part of every segment's reach)
    max_extrapolation_s: float = Field(default=0.02, ge=0, le=0.1)
    #: |offset| between the robot's stamps and this computer's clock tolerated at start-up
    clock_tolerance_s: float = Field(default=0.05, gt=0)
    #: how long an episode waits (holding) for the policy to be connected and warmed up (below the
    #: progression manager's episode_timeout_s, 120 s by default, so that a slow first compile aborts
    #: the trial for the policy's delay, not for a silent world)
    policy_ready_timeout_s: float = Field(default=60.0, gt=0)
    #: a tick whose command has not come after command_timeout_s holds the arm and keeps waiting
    #: for that same command up to this long (s) from the tick, as DROID's loop blocks on its
    #: policy: the chunk's first action is then executed, not dropped; a reply later than this is
    #: a missed tick
    reply_timeout_s: float = Field(default=2.0, gt=0)


class ResetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: rad, per joint: the pose the arm is brought to before each trial (default: DROID's reset pose)
    pose: list[float] = Field(default_factory=lambda: [0.0, -0.6283185, 0.0, -2.5132741, 0.0, 1.8849556, 0.0])
    #: "direct": one smooth segment through the trajectory controller, from the measured arm
    method: Literal["direct"] = "direct"
    #: rad/s: the fastest a joint moves towards the pose (and never above the runner's speed caps)
    max_speed: float = Field(default=0.5, gt=0)
    #: rad: the arm is at the pose when every joint is within this of it
    tolerance: float = Field(default=0.03, gt=0)
    #: s: the time the move may take beyond its duration at max_speed, and the time the arm then has to be
    #: verified at the pose (at rest for settle_s)
    timeout_s: float = Field(default=20.0, gt=0)
    #: joint speeds (rad/s) under which the arm counts as at rest
    at_rest_speed: float = Field(default=0.05, gt=0)
    #: how long (s) the arm must stay at the pose and at rest, without a break, to count as reset
    settle_s: float = Field(default=0.3, ge=0, le=2.0)
    #: a reset whose remaining distance to the pose shrinks by less than STALL_PROGRESS (rad) for
    #: this long is blocked (something is in the way): the arm holds where it is measured
    stall_s: float = Field(default=1.0, gt=0)

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
    #: franka's error recovery action (franka_msgs/action/ErrorRecovery), sent an empty goal (method franka)
    error_recovery_action: str = "/action_server/error_recovery"
    #: franka's controller manager: the recovery calls its hardware component and controller services, and the
    #: bring-up spawns the arm controller in it
    controller_manager: str = "/controller_manager"
    #: franka's hardware component in that controller manager, set active again after a fault
    hardware_component: str = "FrankaHardwareInterface"
    #: controllers the fault deactivated that the runner activates again
    controllers: list[str] = Field(
        default_factory=lambda: ["joint_state_broadcaster", "franka_robot_state_broadcaster", "fr3_arm_controller"]
    )
    #: s: the limit on each recovery call, and on the arm's state coming back after the recovery
    timeout_s: float = Field(default=30.0, gt=0)


class RobotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: the configuration's name in messages (the nodes' robot parameter names the file: config/robots/NAME.yaml)
    name: str
    #: one line on the cell, for people reading the file (IndGen does not read it)
    description: str = ""
    #: the arm: joint names, topics, limits and the bounds the runner keeps
    arm: ArmConfig
    #: the gripper: its joint, topics and closed position
    gripper: GripperConfig = GripperConfig()
    #: joint_state_publisher's merged topic (robot_state_publisher reads it): never a safety source
    merged_joint_states: str = "/joint_states"
    #: the runner's control loop: its rate, timeouts and how old a state or a frame may be
    control: ControlConfig = ControlConfig()
    #: how the arm is brought to its reset pose before each trial (indgen_robot/reset.py)
    reset: ResetConfig = ResetConfig()
    #: how the runner brings the robot back after a reflex or a fault
    recovery: RecoveryConfig = RecoveryConfig()
    #: what IndGen sets in franka_ros2 at bring-up: collision thresholds and the end-effector load
    franka: FrankaConfig = FrankaConfig()
    #: what the recorder leaves out of the bag
    recorder: RecorderConfig = RecorderConfig()
    #: camera name (as the DROID spec calls them: exterior_1, wrist) -> sensor_msgs/Image topic
    cameras: dict[str, str] = {}
    #: how the policy node subscribes the cameras: reliable (the ZED wrapper publishes reliable,
    #: zed_camera_component: QOS_QUEUE_SIZE 10) or best_effort (matches any publisher; a lost
    #: fragment drops a frame)
    cameras_qos: Literal["reliable", "best_effort"] = "reliable"
    #: camera_node's capture mode for a camera without a ROS driver (indgen_robot/ros/camera_node.py)
    uvc: UvcConfig = UvcConfig()
    #: the files and camera models `indgen bringup` and launch/fr3_cell.launch.py use
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

    def speed_caps(self) -> np.ndarray:
        """rad/s per joint: the runner's speed limits (velocity_fraction of the robot's, and the
        reach within max_lead: arm_bounds)."""
        arm, control = self.arm, self.control
        return arm_bounds.speed_caps(
            np.asarray(arm.max_lead),
            np.asarray(arm.velocity_limits) * arm.velocity_fraction,
            control.lookahead_ticks / control.rate_hz,
            control.max_extrapolation_s,
            self.stop_accelerations(),
            MIN_STOP_S,
        )

    def stop_accelerations(self) -> np.ndarray:
        """rad/s^2: the deceleration of every segment's tail."""
        return np.asarray(self.arm.acceleration_limits) * self.arm.stop_fraction

    def worst_torques(self) -> np.ndarray:
        """Nm per joint: the most the arm controller's command reaches against a joint blocked at
        the runner's top speed, by its gains alone (arm_bounds.worst_torques)."""
        ctl = self.controller
        return arm_bounds.worst_torques(
            ctl.p, ctl.d, ctl.ff_velocity_scale, ctl.i_clamp, self.arm.max_lead, self.speed_caps()
        )

    def torque_budget(self) -> np.ndarray:
        """Nm per joint: max_torque_fraction of the torque limits."""
        return self.arm.max_torque_fraction * np.asarray(self.arm.torque_limits)


def robot_config_path(name: str) -> Path:
    return paths.named_config("robots", name, "robot configuration")


def load_robot_config(name: str) -> RobotConfig:
    path = robot_config_path(name)
    config = load_model(path, RobotConfig)
    if config.bringup.arm_controllers:
        config._controller = read_arm_controller(
            path.parent / config.bringup.arm_controllers, config.arm.controller, config.arm.joints
        )
        _check_bounds(path, config)
        _check_tolerances(path, config)
    return config


def _check_bounds(path: Path, config: RobotConfig) -> None:
    """The torque bound (arm_bounds): by gains alone, and the controller's own output clamp."""
    arm, ctl = config.arm, config.controller
    budget = config.torque_budget()
    for j, joint in enumerate(arm.joints):
        if ctl.i[j] and not math.isfinite(ctl.i_clamp[j]):
            raise ConfigError(
                path,
                f"{joint}: an integral gain ({ctl.i[j]:g}) needs a finite i_clamp_max/i_clamp_min: unbounded torque",
            )
    worst = config.worst_torques()
    j = int(np.argmax(worst / budget))
    if worst[j] > budget[j] + 1e-9:
        v = config.speed_caps()[j]
        raise ConfigError(
            path,
            f"{arm.joints[j]}: worst-case torque against a blocked joint {worst[j]:.1f} Nm (p {ctl.p[j]:g} x max_lead "
            f"{arm.max_lead[j]:g} rad + (d {ctl.d[j]:g} + ff {ctl.ff_velocity_scale[j]:g}) x "
            f"{arm_bounds.CUBIC_OVERSHOOT * v:.2f} rad/s + i clamp {ctl.i_clamp[j]:g}) exceeds "
            f"{arm.max_torque_fraction:g} of its torque limit ({budget[j]:.1f} Nm); lower the gains or max_lead",
        )
    j = int(np.argmax(np.asarray(ctl.u_clamp) / budget))
    if not ctl.u_clamp[j] <= budget[j] + 1e-9:
        raise ConfigError(
            path,
            f"{arm.controller}'s output clamp for {arm.joints[j]} (u_clamp_max/u_clamp_min "
            f"{ctl.u_clamp[j]:g} Nm) must be set, at most {budget[j]:.1f} Nm ({arm.max_torque_fraction:g} of its "
            "torque limit): the controller's own cap on what it commands",
        )


def _check_tolerances(path: Path, config: RobotConfig) -> None:
    arm, ctl = config.arm, config.controller
    for i, joint in enumerate(arm.joints):
        if not 0 < ctl.path_tolerance[i] <= arm.max_lead[i] + 1e-9:
            raise ConfigError(
                path,
                f"{arm.controller}'s path tolerance for {joint} ({ctl.path_tolerance[i]:g}) must "
                f"be positive and at most max_lead ({arm.max_lead[i]:g}): the controller itself holds "
                "the arm on a violation",
            )
