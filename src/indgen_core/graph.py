"""One description of each node graph, used by both launch paths.

A profile (config/graphs/<name>.yaml) lists the processes of a graph: ROS nodes with their
parameters and remappings, and plain processes such as the policy server, with arguments the
user can override as `name:=value`. `ros2 launch indgen <name>.launch.py` turns it into
launch_ros actions (launch_description below); `indgen launch <name>` starts the very same
commands as child processes (launcher.py). Both read this module, so they cannot drift apart.

Substitution: "$(arg)" anywhere in a string is replaced by the argument's value; a value that
is exactly one "$(arg)" takes the argument's YAML type (true -> bool, 8000 -> int). A node
with `if: $(arg)` runs only when the argument is true. An `args` entry written as a mapping
(`{--checkpoint: $(checkpoint)}`) is passed only when its value is not empty.

A profile may `extends: OTHER`: it takes OTHER's nodes and arguments and changes only what it
names (a new default for an argument, a description), so two graphs that differ in their
defaults (stack_axis and scale_axis) are described once.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from indgen_core import paths
from indgen_core.configfile import ConfigError, load_model, read_yaml_mapping

_SUB = re.compile(r"\$\((\w+)\)")


class ArgumentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default: Any = ""
    description: str = ""


class NodeTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    executable: str
    ros: bool = True
    required: bool = False
    condition: str | None = Field(None, alias="if")
    parameters: dict[str, Any] = {}
    remappings: dict[str, str] = {}
    args: list[str | dict[str, str]] = []


class ProfileSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    arguments: dict[str, ArgumentSpec] = {}
    nodes: list[NodeTemplate] = Field(min_length=1)


@dataclass(frozen=True)
class NodeSpec:
    """One process of a resolved graph."""

    name: str
    executable: str
    ros: bool = True
    required: bool = False
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """Command-line arguments after the executable (ROS: --ros-args with name, -p and -r)."""
        out = list(self.args)
        if self.ros:
            out += ["--ros-args", "-r", f"__node:={self.name}"]
            for key, value in self.parameters.items():
                out += ["-p", f"{key}:={_param_text(value)}"]
            for src, dst in self.remappings.items():
                out += ["-r", f"{src}:={dst}"]
        return out


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # a string that YAML would read as another type is quoted, so the parameter stays a string
        return value if isinstance(yaml.safe_load(value or "''"), str) and value else f"'{value}'"
    return str(value)


@dataclass
class Profile:
    spec: ProfileSpec
    path: Path

    @property
    def name(self) -> str:
        return self.spec.name

    def defaults(self) -> dict[str, Any]:
        return {k: a.default for k, a in self.spec.arguments.items()}

    def values(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        values = self.defaults()
        for key, value in (overrides or {}).items():
            if key not in values:
                raise ConfigError(self.path, f"unknown argument '{key}'; known: {', '.join(sorted(values))}")
            values[key] = yaml.safe_load(value) if isinstance(value, str) and value != "" else value
        return values

    def resolve(self, overrides: dict[str, Any] | None = None) -> list[NodeSpec]:
        values = self.values(overrides)
        nodes = []
        for template in self.spec.nodes:
            if template.condition is not None and not _truthy(_substitute(template.condition, values)):
                continue
            args: list[str] = []
            for item in template.args:
                if isinstance(item, dict):
                    for flag, value in item.items():
                        text = str(_substitute(value, values))
                        if text != "":
                            args += [flag, text]
                else:
                    args.append(str(_substitute(item, values)))
            nodes.append(NodeSpec(
                name=template.name, executable=template.executable, ros=template.ros, required=template.required,
                parameters={k: _substitute(v, values) for k, v in template.parameters.items()},
                remappings={k: str(_substitute(v, values)) for k, v in template.remappings.items()},
                args=tuple(args)))
        return nodes


def _substitute(value: Any, values: dict[str, Any]) -> Any:
    if not isinstance(value, str):
        return value
    whole = _SUB.fullmatch(value)
    if whole:
        return values[whole.group(1)]
    return _SUB.sub(lambda m: str(values[m.group(1)]), value)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def profile_path(name: str) -> Path:
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    path = paths.config_dir() / "graphs" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (paths.config_dir() / "graphs").glob("*.yaml"))
        raise ConfigError(path, f"no graph profile '{name}'; known: {', '.join(known)}")
    return path


def _profile_data(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    data = read_yaml_mapping(path)
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    base_path = profile_path(str(base_name))
    if base_path in seen:
        raise ConfigError(path, f"extends '{base_name}' in a cycle", field="extends")
    base = _profile_data(base_path, (*seen, path))
    arguments = {k: dict(v or {}) for k, v in (base.get("arguments") or {}).items()}
    for key, value in (data.pop("arguments", None) or {}).items():
        arguments[key] = {**arguments.get(key, {}), **(value if isinstance(value, dict) else {"default": value})}
    return {**base, **data, "arguments": arguments}


def load_profile(name: str) -> Profile:
    path = profile_path(name)
    data = _profile_data(path)
    spec = load_model(path, ProfileSpec, data=data)
    # every substitution must name a declared argument
    text = yaml.safe_dump(data)
    for arg in sorted(set(_SUB.findall(text))):
        if arg not in spec.arguments:
            raise ConfigError(path, f"$({arg}) is used but not declared under 'arguments'", field="nodes")
    return Profile(spec, path)


def executable_path(executable: str) -> str:
    """A node executable in this installation: next to the interpreter (pip, venv), in
    lib/indgen (colcon), or on PATH."""
    here = Path(sys.executable).parent / executable
    if here.is_file():
        return str(here)
    for prefix in (Path(sys.prefix), *(Path(p) for p in _ament_prefixes())):
        candidate = prefix / "lib" / "indgen" / executable
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(executable)
    if found:
        return found
    raise ConfigError("graph", f"executable '{executable}' is not installed (run `make setup` or colcon build)")


def _ament_prefixes() -> list[str]:
    import os

    return [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]


def launch_description(profile_name: str):
    """The launch_ros description of a profile (for `ros2 launch indgen <profile>.launch.py`)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, EmitEvent, ExecuteProcess, OpaqueFunction, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events import Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    profile = load_profile(profile_name)
    declared = [DeclareLaunchArgument(name, default_value=str(arg.default), description=arg.description)
                for name, arg in profile.spec.arguments.items()]

    def spawn(context):
        overrides = {name: LaunchConfiguration(name).perform(context) for name in profile.spec.arguments}
        actions = []
        for node in profile.resolve(overrides):
            if node.ros:
                action = Node(package="indgen", executable=node.executable, name=node.name, output="screen",
                              parameters=[node.parameters], remappings=list(node.remappings.items()),
                              arguments=list(node.args))
            else:
                action = ExecuteProcess(cmd=[node.executable, *node.args], name=node.name, output="screen")
            actions.append(action)
            if node.required:
                actions.append(RegisterEventHandler(OnProcessExit(target_action=action,
                                                                  on_exit=[EmitEvent(event=Shutdown())])))
        return actions

    return LaunchDescription([*declared, OpaqueFunction(function=spawn)])
