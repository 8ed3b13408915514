"""The real cell's bring-up on ROS 2 Jazzy, described once: `launch/fr3_cell.launch.py` turns it
into launch actions, `indgen bringup` prints it as the shell commands a person runs by hand, and
the documentation shows those commands; a test checks the plan against what the real packages
take. Every step follows the named source:

1. franka_ros2 (`jazzy`, franka_bringup/launch/franka.launch.py): the FR3 with its controller
   manager at /controller_manager, joint_state_broadcaster (remapped to franka/joint_states),
   joint_state_publisher (/joint_states), franka_robot_state_broadcaster; no gripper
   (load_gripper:=false: the Robotiq is not franka's).
2. IndGen's arm controller spawned into franka's controller manager from its own parameter
   file (controller_manager/spawner.py `jazzy`: the type is read from the controller's own
   ros__parameters; -t was removed).
3. The Robotiq on its own controller manager in the namespace /robotiq: robot_state_publisher
   with robotiq_description's URDF (which sets the driver's hardware interface), a
   ros2_control_node with IndGen's controllers file, spawners pointed at
   /robotiq/controller_manager. robotiq_description's robotiq_control.launch.py is not used: it
   has no namespace argument, points its spawners at /controller_manager (franka's), and
   spawns robotiq_gripper_controller, which claims the knuckle's position interface.
4. One ZED wrapper per camera (zed_wrapper/launch/zed_camera.launch.py, v5): camera_name from
   the robot configuration's topic, IndGen's parameter overrides (no depth).
5. IndGen's graph (the stack_axis profile with sim:=false robot:=real).

Unverified on hardware (none here): the whole sequence; it is read from the sources above.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from indgen_core.errors import IndGenError
from indgen_core.robot_config import RobotConfig

#: the cell's own launch arguments (beside IndGen's graph's): name -> (default, description)
CELL_ARGUMENTS = {
    "robot_ip": ("", "the FR3's address (franka_bringup robot_ip)"),
    "use_fake_hardware": (
        "false",
        "franka_bringup's mock_components instead of the robot (no reflexes, no franka_robot_state_broadcaster)",
    ),
    "gripper_port": ("/dev/ttyUSB0", "the Robotiq's serial port (robotiq_description com_port)"),
    "exterior_1_serial": ("", "serial number of the ZED of camera exterior_1"),
    "exterior_2_serial": ("", "serial number of the ZED of camera exterior_2"),
    "wrist_serial": ("", "serial number of the ZED of camera wrist"),
}
#: the launch arguments franka.launch.py declares that the plan uses (franka_ros2 v3.4.0)
FRANKA_LAUNCH_ARGUMENTS = {"robot_type", "robot_ip", "load_gripper", "use_fake_hardware", "namespace"}
#: zed_camera.launch.py's arguments the plan uses (zed-ros2-wrapper v5.4)
ZED_LAUNCH_ARGUMENTS = {
    "camera_model",
    "camera_name",
    "serial_number",
    "ros_params_override_path",
    "publish_tf",
    "publish_map_tf",
}
#: jazzy's spawner options the plan uses (controller_manager/spawner.py)
SPAWNER_OPTIONS = {"-c", "--param-file", "--controller-manager-timeout"}
GRIPPER_NAMESPACE = "robotiq"
GRIPPER_URDF = ("robotiq_description", "urdf/robotiq_2f_85_gripper.urdf.xacro")


@dataclass(frozen=True)
class IncludeLaunch:
    what: str
    package: str
    file: str  # under the package's share directory
    arguments: dict[str, str]


@dataclass(frozen=True)
class RunNode:
    what: str
    package: str
    executable: str
    arguments: list[str] = field(default_factory=list)
    namespace: str = ""
    parameter_files: list[str] = field(default_factory=list)
    #: parameter -> a xacro call (package, file under share, xacro arguments): robot_description
    xacro_parameters: dict[str, tuple[str, str, dict[str, str]]] = field(default_factory=dict)


Step = IncludeLaunch | RunNode


def camera_name(topic: str) -> str:
    """The wrapper's camera_name in a ZED topic (/<camera_name>/zed_node/...)."""
    parts = [p for p in topic.split("/") if p]
    if len(parts) < 3 or parts[1] != "zed_node":
        raise IndGenError(f"camera topic {topic} is not a ZED wrapper topic (/<camera_name>/zed_node/...)")
    return parts[0]


def cell_steps(config: RobotConfig, config_dir: Path, values: dict[str, str]) -> list[Step]:
    """The bring-up of `config`'s cell; `values`: the cell arguments (CELL_ARGUMENTS)."""
    values = {name: str(values.get(name, default)) for name, (default, _) in CELL_ARGUMENTS.items()}
    if not values["robot_ip"] and values["use_fake_hardware"] != "true":
        raise IndGenError("set robot_ip (the FR3's address), or use_fake_hardware to true (franka's mock hardware)")
    bringup = config.bringup
    for name in ("arm_controllers", "gripper_controllers"):
        if not getattr(bringup, name):
            raise IndGenError(f"robot configuration '{config.name}' names no bringup.{name} file")
    cm = config.recovery.controller_manager
    gripper_cm = f"/{GRIPPER_NAMESPACE}/controller_manager"
    if not config.gripper.state_topic.startswith(
        f"/{GRIPPER_NAMESPACE}/"
    ) or not config.gripper.command_topic.startswith(f"/{GRIPPER_NAMESPACE}/"):
        raise IndGenError(f"the gripper's topics must be in /{GRIPPER_NAMESPACE}/, its controller manager's namespace")
    steps: list[Step] = [
        IncludeLaunch(
            "franka_ros2: the FR3, its controller manager and broadcasters, no gripper",
            "franka_bringup",
            "launch/franka.launch.py",
            {
                "robot_type": "fr3",
                "robot_ip": values["robot_ip"],
                "load_gripper": "false",
                "use_fake_hardware": values["use_fake_hardware"],
            },
        ),
        RunNode(
            "IndGen's arm controller in franka's controller manager",
            "controller_manager",
            "spawner",
            [
                config.arm.controller,
                "-c",
                cm,
                "--controller-manager-timeout",
                "30",
                "--param-file",
                str(config_dir / bringup.arm_controllers),
            ],
        ),
        RunNode(
            "the Robotiq's description in its namespace (its URDF selects the driver)",
            "robot_state_publisher",
            "robot_state_publisher",
            namespace=GRIPPER_NAMESPACE,
            xacro_parameters={
                "robot_description": (*GRIPPER_URDF, {"use_fake_hardware": "false", "com_port": values["gripper_port"]})
            },
        ),
        RunNode(
            "the Robotiq's own controller manager",
            "controller_manager",
            "ros2_control_node",
            namespace=GRIPPER_NAMESPACE,
            parameter_files=[str(config_dir / bringup.gripper_controllers)],
        ),
    ]
    for controller in ("joint_state_broadcaster", "robotiq_activation_controller", "robotiq_position_controller"):
        steps.append(
            RunNode(
                f"the Robotiq's {controller}",
                "controller_manager",
                "spawner",
                [
                    controller,
                    "-c",
                    gripper_cm,
                    "--controller-manager-timeout",
                    "30",
                    "--param-file",
                    str(config_dir / bringup.gripper_controllers),
                ],
            )
        )
    for cam, topic in config.cameras.items():
        arguments = {
            "camera_model": bringup.camera_models.get(cam, "zed2"),
            "camera_name": camera_name(topic),
            "publish_tf": "false",
            "publish_map_tf": "false",
        }
        if values.get(f"{cam}_serial"):
            arguments["serial_number"] = values[f"{cam}_serial"]
        if bringup.camera_overrides:
            arguments["ros_params_override_path"] = str(config_dir / bringup.camera_overrides)
        steps.append(IncludeLaunch(f"the ZED of camera {cam}", "zed_wrapper", "launch/zed_camera.launch.py", arguments))
    return steps


def shell_commands(steps: list[Step]) -> list[str]:
    """Each step as the command a person runs in its own terminal of a sourced ROS 2 Jazzy."""
    lines = []
    for step in steps:
        if isinstance(step, IncludeLaunch):
            args = " ".join(f"{k}:={_quote(v)}" for k, v in step.arguments.items() if v != "")
            lines.append(f"ros2 launch {step.package} {Path(step.file).name} {args}".rstrip())
            continue
        ros_args = []
        if step.namespace:
            ros_args += ["-r", f"__ns:=/{step.namespace}"]
        for path in step.parameter_files:
            ros_args += ["--params-file", _quote(path)]
        for name, (package, file, xacro_args) in step.xacro_parameters.items():
            call = " ".join(
                [f"$(ros2 pkg prefix {package})/share/{package}/{file}", *(f"{k}:={v}" for k, v in xacro_args.items())]
            )
            ros_args += ["-p", f'{name}:="$(xacro {call})"']
        line = f"ros2 run {step.package} {step.executable} {' '.join(_quote(a) for a in step.arguments)}"
        if ros_args:
            line = f"{line.rstrip()} --ros-args {' '.join(ros_args)}"
        lines.append(line.rstrip())
    return lines


#: an installed package's path, which the shell must expand: left unquoted
_PACKAGE_PATH = re.compile(r"^\$\(ros2 pkg prefix \w+\)[\w./-]*$")


def _quote(text: str) -> str:
    return text if _PACKAGE_PATH.match(text) else shlex.quote(text)
