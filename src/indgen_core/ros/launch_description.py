"""A graph profile as a launch_ros description, for `ros2 launch indgen <profile>.launch.py`.

The profile (config/graphs/*.yaml, read by indgen_core.graph) says which nodes run with which
parameters; `indgen launch` starts the same resolved processes without ros2 launch, so the
two paths cannot drift apart."""

from __future__ import annotations

from indgen_core.graph import load_profile


def launch_description(
    profile_name: str,
    defaults: dict[str, str] | None = None,
    extra_arguments: dict[str, tuple[str, str]] | None = None,
    before=None,
):
    """The launch_ros description of a profile (for `ros2 launch indgen <profile>.launch.py`).
    `defaults` replace some arguments' defaults, `extra_arguments` (name -> (default,
    description)) are declared beside the profile's, and `before(context)` returns actions
    started ahead of the graph (launch/fr3_cell.launch.py: the real cell's bring-up)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, EmitEvent, ExecuteProcess, OpaqueFunction, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events import Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue

    profile = load_profile(profile_name)
    defaults = defaults or {}
    declared = [
        DeclareLaunchArgument(name, default_value=str(defaults.get(name, arg.default)), description=arg.description)
        for name, arg in profile.spec.arguments.items()
    ]
    declared += [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in (extra_arguments or {}).items()
    ]

    def spawn(context):
        overrides = {name: LaunchConfiguration(name).perform(context) for name in profile.spec.arguments}
        actions = []
        for node in profile.resolve(overrides):
            respawn = {"respawn": True, "respawn_delay": 1.0} if node.respawn else {}
            if node.ros:
                # strings stay strings: launch_ros would otherwise read them as YAML
                parameters = {
                    k: ParameterValue(v, value_type=str) if isinstance(v, str) else v
                    for k, v in node.parameters.items()
                }
                enclave = {"ros_arguments": ["--enclave", node.enclave]} if node.enclave else {}
                action = Node(
                    package="indgen",
                    executable=node.executable,
                    name=node.name,
                    output="screen",
                    parameters=[parameters],
                    remappings=list(node.remappings.items()),
                    arguments=list(node.args),
                    **respawn,
                    **enclave,
                )
            else:
                action = ExecuteProcess(cmd=[node.executable, *node.args], name=node.name, output="screen", **respawn)
            actions.append(action)
            if node.required:
                actions.append(
                    RegisterEventHandler(OnProcessExit(target_action=action, on_exit=[EmitEvent(event=Shutdown())]))
                )
        return actions

    first = [OpaqueFunction(function=before)] if before is not None else []
    return LaunchDescription([*declared, *first, OpaqueFunction(function=spawn)])
