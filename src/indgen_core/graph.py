"""One description of each node graph, used by both launch paths.

A profile (config/graphs/<name>.yaml) lists the processes of a graph: ROS nodes with their
parameters and remappings, and plain processes such as the policy server, with arguments the
user can override as `name:=value`. `ros2 launch indgen <name>.launch.py` turns it into
launch_ros actions (launch_description below); `indgen launch <name>` starts the very same
commands as child processes (launcher.py). Both read this module, so they cannot drift apart.

Arguments keep the type of their default: a bool takes true/false, an int an integer, a float
a number, a string any text, which is never re-read as YAML (`override_reason:="reviewed: ok"`
stays that sentence). A value that cannot be used is one sentence naming the argument. An
argument with a `pattern` (a regular expression the whole value must match) may be spliced
into a larger string such as world_options' YAML text without changing its structure.

Substitution: "$(arg)" anywhere in a string is replaced by the argument's value; a value that
is exactly one "$(arg)" keeps the argument's type. A node with `if: $(arg)` runs only when the
argument is true (`$(not name)` inverts; conditions may join terms with `and` / `or` and compare
with `==` / `!=`: `if: $(not sim) and $(robot) == mock`); an argument may take another
default where a condition holds (`when:`). An `args` entry written as a mapping
(`{--checkpoint: $(checkpoint)}`) is passed as `--checkpoint=VALUE`, and only when its value
is not empty; positional values go after a "--" item, so no value can become an option of
the command it is passed to. A node
with `respawn: true` is restarted when it dies (both launch paths), instead of ending the
launch. A profile argument `enclaves` (an SROS2 enclave prefix such as /indgen) gives every ROS
node `--enclave <prefix>/<node name>` (docs/security.md).

A profile may `refuse:` combinations of arguments, each `{if: CONDITION, message: SENTENCE}`:
resolving it then stops with the sentence (both launch paths).

A profile may `extends: OTHER`: it takes OTHER's nodes and arguments and changes only what it
names (a new default for an argument, a description), so two graphs that differ in their
defaults (stack_axis and scale_axis) are described once.
"""

from __future__ import annotations

import math
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
from indgen_core.errors import IndGenError

_SUB = re.compile(r"\$\((not )?(\w+)\)")


class ConditionalDefault(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    #: a condition on the arguments' values ($(name), $(not name), and / or, == / !=)
    condition: str = Field(alias="if")
    #: the argument's value where the condition holds, used as written (not converted to the default's type)
    default: bool | int | float | str


class ArgumentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: the value when none is given; its type (true/false, integer, number, text) is the type a given value
    #: must have
    default: bool | int | float | str = ""
    #: what the argument does, shown by `indgen launch --list`, ros2 launch and the graph profiles page
    description: str = ""
    #: a regular expression the whole of a given value must match (text arguments; the default is not checked)
    pattern: str | None = None
    #: another default where a condition on the other arguments holds (the first that does),
    #: when the user gives no value: `campaign` on the real robot is a campaign of world fr3
    when: list[ConditionalDefault] = []


class NodeTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    #: the node's name (ROS: `__node:=NAME`, enclave `<prefix>/NAME`) and the label of its output lines
    name: str
    #: the program, by name: ros2 launch runs a ROS node from the indgen package and a plain process from PATH;
    #: indgen launch looks next to the Python interpreter, in lib/indgen, then on PATH
    executable: str
    #: true: a ROS node, given its name, parameters, remappings and enclave as `--ros-args`; false: a plain
    #: process, given args only
    ros: bool = True
    #: true: the node's exit ends the whole launch (indgen launch: with its exit status)
    required: bool = False
    #: true (or a condition that holds): restart the node 1 s after it dies; indgen launch gives up after 3 deaths
    #: within 10 s of starting and never restarts exit status 2 (a refused configuration)
    respawn: bool | str = False
    #: the node runs only where this condition on the arguments holds; null: always
    condition: str | None = Field(default=None, alias="if")
    #: ROS parameters, name -> value ($(arg) substituted; strings stay strings)
    parameters: dict[str, Any] = {}
    #: ROS name remappings, from -> to ($(arg) substituted)
    remappings: dict[str, str] = {}
    #: command-line arguments after the executable ($(arg) substituted); a mapping `{--flag: $(arg)}` gives
    #: `--flag=VALUE`, left out when the value is empty
    args: list[str | dict[str, str]] = []


class Refusal(BaseModel):
    """A combination of arguments the graph refuses, in one sentence (`robot:=real` with the
    oracle, which needs the simulator's poses)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    #: a condition on the arguments; where it holds, resolving the profile stops with message
    condition: str = Field(alias="if")
    #: the sentence resolving stops with ($(arg) substituted)
    message: str


class ProfileSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: the profile's name, shown by `indgen launch --list` (`indgen launch NAME` loads the file by its name)
    name: str
    #: one line on what the graph runs (`indgen launch --list`, the graph profiles page)
    description: str = ""
    #: name -> argument, set as name:=value; every $(name) in the profile must be declared here
    arguments: dict[str, ArgumentSpec] = {}
    #: argument combinations the graph refuses, each {if: CONDITION, message: SENTENCE}
    refuse: list[Refusal] = []
    #: the graph's processes: ROS nodes and plain commands
    nodes: list[NodeTemplate] = Field(min_length=1)


@dataclass(frozen=True)
class NodeSpec:
    """One process of a resolved graph."""

    name: str
    executable: str
    ros: bool = True
    required: bool = False
    respawn: bool = False
    enclave: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """Command-line arguments after the executable (ROS: --ros-args with name, -p and -r)."""
        out = list(self.args)
        if self.ros:
            out += ["--ros-args", "-r", f"__node:={self.name}"]
            if self.enclave:
                out += ["--enclave", self.enclave]
            for key, value in self.parameters.items():
                out += ["-p", f"{key}:={_param_text(value)}"]
            for src, dst in self.remappings.items():
                out += ["-r", f"{src}:={dst}"]
        return out


def _param_text(value: Any) -> str:
    """A `-p name:=value` value that rcl reads back as exactly `value`: strings are always
    single-quoted YAML (quotes doubled), so no string is read as another type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value) if isinstance(value, float) else str(value)


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def convert_argument(name: str, spec: ArgumentSpec, value: Any, where: Path | str) -> Any:
    """`value` (a launch argument, usually a string) as the type of the argument's default."""
    default = spec.default
    text = value if isinstance(value, str) else None
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            if text is not None and text.strip().lower() in _TRUE + _FALSE:
                return text.strip().lower() in _TRUE
            raise ValueError("true or false")
        if isinstance(default, int):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if text is not None and re.fullmatch(r"\s*[-+]?\d+\s*", text):
                return int(text)
            raise ValueError("an integer")
        if isinstance(default, float):
            number = (
                float(value)
                if isinstance(value, int | float) and not isinstance(value, bool)
                else (
                    float(text)
                    if text is not None and re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", text)
                    else None
                )
            )
            if number is None or not math.isfinite(number):
                raise ValueError("a number")
            return number
        if text is None:
            raise ValueError("text")
    except ValueError as exc:
        shown = str(value) if len(str(value)) <= 80 else f"{str(value)[:80]}..."
        raise ConfigError(where, f"argument '{name}' must be {exc}, got {shown!r}") from None
    if spec.pattern is not None and not re.fullmatch(spec.pattern, text):
        raise ConfigError(where, f"argument '{name}' must match {spec.pattern}, got {text[:80]!r}")
    if "\x00" in text:
        raise ConfigError(where, f"argument '{name}' must not contain a NUL character")
    return text


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
        overrides = dict(overrides or {})
        for key, value in overrides.items():
            if key not in values:
                raise ConfigError(self.path, f"unknown argument '{key}'; known: {', '.join(sorted(values))}")
            values[key] = convert_argument(key, self.spec.arguments[key], value, self.path)
        for key, arg in self.spec.arguments.items():
            if key in overrides:
                continue
            for alternative in arg.when:
                if _truthy(_substitute(alternative.condition, values)):
                    values[key] = alternative.default
                    break
        return values

    def resolve(self, overrides: dict[str, Any] | None = None) -> list[NodeSpec]:
        values = self.values(overrides)
        for refusal in self.spec.refuse:
            if _truthy(_substitute(refusal.condition, values)):
                raise IndGenError(str(_substitute(refusal.message, values)))
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
                            args.append(f"{flag}={text}")
                else:
                    args.append(str(_substitute(item, values)))
            nodes.append(
                NodeSpec(
                    name=template.name,
                    executable=template.executable,
                    ros=template.ros,
                    required=template.required,
                    respawn=_truthy(_substitute(template.respawn, values)),
                    enclave=f"{values['enclaves']}/{template.name}" if template.ros and values.get("enclaves") else "",
                    parameters={k: _substitute(v, values) for k, v in template.parameters.items()},
                    remappings={k: str(_substitute(v, values)) for k, v in template.remappings.items()},
                    args=tuple(args),
                )
            )
        _refuse_a_local_server_for_a_blind_campaign(values, nodes)
        return nodes


def _refuse_a_local_server_for_a_blind_campaign(values: dict[str, Any], nodes: list[NodeSpec]) -> None:
    """A policy server the graph starts prints its policy's name in the launch terminal and on
    its command line (`ps`): in a blind campaign that is the mapping on a screen at the cell. Its
    servers run elsewhere (docs/statistics.md, blind campaigns). The campaign is known here by
    its file; one resumed by `campaign_id` alone is not checked."""
    if not any(n.args[:1] == ("serve-policy",) for n in nodes):
        return
    from indgen_core.campaign.source import names_a_blind_campaign

    if names_a_blind_campaign(str(values.get("campaign", ""))):
        raise IndGenError(
            "a blind campaign's policies are served away from the cell (a local policy server names its "
            "policy in this terminal and on its command line): start them elsewhere, give each its address "
            "in the campaign's endpoints, and launch with start_policy_server:=false"
        )


def _substitute(value: Any, values: dict[str, Any]) -> Any:
    if not isinstance(value, str):
        return value
    whole = _SUB.fullmatch(value)
    if whole:
        got = values[whole.group(2)]
        return not _truthy(got) if whole.group(1) else got
    return _SUB.sub(lambda m: str(not _truthy(values[m.group(2)]) if m.group(1) else values[m.group(2)]), value)


def _truthy(value: Any) -> bool:
    """A condition: a value, or (after substitution) terms joined by ' and ' / ' or ', each
    a value or 'a == b' / 'a != b' (`if: $(not sim) and $(robot) == mock`)."""
    if not isinstance(value, str):
        return bool(value)
    return any(all(_term(t) for t in group.split(" and ")) for group in value.split(" or "))


def _term(text: str) -> bool:
    for op in ("!=", "=="):
        if op in text:
            a, b = (x.strip() for x in text.split(op, 1))
            return (a == b) == (op == "==")
    return text.strip().lower() in ("1", "true", "yes", "on")


def profile_path(name: str) -> Path:
    return paths.named_config("graphs", name, "graph profile")


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
    for arg in sorted({name for _, name in _SUB.findall(text)}):
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
