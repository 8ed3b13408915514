"""What the FR3 reports about itself (franka_msgs/FrankaRobotState: robot_mode, the current
errors, the last motion's errors), where a ROS install has franka_msgs (not on PyPI). The
runner reads a stop franka reports itself (a reflex, the user stop) before its broadcasters go
down, and after a recovery the errors that stopped the last motion, which say whether the
policy's own motion caused the stop. Unverified on hardware."""

from __future__ import annotations

from indgen_core.ros.base import subscribe
from indgen_core.waiting import wait_until


class RobotReport:
    def __init__(self, io, topic: str, qos):
        #: franka_msgs: (robot_mode, current errors, last motion errors)
        self.latest: tuple[int, list[str], list[str]] | None = None
        self.subscription = self._subscribe(io, topic, qos)

    def _subscribe(self, io, topic: str, qos):
        try:
            from franka_msgs.msg import FrankaRobotState
        except ImportError:
            return None
        return subscribe(io, FrankaRobotState, topic, self._on_state, qos)

    def _on_state(self, msg) -> None:
        def flags(errors) -> list[str]:
            return [name for name in errors.get_fields_and_field_types() if getattr(errors, name) is True]

        self.latest = (int(msg.robot_mode), flags(msg.current_errors), flags(msg.last_motion_errors))

    def fault(self) -> str | None:
        """A stop franka reports itself (reflex, user stop) before its broadcasters go down."""
        report = self.latest
        if report is None:
            return None
        mode, errors, _ = report
        if mode in (4, 6):  # FrankaRobotState.ROBOT_MODE_REFLEX, ROBOT_MODE_AUTOMATIC_ERROR_RECOVERY
            return f"robot mode {mode}: {', '.join(errors) or 'reflex'}"
        if mode == 5:  # ROBOT_MODE_USER_STOPPED: the robot's own e-stop
            return "the robot's user stop (hardware e-stop) is pressed"
        return None

    def last_motion_errors(self) -> list[str]:
        """franka_msgs' last_motion_errors once the recovered robot publishes its state again
        (a ROS install only; unverified on hardware); [] without franka_msgs."""
        if self.subscription is None:
            return []
        wait_until(lambda: self.latest is not None, 2.0, poll=0.02)
        return list(self.latest[2]) if self.latest else []
