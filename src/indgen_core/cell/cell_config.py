"""The parts of a robot configuration about the cell around the arm (robot_config.py holds the
whole): what IndGen asks of franka_ros2 at bring-up, what the recorder leaves out, how a
camera without a ROS driver is captured, which files the bring-up loads."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator


class FrankaConfig(BaseModel):
    """What IndGen asks of franka_ros2 at bring-up (indgen_robot/bringup.py), through
    franka_hardware's parameter services, which work only while no controller claims a command
    interface (franka_bringup doc: idle mode), so before the arm controller is spawned."""

    model_config = ConfigDict(extra="forbid")
    #: franka_hardware recovers in place after a reflex from v3.3.0 (CHANGELOG.rst: "make
    #: FrankaHardwareInterface error recoverable"); before it a reflex ends franka's process and
    #: every policy collision would be re-run as a driver fault
    min_version: str = Field(default="3.3.0", pattern=r"^\d+\.\d+\.\d+$")
    #: franka_hardware's parameter service node (franka_param_service_server.cpp: node service_server)
    service_prefix: str = "/service_server"
    #: Nm per joint and N per Cartesian axis: libfranka's collision thresholds, lower = upper, the
    #: same while accelerating and in nominal motion (DROID's FR3 config, franka_hardware.yaml:
    #: collision_behavior 40 everywhere, applied by polymetis' setCollisionBehavior)
    collision_torque: list[float] = Field(default_factory=lambda: [40.0] * 7)
    #: N: libfranka's Cartesian collision thresholds for x, y, z, roll, pitch, yaw (6 values), set the same
    #: way as collision_torque
    collision_force: list[float] = Field(default_factory=lambda: [40.0] * 6)
    #: the end-effector load franka compensates (SetLoad.srv): kg, m (flange frame) and kg m^2
    #: (column-major 3 x 3). The default is the Robotiq 2F-85 (0.925 kg) with a wrist ZED Mini
    #: (0.063 kg) and a mount, as a uniform cylinder: nominal, not identified on a robot; enter
    #: your own (Desk identifies it). Without it the compliant wrist sags and resets may not verify.
    load_mass: float = Field(default=1.1, ge=0)
    #: m: the load's centre of mass in the flange frame (x, y, z)
    load_center_of_mass: list[float] = Field(default_factory=lambda: [0.0, 0.0, 0.06])
    #: kg m^2: the load's inertia matrix, column-major 3 x 3 (9 values)
    load_inertia: list[float] = Field(default_factory=lambda: [0.00176, 0.0, 0.0, 0.0, 0.00176, 0.0, 0.0, 0.0, 0.00088])

    @model_validator(mode="after")
    def _sizes(self):
        for name, size in (
            ("collision_torque", 7),
            ("collision_force", 6),
            ("load_center_of_mass", 3),
            ("load_inertia", 9),
        ):
            values = getattr(self, name)
            if len(values) != size or not all(math.isfinite(v) for v in values):
                raise ValueError(f"franka.{name} needs {size} finite values, got {len(values)}")
        if any(v <= 0 for v in self.collision_torque + self.collision_force):
            raise ValueError("franka's collision thresholds must be positive")
        return self


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


class UvcConfig(BaseModel):
    """The capture mode camera_node asks a camera without a ROS driver for (a ZED over UVC:
    both eyes side by side; the wrapper's HD720 is 2560 x 720 here, DROID's 15 fps)."""

    model_config = ConfigDict(extra="forbid")
    #: pixels: the frame width asked of the device (both eyes side by side)
    width: int = Field(default=2560, gt=0)
    #: pixels: the frame height asked of the device
    height: int = Field(default=720, gt=0)
    #: frames per second asked of the device; a device that takes another mode is logged as a warning
    fps: float = Field(default=15.0, gt=0)


class BringupConfig(BaseModel):
    """What `indgen bringup` and launch/fr3_cell.launch.py start (indgen_robot/bringup.py)."""

    model_config = ConfigDict(extra="forbid")
    #: files relative to config/robots/
    arm_controllers: str = ""
    #: file relative to config/robots/: the gripper's ros2_control parameters, loaded by its controller
    #: manager (in /robotiq) and its spawners
    gripper_controllers: str = ""
    #: file relative to config/robots/: the ZED wrapper's parameter overrides, given to every camera's
    #: launch (ros_params_override_path); empty: none
    camera_overrides: str = ""
    #: camera name -> the ZED wrapper's camera_model (zed2, zed2i, zedm, zedx...)
    camera_models: dict[str, str] = Field(
        default_factory=lambda: {"exterior_1": "zed2", "exterior_2": "zed2", "wrist": "zedm"}
    )
