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


# -- no import circle ----------------------------------------------------------------------------
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level_imports(path: Path, known: set[str]) -> set[str]:
    """What a module imports when it is imported, type-checking-only imports included (a circle
    through them is still one in the design): statements at its top level and inside top-level
    if/try blocks; an import inside a function runs when the function does, and is left out."""
    found: set[str] = set()

    def visit(statements) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)  # a submodule
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(path.read_text(), str(path)).body)
    return {name for name in found if name in known} - {_module_name(path)}


def test_no_import_circle():
    """No module reaches itself through module-level imports (Tarjan's strongly connected
    components over the import graph of src/)."""
    paths = {_module_name(p): p for p in _modules()}
    graph = {name: _module_level_imports(path, set(paths)) for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def connect(v: str) -> None:  # the recursion is as deep as the longest import chain
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in graph:
        if name not in index:
            connect(name)
    assert circles == [], f"modules that import each other: {circles}"
    # the graph has the edges it should (a check over an empty graph would pass as well)
    assert "indgen_core.store.records" in graph["indgen_core.store.campaigns"]


def test_the_robocasa_worker_imports_nothing_of_indgens_own():
    """worker/ runs in RoboCasa's environment (robosuite 1.5.2, numpy 1), where IndGen is not
    installed: it may import the standard library, numpy, RoboCasa's stack and its own
    folder's modules (by their plain names), nothing else of IndGen's."""
    folder = SRC / "indgen_sim" / "robocasa" / "worker"
    siblings = {p.stem for p in folder.glob("*.py")}
    found = [
        f"{path.name}:{line} imports {module}"
        for path in sorted(folder.glob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] in PACKAGES and not module.startswith("indgen_sim.robocasa.worker")
    ]
    assert found == [], found
    assert {"frames", "kitchen", "rs_compat"} <= siblings
