"""What the FR3 reports about itself: franka_robot_state_broadcaster's full state
(FrankaRobotState: robot_mode, the current errors, the last motion's errors), read where its
type can be imported: franka_msgs on a ROS install, or indgen_msgs' copy of its layout, which
only the hardware stand-in publishes (franka_msgs is not on PyPI; the two types never match).

franka publishes it at 1 kHz whatever its settings, about 25 nested messages each (0.4 ms to
deserialise in Python here). The runner does not take every one: a LatestReader keeps the
newest and the runner takes it at each tick's checks and after a recovery, so the stream costs
nothing between takes (docs/real-robot.md, "franka's full robot state"). Unverified on
hardware: libfranka's flags after a reflex (franka_hardware's read() returns ERROR in the cycle
libfranka raises, so the REFLEX mode may never be published; `last_motion_errors` once the
recovered broadcaster publishes again is what the stop rule relies on).
"""

from __future__ import annotations

from indgen_core.ros.latest import LatestReader
from indgen_core.waiting import wait_until
from indgen_robot.safety import Stop, robot_mode_stop


def robot_state_type():
    """franka_msgs' FrankaRobotState where a ROS install has it, else indgen_msgs' copy."""
    try:
        from franka_msgs.msg import FrankaRobotState
    except ImportError:
        from indgen_msgs.msg import FrankaRobotState
    return FrankaRobotState


def flags(errors) -> list[str]:
    """The names of the error flags that are set in a franka_msgs/Errors (or its copy)."""
    return [name for name in errors.get_fields_and_field_types() if getattr(errors, name) is True]


class RobotReport:
    def __init__(self, context, topic: str, name: str):
        self.reader = LatestReader(context, robot_state_type(), topic, name)
        #: (robot_mode, current errors, last motion errors) of the newest sample taken
        self.latest: tuple[int, list[str], list[str]] | None = None

    def _take(self) -> tuple[int, list[str], list[str]] | None:
        msg = self.reader.take()
        if msg is not None:
            self.latest = (int(msg.robot_mode), flags(msg.current_errors), flags(msg.last_motion_errors))
        return self.latest

    def fault(self) -> Stop | None:
        """A stop franka reports itself (a reflex, the user stop), by the stop rule."""
        report = self._take()
        return robot_mode_stop(report[0], report[1]) if report is not None else None

    def forget(self) -> None:
        """What it reported before a recovery is about the stop that was."""
        self.reader.take()
        self.latest = None

    def last_motion_errors(self, wait_s: float = 2.0) -> list[str]:
        """The errors that stopped the last motion, once the recovered broadcaster publishes
        again (within wait_s); [] when nothing comes."""
        wait_until(lambda: self._take() is not None, wait_s, poll=0.02)
        return list(self.latest[2]) if self.latest else []

    def close(self) -> None:
        self.reader.close()
