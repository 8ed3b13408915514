"""Whether the arm's controller is on, and the rule that it comes back on only when the
operator says so.

After a reflex, a fault or a lost driver, franka's controllers are off and the arm holds
itself. Bringing the robot back has two stages (ros/recovery.py): restoring its state (franka's
error recovery, the hardware component, the broadcasters), which moves nothing and lets the
runner read what stopped it; and re-enabling torque control (the arm controller, which claims
the effort interface). A person may be at the arm after a stop, freeing it or looking at what
it hit, so the second stage waits for the operator's acknowledgement (the console's `a`,
/indgen/acknowledge_stop): until then the runner prepares no trial and says why. Plain Python
over the recovery port; the runner wires it to ROS.
"""

from __future__ import annotations

import threading
from typing import Protocol

from indgen_robot.safety import Recovery

AWAITING = (
    "the robot stopped and its torque control is off: check that nobody is touching the arm and nothing is "
    "caught, then acknowledge in the console (a) to re-enable it"
)


class RecoveryPort(Protocol):
    def restore_state(self) -> Recovery: ...

    def enable_torque(self) -> Recovery: ...


class TorqueControl:
    def __init__(self, recovery: RecoveryPort):
        self.recovery = recovery
        self._lock = threading.Lock()
        #: why torque control is off ("" while it is on, as the bring-up leaves it)
        self.off = ""
        self.acknowledged = False

    @property
    def awaiting_acknowledgement(self) -> bool:
        return bool(self.off) and not self.acknowledged

    def restore_state(self) -> Recovery:
        """The first stage: the robot's state back, torque control off until acknowledged (a
        robot the recovery found in no fault never switched its controllers off)."""
        recovery = self.recovery.restore_state()
        with self._lock:
            if recovery.reachable and recovery.found_fault is not False and not self.off:
                self.off, self.acknowledged = "the robot stopped", False
        return recovery

    def acknowledge(self) -> tuple[bool, str]:
        """The operator's word that the arm is clear; (whether it was needed, one sentence)."""
        with self._lock:
            if not self.off:
                return False, "torque control is on: nothing to acknowledge"
            self.acknowledged = True
            return True, "acknowledged: torque control is re-enabled before the next trial's reset"

    def enable_torque(self) -> Recovery:
        """The second stage, only once acknowledged."""
        with self._lock:
            if not self.off:
                return Recovery(True, "torque control is on")
            if not self.acknowledged:
                return Recovery(False, AWAITING)
        recovery = self.recovery.enable_torque()
        if recovery.ok:
            with self._lock:
                self.off, self.acknowledged = "", False
        return recovery

    def recover(self) -> Recovery:
        """Both stages (a reset that finds the robot in a fault)."""
        restored = self.restore_state()
        return restored if not restored.ok else self.enable_torque()
