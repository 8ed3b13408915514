"""The real cell's bring-up on ROS 2 Jazzy, described once: `launch/fr3_cell.launch.py` turns it
into launch actions, `indgen bringup` prints it as the shell commands a person runs by hand, and
the documentation shows those commands; a test checks the plan against what the real packages
take. Every step follows the named source:

1. franka_ros2 (`jazzy`, franka_bringup/launch/franka.launch.py): the FR3 with its controller
   manager at /controller_manager, joint_state_broadcaster (remapped to franka/joint_states),
   joint_state_publisher (/joint_states), franka_robot_state_broadcaster; no gripper
   (load_gripper:=false: the Robotiq is not franka's). It runs as a process of its own,
   restarted when it exits: franka.launch.py ends its launch when its ros2_control_node exits
   (on_exit=Shutdown()), which, included, would take IndGen's graph down with it, and the
   runner's "driver died: abort, re-run once it is back" could never happen. franka_hardware
   must be v3.3.0 or later (franka.min_version): only from there does it recover in place after
   a reflex (`franka_version_problem`).
2. franka's collision thresholds and end-effector load from the robot configuration (DROID's
   40 Nm / 40 N; the Robotiq and wrist camera), through franka_hardware's parameter services,
   which answer only while no controller claims a command interface: before step 3, again
   after every restart of step 1.
3. IndGen's arm controller spawned into franka's controller manager from its own parameter
   file (controller_manager/spawner.py `jazzy`: the type is read from the controller's own
   ros__parameters; -t was removed), again after every restart of step 1.
3. The Robotiq on its own controller manager in the namespace /robotiq: robot_state_publisher
   with robotiq_description's URDF (which sets the driver's hardware interface), a
   ros2_control_node with IndGen's controllers file, spawners pointed at
   /robotiq/controller_manager. robotiq_description's robotiq_control.launch.py is not used: it
   has no namespace argument, points its spawners at /controller_manager (franka's), and
   spawns robotiq_gripper_controller, which claims the knuckle's position interface.
4. One ZED wrapper per camera (zed_wrapper/launch/zed_camera.launch.py, v5): camera_name from
   the robot configuration's topic, IndGen's parameter overrides (no depth), and each camera's
   serial number, which the wrapper's launch requires in a multi-camera rig ("It is mandatory
   to use this parameter or camera ID in multi-camera rigs"; without it every wrapper opens the
   first camera it finds and views swap silently): a rig of several cameras without every
   serial is refused.
5. IndGen's graph (the stack_axis profile with sim:=false robot:=real).

Unverified on hardware (none here): the whole sequence; it is read from the sources above, and
the tests check it against constants transcribed from them (cited where they are defined).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from indgen_core.cell.robot_config import RobotConfig
from indgen_core.errors import IndGenError

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
    #: run as a process of its own (`ros2 launch ...`), restarted when it exits: its own
    #: on_exit=Shutdown() then ends only it
    own_process: bool = False


@dataclass(frozen=True)
class CallService:
    """A service call (`ros2 service call`), made again each time the driver starts."""

    what: str
    service: str
    srv_type: str
    request: dict[str, list[float] | float]


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
    #: run again each time franka's driver (a restarted own_process step) starts
    with_driver: bool = False


Step = IncludeLaunch | RunNode | CallService

#: franka_msgs' parameter services (franka_ros2 v3.4.0: franka_hardware/src/franka_param_service_server.cpp,
#: served by node service_server; franka_msgs/srv/SetFullCollisionBehavior.srv and SetLoad.srv)
COLLISION_SERVICE = ("set_full_collision_behavior", "franka_msgs/srv/SetFullCollisionBehavior")
LOAD_SERVICE = ("set_load", "franka_msgs/srv/SetLoad")


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
    cameras = list(config.cameras)
    unnamed = [cam for cam in cameras if not values.get(f"{cam}_serial")]
    if len(cameras) > 1 and unnamed:
        raise IndGenError(
            f"a rig of {len(cameras)} ZED cameras needs each one's serial number (zed_camera.launch.py: "
            "mandatory in multi-camera rigs, else every wrapper opens the first camera it finds and the views swap "
            f"silently): set {', '.join(f'{cam}_serial:=<sn>' for cam in unnamed)} (ZED_Explorer -a lists them)"
        )
    franka, service = config.franka, config.franka.service_prefix.rstrip("/")
    steps: list[Step] = [
        IncludeLaunch(
            "franka_ros2: the FR3, its controller manager and broadcasters, no gripper (its own process, restarted "
            "when it exits)",
            "franka_bringup",
            "launch/franka.launch.py",
            {
                "robot_type": "fr3",
                "robot_ip": values["robot_ip"],
                "load_gripper": "false",
                "use_fake_hardware": values["use_fake_hardware"],
            },
            own_process=True,
        ),
        CallService(
            "franka's collision thresholds (the robot configuration's franka.collision_*: DROID's)",
            f"{service}/{COLLISION_SERVICE[0]}",
            COLLISION_SERVICE[1],
            {
                "lower_torque_thresholds_acceleration": franka.collision_torque,
                "upper_torque_thresholds_acceleration": franka.collision_torque,
                "lower_torque_thresholds_nominal": franka.collision_torque,
                "upper_torque_thresholds_nominal": franka.collision_torque,
                "lower_force_thresholds_acceleration": franka.collision_force,
                "upper_force_thresholds_acceleration": franka.collision_force,
                "lower_force_thresholds_nominal": franka.collision_force,
                "upper_force_thresholds_nominal": franka.collision_force,
            },
        ),
        CallService(
            "franka's end-effector load (the robot configuration's franka.load_*: the Robotiq and the wrist camera)",
            f"{service}/{LOAD_SERVICE[0]}",
            LOAD_SERVICE[1],
            {
                "mass": franka.load_mass,
                "center_of_mass": franka.load_center_of_mass,
                "load_inertia": franka.load_inertia,
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
            with_driver=True,
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
        if isinstance(step, CallService):
            lines.append(f"ros2 service call {step.service} {step.srv_type} {_quote(service_request(step))}")
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


def service_request(step: CallService) -> str:
    """The request as `ros2 service call` takes it (YAML flow style, every value a float)."""

    def number(value) -> str:
        return repr(float(value))

    fields = [
        f"{name}: [{', '.join(number(v) for v in value)}]" if isinstance(value, list) else f"{name}: {number(value)}"
        for name, value in step.request.items()
    ]
    return "{" + ", ".join(fields) + "}"


def franka_version_problem(min_version: str, prefixes: list[str] | None = None) -> str | None:
    """One sentence when the franka_hardware installed here is older than `min_version`; None
    when it is new enough or not installed here (the driver may run on another computer: say so
    where it matters). Read from its package.xml in the ament prefixes (AMENT_PREFIX_PATH), the
    only place the version shows: franka's services and actions are the same before and after."""
    found = None
    for prefix in prefixes if prefixes is not None else os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        manifest = Path(prefix) / "share" / "franka_hardware" / "package.xml"
        if prefix and manifest.is_file():
            match = re.search(r"<version>\s*([\d.]+)\s*</version>", manifest.read_text(encoding="utf-8"))
            found = match.group(1) if match else None
            break
    if found is None:
        return None
    if tuple(int(x) for x in found.split(".")) < tuple(int(x) for x in min_version.split(".")):
        return (
            f"franka_ros2's franka_hardware {found} is older than {min_version}: before 3.3.0 a reflex ends franka's "
            "process instead of leaving the robot to recover in place, so every collision of a policy would be re-run "
            f"as a driver fault; upgrade franka_ros2 to {min_version} or later"
        )
    return None


#: an installed package's path, which the shell must expand: left unquoted
_PACKAGE_PATH = re.compile(r"^\$\(ros2 pkg prefix \w+\)[\w./-]*$")


def _quote(text: str) -> str:
    return text if _PACKAGE_PATH.match(text) else shlex.quote(text)
