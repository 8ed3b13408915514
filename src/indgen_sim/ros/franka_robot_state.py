"""franka_robot_state_broadcaster's full robot state as the stand-in publishes it: a
FrankaRobotState of franka_msgs' layout (indgen_msgs' copy), at franka's 1 kHz.

franka publishes the whole message every controller cycle from a real-time C++ thread
(franka_robot_state_broadcaster.cpp, jazzy: update() fills a buffer, a SCHED_FIFO thread
publishes it; kUpdateRate 1000). The Python stand-in cannot build and serialise 1000 such
messages a second beside its physics (0.1 ms to serialise, far more to build), and what the
runner pays for is their size and nesting on its side. So the message is serialised once per
change of what it reports (robot mode, errors; the joint positions at most every 50 ms) and
each publish only writes the current stamp into its header (the first field, right after the
4-byte CDR encapsulation header: sec int32, nanosec uint32, little endian)."""

from __future__ import annotations

import struct

import numpy as np
from rclpy.serialization import serialize_message

from indgen_msgs.msg import FrankaErrors, FrankaRobotState

#: libfranka's robot modes (franka_msgs FrankaRobotState.ROBOT_MODE_*)
MODE_IDLE, MODE_MOVE, MODE_REFLEX = 1, 2, 4
#: the positions the serialised message carries are refreshed this often (s)
REFRESH_S = 0.05
_STAMP = struct.Struct("<iI")


def robot_state(joints, q, dq, tau, mode: int, current: list[str], last: list[str]) -> FrankaRobotState:
    msg = FrankaRobotState(robot_mode=mode)
    for state in (
        msg.measured_joint_state,
        msg.desired_joint_state,
        msg.measured_joint_motor_state,
        msg.tau_ext_hat_filtered,
    ):
        state.name = list(joints)
        state.position, state.velocity, state.effort = list(map(float, q)), list(map(float, dq)), list(map(float, tau))
    msg.current_errors, msg.last_motion_errors = _errors(current), _errors(last)
    return msg


def _errors(names: list[str]) -> FrankaErrors:
    errors = FrankaErrors()
    for name in names:
        if name in errors.get_fields_and_field_types():
            setattr(errors, name, True)
    return errors


class RobotStateBytes:
    """The serialised message, rebuilt when what it says changes, its stamp patched per publish."""

    def __init__(self):
        self._key: tuple | None = None
        self._built = -np.inf
        self._data = bytearray()

    def message(self, now: float, stamp, joints, state, mode: int, current: list[str], last: list[str]) -> bytes:
        key = (mode, tuple(current), tuple(last))
        if key != self._key or now - self._built >= REFRESH_S:
            q, dq, tau = state
            self._data = bytearray(serialize_message(robot_state(joints, q, dq, tau, mode, current, last)))
            self._key, self._built = key, now
        _STAMP.pack_into(self._data, 4, stamp.sec, stamp.nanosec)
        return bytes(self._data)
