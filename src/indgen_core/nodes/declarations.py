"""A node's parameters and endpoints as typed declarations: a frozen dataclass whose fields
carry their default and a sentence of help, and a tuple of `Endpoint`s (the topics it
publishes and subscribes, the services and actions it serves and calls).

Why: with parameters in a dict (`self.p["..."]`) a misspelt name is a KeyError in the middle
of a campaign, and the list of a node's parameters and topics lived in its docstring, written
twice and drifting. Declared here, the node reads its parameters once
(`indgen_core.ros.base.read_parameters`), mypy checks every use, and the reference page
(`docs/reference/nodes.md`) is generated from the same declarations. The endpoints are held
to the code: with INDGEN_CHECK_ENDPOINTS=1 (the tests set it) a node that creates an endpoint
its module does not declare exits with one sentence naming it (`ros.base.check_endpoints`).
Plain Python: the documentation builds without ROS.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: the parameter types a ROS parameter can hold as IndGen uses them, in words
TYPE_WORDS = {bool: "bool", int: "int", float: "float", str: "string"}


def param(default: Any, help: str) -> Any:
    """One parameter: its default (which also fixes its ROS type) and why a person sets it."""
    return dataclasses.field(default=default, metadata={"help": " ".join(help.split())})


@dataclass(frozen=True)
class ParameterDoc:
    name: str
    type: str
    default: Any
    help: str


def parameter_docs(parameters: type) -> list[ParameterDoc]:
    """The declared parameters of a node, in declaration order, for a reference page."""
    hints = typing.get_type_hints(parameters)
    rows = []
    for f in dataclasses.fields(parameters):
        kind = hints.get(f.name, type(f.default))
        rows.append(
            ParameterDoc(
                f.name,
                TYPE_WORDS.get(kind, getattr(kind, "__name__", str(kind))),
                f.default,
                f.metadata.get("help", ""),
            )
        )
    return rows


#: endpoint kinds, as the reference page names them
PUBLISHER, SUBSCRIPTION, SERVICE, CLIENT = "publishes", "subscribes", "serves", "calls"
ACTION_SERVER, ACTION_CLIENT = "serves action", "calls action"


@dataclass(frozen=True)
class Endpoint:
    """One topic, service or action of a node. `name` may hold `<...>` parts that a parameter
    or the robot configuration fills in (`<robot.arm.state_topic>`, `/cameras/<name>/image_raw`);
    `type` is the interface as ROS names it (sensor_msgs/msg/JointState), or `*` for any."""

    kind: str
    name: str
    type: str
    help: str

    def matches(self, kind: str, name: str, type_name: str) -> bool:
        if kind != self.kind or self.type not in ("*", type_name):
            return False
        pattern = re.escape(self.name)
        pattern = re.sub(r"<[^>]*>", "[^ ]*", pattern.replace("\\<", "<").replace("\\>", ">"))
        return re.fullmatch(pattern, name) is not None


def _declares(kind: str) -> Callable[[str, str, str], Endpoint]:
    def declare(name: str, type: str, help: str) -> Endpoint:
        return Endpoint(kind, name, type, " ".join(help.split()))

    declare.__name__ = declare.__qualname__ = kind.replace(" ", "_")
    return declare


#: one constructor per kind: `publishes(topic, "std_msgs/msg/String", "why it exists")`
publishes, subscribes = _declares(PUBLISHER), _declares(SUBSCRIPTION)
serves, calls = _declares(SERVICE), _declares(CLIENT)
serves_action, calls_action = _declares(ACTION_SERVER), _declares(ACTION_CLIENT)


def undeclared(declared: tuple[Endpoint, ...], created: set[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The created endpoints (kind, name, type) no declaration covers."""
    return sorted(c for c in created if not any(d.matches(*c) for d in declared))


def defaults(parameters: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(parameters)}
