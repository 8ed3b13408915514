"""The arm controller's settings that the FR3 runner's promises depend on, read from the
ros2_control parameter file the spawner loads (ros2_controllers' joint_trajectory_controller,
jazzy): its type, joints, gains, clamps and tolerances. The robot configuration's loader checks
its bounds against them (robot_config.py, arm_bounds.py)."""

from __future__ import annotations

import math
from pathlib import Path

import yaml
from pydantic import BaseModel

from indgen_core.configfile import ConfigError


class ArmController(BaseModel):
    """The arm controller's settings that the runner's promises depend on, as loaded from
    bringup.arm_controllers (ros2_controllers' joint_trajectory_controller parameters, jazzy:
    gains.<joint>.{p, i, d, i_clamp, i_clamp_max/min, ff_velocity_scale, u_clamp_max/min})."""

    p: list[float]
    d: list[float]
    i: list[float]
    #: Nm: the integral term's clamp (inf when unclamped)
    i_clamp: list[float]
    ff_velocity_scale: list[float]
    #: Nm: the PID output's clamp (ros2_controllers >= 4.27.0; inf when not set)
    u_clamp: list[float]
    path_tolerance: list[float]
    goal_tolerance: list[float]
    goal_time: float
    interpolate_from_desired_state: bool


def _params_of(data: dict, name: str) -> dict | None:
    """A node's ros__parameters in a ROS 2 parameter file, under the keys the spawner accepts
    (controller_manager/spawner: name, /name, /**/name)."""
    for key in (name, f"/{name}", f"/**/{name}"):
        if isinstance(data.get(key), dict) and isinstance(data[key].get("ros__parameters"), dict):
            return data[key]["ros__parameters"]
    return None


def read_arm_controller(path: Path, name: str, joints: list[str]) -> ArmController:
    """The arm controller's settings from the ros2_control parameter file the spawner loads."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(path, f"cannot be read as YAML ({exc.__class__.__name__})") from None
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
    if list(params.get("joints") or []) != list(joints):
        raise ConfigError(path, f"{name}'s joints {params.get('joints')} are not the robot's {joints}")
    gains, constraints = params.get("gains") or {}, params.get("constraints") or {}
    try:
        joint_gains = [gains[j] for j in joints]
        p = [float(g["p"]) for g in joint_gains]
        d = [float(g.get("d", 0.0)) for g in joint_gains]
        i = [float(g.get("i", 0.0)) for g in joint_gains]
        i_clamp = [_integral_clamp(g) for g in joint_gains]
        ff = [float(g.get("ff_velocity_scale", 0.0)) for g in joint_gains]
        u_clamp = [
            max(abs(float(g.get("u_clamp_max", math.inf))), abs(float(g.get("u_clamp_min", -math.inf))))
            for g in joint_gains
        ]
        path_tol = [float(constraints[j]["trajectory"]) for j in joints]
        goal_tol = [float(constraints[j].get("goal", 0.0)) for j in joints]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            path,
            f"{name} needs gains.<joint>.p and constraints.<joint>.trajectory for every arm joint "
            f"(missing or not a number: {exc})",
        ) from None
    return ArmController(
        p=p,
        d=d,
        i=i,
        i_clamp=[c if gain else 0.0 for gain, c in zip(i, i_clamp, strict=True)],
        ff_velocity_scale=ff,
        u_clamp=u_clamp,
        path_tolerance=path_tol,
        goal_tolerance=goal_tol,
        goal_time=float(constraints.get("goal_time", 0.0)),
        interpolate_from_desired_state=bool(params.get("interpolate_from_desired_state", False)),
    )


def _integral_clamp(gains: dict) -> float:
    """control_toolbox's clamp of the integral term (Nm): i_clamp_max/min where set, else the
    deprecated symmetric i_clamp (JTC jazzy update_pids); inf when neither is."""
    high = float(gains.get("i_clamp_max", gains.get("i_clamp", math.inf)))
    low = float(gains.get("i_clamp_min", -float(gains.get("i_clamp", math.inf))))
    return max(abs(high), abs(low))
