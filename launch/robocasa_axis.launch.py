"""ros2 launch indgen robocasa_axis.launch.py [name:=value ...]

A RoboCasa axis graph. Which nodes run with which parameters is described once, in
config/graphs/robocasa_axis.yaml, and read by indgen_core.graph, which `indgen launch
robocasa_axis` uses too.
"""

from indgen_core.graph import load_profile
from indgen_core.ros.launch_description import launch_description

PROFILE = "robocasa_axis"


def describe(**overrides):
    """The resolved processes of this launch file, for tests and `--show`."""
    return load_profile(PROFILE).resolve(overrides)


def generate_launch_description():
    return launch_description(PROFILE)
