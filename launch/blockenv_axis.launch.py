"""ros2 launch indgen blockenv_axis.launch.py [name:=value ...]

The BlockEnv campaign graph. Which nodes run with which parameters is described once, in
config/graphs/blockenv_axis.yaml, and read by indgen_core.graph, which `indgen launch
blockenv_axis` uses too.
"""

from indgen_core.graph import load_profile
from indgen_core.ros.launch_description import launch_description

PROFILE = "blockenv_axis"


def describe(**overrides):
    """The resolved processes of this launch file, for tests and `--show`."""
    return load_profile(PROFILE).resolve(overrides)


def generate_launch_description():
    return launch_description(PROFILE)
