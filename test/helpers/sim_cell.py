"""The runner's plain parts (arm_state, motion, reset, safety) against the stand-in's plain cell
(indgen_sim.standin: franka's controllers, reflexes and recovery around the twin's physics) in
one process, on a simulated clock: what the runner does, tick by tick, without ROS or the wall
clock, so that tests can drive faults, recoveries and any command sequence deterministically.

The cell is the stand-in every ROS test meets too; here its broadcaster samples reach the
runner's StateSource directly (at `broadcaster_hz`) and every segment the runner sends reaches
the cell's trajectory controller after `latency_s`.
"""

from __future__ import annotations

import numpy as np

from indgen_core import topics
from indgen_core.cell.robot_config import load_robot_config
from indgen_core.cell.trajectory import Trajectory
from indgen_robot.arm_state import StateSource
from indgen_robot.control import CommandGate
from indgen_robot.motion import ArmMotion
from indgen_robot.reset import ResetSequence
from indgen_robot.safety import Recovery
from indgen_sim.standin.cell import StandInCell


class SimCell:
    def __init__(self, contact_threshold: float = 40.0, broadcaster_hz: float = 1000.0, latency_s: float = 0.002,
                 config: str = "fr3_robotiq_zed"):
        self.config = load_robot_config(config)
        c = self.config
        self.cell = StandInCell(c, builtin=True, contact_thresholds=(contact_threshold,) * 7)
        self.t = self.cell._start
        self.gate = CommandGate(c)
        self.arm = StateSource("arm", c.arm.joints, c.control.arm_state_max_age_s, c.control.clock_tolerance_s,
                               clock=lambda: self.t)
        self.gripper = StateSource("gripper", [c.gripper.joint], c.control.gripper_state_max_age_s,
                                   c.control.clock_tolerance_s, clock=lambda: self.t)
        self.motion = ArmMotion(self.gate, self.arm, self._send, clock=lambda: self.t)
        self.reset = ResetSequence(c, self.motion, self, sleep=self.advance, clock=lambda: self.t)
        self.period = 1.0 / broadcaster_hz
        self.latency = latency_s
        self._next_sample = self.t
        self._queue: list[tuple[float, list]] = []
        #: every segment as the controller took it: (time, points, the measured q and dq then)
        self.sent: list[tuple[float, list, np.ndarray, np.ndarray]] = []
        self.recoveries = 0
        #: until then the arm's samples are lost on the way (the middleware held them): the
        #: broadcaster itself keeps running
        self.arm_delayed_until = -float("inf")
        self.advance(0.05)

    # -- the robot side ------------------------------------------------------------------------------
    def _send(self, points) -> None:
        self._queue.append((self.t + self.latency, points))

    def advance(self, seconds: float) -> None:
        """Run the cell for `seconds`: physics, segments arriving, broadcaster samples."""
        end = self.t + seconds
        while self.t < end - 1e-12:
            step = min(self.cell.dt, end - self.t)
            self.t += step
            for item in [i for i in self._queue if i[0] <= self.t]:
                self._queue.remove(item)
                q, dq = self.cell.physics.state()
                self.sent.append((self.t, item[1], q, dq))
                self.cell.receive_trajectory(list(self.config.arm.joints), item[1], 0.0)
            self.cell.advance_to(self.t, max_steps=1000)
            while self._next_sample <= self.t:
                self._next_sample += self.period
                state = self.cell.arm_state()
                if state is not None and self.t >= self.arm_delayed_until:
                    self.arm.update(self.config.arm.joints, state[0], state[1], self.t)
                    self.motion.hold_if_owed()  # as the runner does on every arm sample
                self.gripper.update([self.config.gripper.joint], [self.cell.knuckle()], [0.0], self.t)

    def wait(self, condition, timeout: float) -> bool:
        """indgen_core.waiting.wait_until on the simulated clock."""
        end = self.t + timeout
        while not condition():
            if self.t >= end:
                return False
            self.advance(0.02)
        return True

    def gripper_command(self, knuckle_rad: float) -> None:
        self.cell.command_gripper(knuckle_rad)

    def recover(self) -> Recovery:
        """The state restored (error recovery, hardware, broadcasters), torque control too:
        these tests play an operator who has acknowledged (the runner's own rule is tested
        with it, test_fr3_runner.py)."""
        self.recoveries += 1
        if not self.cell.driver_running:
            return Recovery(False, "no error recovery action server", reachable=False)
        found_fault = None
        for step in (self.cell.error_recovery, self.cell.activate_hardware,
                     lambda: self.cell.activate_controllers(list(self.config.recovery.controllers))):
            ok, message = step()
            if not ok:
                return Recovery(False, message)
            found_fault = message != topics.STAND_IN_NO_FAULT if found_fault is None else found_fault
        self.arm.forget()
        return Recovery(True, "recovered", found_fault=found_fault)

    def enable_torque(self) -> Recovery:
        """recover() re-enables torque control as well here (an operator who acknowledged)."""
        return Recovery(True, "torque control is on")

    # -- what tests measure --------------------------------------------------------------------------
    def q(self) -> np.ndarray:
        return self.cell.physics.state()[0]

    def pinch_height(self) -> float:
        w = self.cell.physics.world
        return float(w.d.site_xpos[w.m.site("gripper/pinch").id][2])

    def segment_acceleration(self, index: int = -1) -> np.ndarray:
        """The peak acceleration (per joint) of a sent segment as the controller runs it: a
        cubic from the measured state when it arrived to its points."""
        _, points, q, dq = self.sent[index]
        traj = Trajectory(0.0, q, dq, points)
        return np.max([np.abs(traj.sample(s)[2]) for s in np.linspace(0, traj.end_time, 80)], axis=0)
