"""The architecture's rules, checked on the source (docs/architecture.md):

- one ROS layer per package: only modules under `<package>/ros/` import rclpy, launch or a
  generated interface (indgen_msgs, *_msgs, *_srvs, ...); `indgen doctor` probes them on
  purpose, lazily, to say whether ROS works;
- the dependency direction: indgen_core imports neither indgen_sim nor indgen_robot, and
  those two never import each other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGES = ("indgen_core", "indgen_sim", "indgen_robot")
ROS_MODULE = re.compile(r"^(rclpy|rosidl_\w+|rpyutils|rosbag2_py|indgen_msgs|builtin_interfaces|\w+_msgs|\w+_srvs|"
                        r"\w+_interfaces|launch|launch_ros|ament_index_python|message_filters|tf2_ros)(\.|$)")
#: (module, imported root) allowed outside a ros/ layer, each with its reason
ALLOWED = {
    ("indgen_core/doctor.py", "rclpy"): "`indgen doctor` checks, lazily, that rclpy imports",
    ("indgen_core/doctor.py", "indgen_msgs"): "`indgen doctor` checks, lazily, that the interfaces import",
}


def _modules():
    for package in PACKAGES:
        yield from sorted((SRC / package).rglob("*.py"))


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == \
                "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            yield node.lineno, str(node.args[0].value)


def _in_ros_layer(path: Path) -> bool:
    return "ros" in path.relative_to(SRC).parts[1:-1]


def test_only_the_ros_layers_import_ros():
    found = []
    for path in _modules():
        if _in_ros_layer(path):
            continue
        rel = path.relative_to(SRC).as_posix()
        for line, name in _imports(path):
            if ROS_MODULE.match(name) and (rel, name.split(".")[0]) not in ALLOWED:
                found.append(f"{rel}:{line} imports {name}")
    assert not found, "ROS outside a ros/ layer:\n" + "\n".join(found)


def test_the_ros_layers_hold_only_ros_code():
    """A plain helper in a ros/ layer belongs beside the code it serves."""
    plain = []
    for path in _modules():
        if not _in_ros_layer(path) or path.name == "__init__.py":
            continue
        if not any(ROS_MODULE.match(name) for _, name in _imports(path)):
            plain.append(path.relative_to(SRC).as_posix())
    assert not plain, f"modules in a ros/ layer that import no ROS: {plain}"


@pytest.mark.parametrize(("package", "forbidden"), [
    ("indgen_core", ("indgen_sim", "indgen_robot")),
    ("indgen_sim", ("indgen_robot",)),
    ("indgen_robot", ("indgen_sim",)),
])
def test_the_dependency_direction(package, forbidden):
    found = [f"{path.relative_to(SRC)}:{line} imports {name}" for path in sorted((SRC / package).rglob("*.py"))
             for line, name in _imports(path) if name.split(".")[0] in forbidden]
    assert not found, "\n".join(found)


def test_doctor_is_the_only_allowed_exception_and_still_needs_it():
    """An allow-list entry that is no longer used is removed, not kept as a loophole."""
    used = {(path.relative_to(SRC).as_posix(), name.split(".")[0]) for path in _modules()
            for _, name in _imports(path) if not _in_ros_layer(path) and ROS_MODULE.match(name)}
    assert set(ALLOWED) <= used
