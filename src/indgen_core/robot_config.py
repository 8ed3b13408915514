"""A robot configuration (config/robots/<name>.yaml): every name, topic, limit and timing the
FR3 runner, the hardware stand-in and the policy node need, in one file a user edits for
their cell. The runner (indgen_robot) and the stand-in (indgen_sim) read the same file, so the
stand-in offers exactly the interface the real bring-up must provide; it lives in the core
because both sides read it and neither may import the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from indgen_core import paths
from indgen_core.configfile import load_model

DOF = 7


def _seven(v: list[float]) -> list[float]:
    if len(v) != DOF:
        raise ValueError(f"needs {DOF} values (one per arm joint), got {len(v)}")
    return v


class ArmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    joints: list[str] = Field(default_factory=lambda: [f"fr3_joint{i}" for i in range(1, 8)])
    #: the JointTrajectoryController's topic (ros2_controllers: <controller>/joint_trajectory)
    trajectory_topic: str = "/fr3_arm_controller/joint_trajectory"
    lower: list[float]
    upper: list[float]
    #: rad/s and rad/s^2: the robot's own limits (franka's motion generator refuses more)
    velocity_limits: list[float]
    acceleration_limits: list[float]
    #: the runner commands at most these fractions of them
    velocity_fraction: float = Field(0.5, gt=0, le=1)
    acceleration_fraction: float = Field(0.2, gt=0, le=1)
    #: rad kept clear of every position limit
    position_margin: float = Field(0.05, ge=0)
    #: rad between where the runner commanded the arm and where it is, beyond which the arm is
    #: not following (a collision, a fault): the episode stops
    tracking_tolerance: float = Field(0.25, gt=0)

    @field_validator("joints", "lower", "upper", "velocity_limits", "acceleration_limits")
    @classmethod
    def _per_joint(cls, v):
        return _seven(v)

    @model_validator(mode="after")
    def _ordered(self):
        for i, (lo, hi) in enumerate(zip(self.lower, self.upper, strict=True)):
            if not lo + 2 * self.position_margin < hi:
                raise ValueError(f"joint {self.joints[i]}: lower {lo} must be below upper {hi} (with the margin)")
        if any(v <= 0 for v in self.velocity_limits + self.acceleration_limits):
            raise ValueError("velocity and acceleration limits must be positive")
        return self


class GripperConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    joint: str = "robotiq_85_left_knuckle_joint"
    #: a forward position controller on the knuckle joint (std_msgs/Float64MultiArray, rad)
    command_topic: str = "/robotiq_position_controller/commands"
    closed: float = Field(0.8, gt=0)


class ControlConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rate_hz: float = Field(15.0, gt=0, le=100)
    #: how long a tick waits for the command that answers it; the robot finishes its previous
    #: segment meanwhile (which ends at rest), then holds
    command_timeout_s: float = Field(0.3, gt=0)
    #: consecutive ticks without a usable command before the trial is aborted
    max_missed_ticks: int = Field(8, ge=1)
    #: joint states older than this stop the episode (a fault deactivates franka's broadcaster)
    joint_state_max_age_s: float = Field(0.25, gt=0)
    #: ticks ahead each streamed segment's first point lies (indgen_robot/control.py)
    lookahead_ticks: float = Field(3.0, ge=1.0, le=10.0)


class ResetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pose: list[float] = Field(default_factory=lambda: [0.0, -0.6283185, 0.0, -2.5132741, 0.0, 1.8849556, 0.0])
    #: "direct": one smooth segment through the trajectory controller; "moveit": a
    #: collision-aware plan through moveit_py (a ROS install only)
    method: Literal["direct", "moveit"] = "direct"
    max_speed: float = Field(0.5, gt=0)
    tolerance: float = Field(0.03, gt=0)
    timeout_s: float = Field(20.0, gt=0)
    moveit_group: str = "fr3_arm"
    moveit_config: str = ""

    @field_validator("pose")
    @classmethod
    def _per_joint(cls, v):
        return _seven(v)


class RobotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    arm: ArmConfig
    gripper: GripperConfig = GripperConfig()
    joint_states_topic: str = "/joint_states"
    control: ControlConfig = ControlConfig()
    reset: ResetConfig = ResetConfig()
    #: camera name (as the DROID spec calls them: exterior_1, wrist) -> sensor_msgs/Image topic
    cameras: dict[str, str] = {}
    #: files a user needs to bring the robot up (relative to config/robots/)
    bringup: dict[str, str] = {}

    @model_validator(mode="after")
    def _reset_inside(self):
        for i, q in enumerate(self.reset.pose):
            if not self.arm.lower[i] + self.arm.position_margin <= q <= self.arm.upper[i] - self.arm.position_margin:
                raise ValueError(f"reset pose of {self.arm.joints[i]} ({q}) is outside its limits")
        return self


def robot_config_path(name: str) -> Path:
    return paths.named_config("robots", name, "robot configuration")


def load_robot_config(name: str) -> RobotConfig:
    return load_model(robot_config_path(name), RobotConfig)
