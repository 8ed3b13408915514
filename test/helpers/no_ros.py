"""Run `indgen` in a child where ROS cannot be imported: rclpy, the generated interfaces and
every rosidl package raise ImportError, as on a laptop with only `pip install indgen`."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = ("rclpy", "rosidl_runtime_py", "rosidl_parser", "rpyutils", "indgen_msgs", "builtin_interfaces",
           "std_msgs", "sensor_msgs", "rosgraph_msgs", "geometry_msgs", "trajectory_msgs", "control_msgs",
           "action_msgs", "unique_identifier_msgs", "std_srvs", "mcap_ros2")

_BLOCKER = f"""
import os, sys
_BLOCKED = {BLOCKED!r} + tuple(m for m in os.environ.get("INDGEN_TEST_ALSO_MISSING", "").split(",") if m)
class _NoRos:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:  # as Python says of a module that is not installed
            raise ModuleNotFoundError(f"No module named '{{name}}' (not installed here)", name=name)
        return None
sys.meta_path.insert(0, _NoRos())
"""

_PRELUDE = _BLOCKER + f"""
from indgen_core.cli import main
code = main(sys.argv[1:])
blocked = sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r})
assert not blocked, blocked
sys.exit(code)
"""


def indgen_without_ros(*args: str, env=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PRELUDE, *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def python_without_ros(script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a Python script in a child where no ROS package can be imported."""
    return subprocess.run([sys.executable, "-c", _BLOCKER + script], capture_output=True, text=True, timeout=timeout)
