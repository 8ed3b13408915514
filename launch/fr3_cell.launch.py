"""ros2 launch indgen fr3_cell.launch.py robot_ip:=<ip> [exterior_1_serial:=<sn> ...] [name:=value ...]

The whole real cell on a ROS 2 Jazzy install with franka_ros2, ros2_robotiq_gripper and the
ZED wrapper: franka's bring-up with IndGen's arm controller, the Robotiq on its own namespaced
controller manager, one ZED wrapper per camera (indgen_robot/bringup.py says what and why),
then IndGen's graph: the stack_axis profile with sim:=false robot:=real, taking the same
arguments as `indgen launch stack_axis` (campaign:=campaigns/fr3_scale_pi05.yaml for the Scale
axis). `indgen bringup` prints the same bring-up as commands to run by hand. Unverified on
hardware.

franka's own launch runs as a child process (`ros2 launch franka_bringup franka.launch.py`),
restarted when it exits: its ros2_control_node has on_exit=Shutdown(), which, included here,
would end IndGen's graph with it. Each time it starts, the collision thresholds and load are
set and IndGen's arm controller is spawned again; meanwhile the runner aborts the running trial
as a driver fault and runs it again once the driver is back. A franka_hardware older than
3.3.0 is refused (it cannot recover in place after a reflex).
"""

from indgen_core.cell.robot_config import load_robot_config, robot_config_path
from indgen_core.graph import load_profile
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
    from launch.actions import ExecuteProcess, IncludeLaunchDescription, RegisterEventHandler
    from launch.event_handlers import OnProcessExit, OnProcessStart
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue
    from launch_ros.substitutions import FindPackageShare

    from indgen_core.errors import IndGenError
    from indgen_robot.bringup import CallService, franka_version_problem, service_request

    values = {name: LaunchConfiguration(name).perform(context) for name in CELL_ARGUMENTS}
    robot = LaunchConfiguration("robot_config").perform(context)
    config = load_robot_config(robot)
    problem = franka_version_problem(config.franka.min_version)
    if problem:
        raise IndGenError(problem)
    actions, driver, with_driver = [], None, []

    def node_of(step):
        parameters = list(step.parameter_files)
        for name, (package, file, xacro_args) in step.xacro_parameters.items():
            command = [FindExecutable(name="xacro"), " ", PathJoinSubstitution([FindPackageShare(package), file])]
            for key, value in xacro_args.items():
                command += [" ", f"{key}:={value}"]
            parameters.append({name: ParameterValue(Command(command), value_type=str)})
        return Node(package=step.package, executable=step.executable, namespace=step.namespace or None,
                    arguments=step.arguments, parameters=parameters, output="screen")

    def call_of(step):
        # `ros2 service call` waits for the service: it runs once the driver is up
        return ExecuteProcess(cmd=["ros2", "service", "call", step.service, step.srv_type, service_request(step)],
                              output="screen")

    for step in cell_steps(config, robot_config_path(robot).parent, values):
        if isinstance(step, IncludeLaunch) and step.own_process:
            arguments = [f"{k}:={v}" for k, v in step.arguments.items() if v != ""]
            driver = ExecuteProcess(
                cmd=["ros2", "launch", step.package, step.file.rsplit("/", 1)[-1], *arguments],
                name=step.package,
                output="screen",
                respawn=True,
                respawn_delay=5.0,
            )
            actions.append(driver)
            continue
        if isinstance(step, IncludeLaunch):
            source = PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare(step.package), step.file]))
            actions.append(IncludeLaunchDescription(source, launch_arguments=list(step.arguments.items())))
            continue
        if isinstance(step, CallService) or step.with_driver:
            with_driver.append(step)
            continue
        actions.append(node_of(step))
    if driver is not None and with_driver:
        # each (re)start of franka's driver gets fresh actions: thresholds and load first (idle
        # mode), then the arm controller (the spawner waits for the controller manager)
        def on_driver_start(event, context):
            calls = [call_of(s) for s in with_driver if isinstance(s, CallService)]
            nodes = [node_of(s) for s in with_driver if not isinstance(s, CallService)]
            chain = [*calls[:1]]  # one after the other; the nodes once the last call is done
            for before, after in zip(calls, [*calls[1:], None], strict=True):
                then = [after] if after else nodes
                chain.append(RegisterEventHandler(OnProcessExit(target_action=before, on_exit=then)))
            return chain or nodes

        actions.append(RegisterEventHandler(OnProcessStart(target_action=driver, on_start=on_driver_start)))
    return actions


def generate_launch_description():
    return launch_description(PROFILE, defaults=DEFAULTS, extra_arguments=CELL_ARGUMENTS, before=_bringup)
