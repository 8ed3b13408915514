"""ros2 launch indgen fr3_cell.launch.py robot_ip:=<ip> [exterior_1_serial:=<sn> ...] [name:=value ...]

The whole real cell on a ROS 2 Jazzy install with franka_ros2, ros2_robotiq_gripper and the
ZED wrapper: franka's bring-up with IndGen's arm controller, the Robotiq on its own namespaced
controller manager, one ZED wrapper per camera (indgen_robot/bringup.py says what and why),
then IndGen's graph: the stack_axis profile with sim:=false robot:=real, taking the same
arguments as `indgen launch stack_axis` (campaign:=campaigns/fr3_scale_pi05.yaml for the Scale
axis). `indgen bringup` prints the same bring-up as commands to run by hand. Unverified on
hardware.
"""

from indgen_core.graph import load_profile
from indgen_core.robot_config import load_robot_config, robot_config_path
from indgen_core.ros.launch_description import launch_description
from indgen_robot.bringup import CELL_ARGUMENTS, IncludeLaunch, cell_steps

PROFILE = "stack_axis"
#: IndGen's graph on the real robot: the runner recovers through franka's interfaces
DEFAULTS = {"sim": "false", "robot": "real", "recovery": "franka"}


def describe(robot_config: str = "fr3_robotiq_zed", **overrides):
    """The bring-up steps and IndGen's resolved nodes of this launch file, for tests and docs."""
    values = {name: overrides.pop(name) for name in list(overrides) if name in CELL_ARGUMENTS}
    config = load_robot_config(robot_config)
    steps = cell_steps(config, robot_config_path(robot_config).parent, values)
    nodes = load_profile(PROFILE).resolve({**DEFAULTS, "robot_config": robot_config, **overrides})
    return steps, nodes


def _bringup(context):
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue
    from launch_ros.substitutions import FindPackageShare

    values = {name: LaunchConfiguration(name).perform(context) for name in CELL_ARGUMENTS}
    robot = LaunchConfiguration("robot_config").perform(context)
    actions = []
    for step in cell_steps(load_robot_config(robot), robot_config_path(robot).parent, values):
        if isinstance(step, IncludeLaunch):
            source = PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare(step.package), step.file]))
            actions.append(IncludeLaunchDescription(source, launch_arguments=list(step.arguments.items())))
            continue
        parameters = list(step.parameter_files)
        for name, (package, file, xacro_args) in step.xacro_parameters.items():
            command = [FindExecutable(name="xacro"), " ", PathJoinSubstitution([FindPackageShare(package), file])]
            for key, value in xacro_args.items():
                command += [" ", f"{key}:={value}"]
            parameters.append({name: ParameterValue(Command(command), value_type=str)})
        actions.append(Node(package=step.package, executable=step.executable, namespace=step.namespace or None,
                            arguments=step.arguments, parameters=parameters, output="screen"))
    return actions


def generate_launch_description():
    return launch_description(PROFILE, defaults=DEFAULTS, extra_arguments=CELL_ARGUMENTS, before=_bringup)
