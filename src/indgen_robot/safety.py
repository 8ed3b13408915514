"""Why a real-robot episode stops, and what its end means for the results.

Two kinds of stop must never be confused (docs/real-robot.md, "Honest outcomes"):
- a **system** fault: the driver or a controller went down, a sensor went stale, the
  e-stop, a lost policy server. It says nothing about the policy: the trial is aborted and
  run again (at most a configured number of times, then the campaign stops).
- a **policy stop**: the robot's own safety stopped a motion the policy commanded (a contact
  reflex: the arm hit or pushed into something). That is the policy's doing: the episode
  ends, the person labels it (failure by default, the reason shown), and it counts. Running
  it again would let a policy retry its collisions until one run got lucky.

On the wire both look alike: franka's controllers and broadcasters go inactive and the arm's
state topic stops (controller_manager read()). What tells them apart, best first:
1. the robot's own report: franka_msgs/FrankaRobotState's error flags (a ROS install; the
   pip path cannot import franka_msgs, and franka_hardware logs libfranka's exception text
   through a logger that is not a node's, so it never reaches /rosout): a reflex of the
   policy's motion (robot_mode REFLEX with a motion error, or those errors in
   last_motion_errors after the recovery) is the policy's, any other error the system's;
2. the driver itself gone (the trajectory controller's topic lost its subscriber): system;
3. an arm that was held still, neither commanded to move nor moving: system (the policy
   moved nothing);
4. the arm's state comes back on its own within STATE_BACK_S, before any recovery: a reflex
   deactivates the broadcaster and it stays silent until the robot is recovered, so a state
   that resumes by itself was delayed on its way (the middleware, a busy host), and the robot
   never stopped the motion: system (`state_came_back`);
5. the driver does not answer when the runner tries, at once, to restore the robot's state
   (franka's error recovery action is gone with its process; the controller's subscription
   may outlive a killed process by the DDS lease time, so it alone does not tell): system;
   and a robot that the recovery finds in no fault (its hardware component was still active)
   never stopped the motion: system too (`no_reflex`);
6. otherwise the stop came during the policy's motion with no cause to read. The arm's
   motion does not tell: franka's collision detection stops the arm within milliseconds of
   an impact, before its velocity has dropped by a fifth (measured against the stand-in at
   1 kHz), and a tracking lag of that size is normal in free motion. So the episode ends and
   the person, who saw it, labels it: failure by default (most such stops are contacts), or
   `redo`, which runs the trial again, when it was a fault.

`TickChecks` is what the runner asks before every tick; everything here is plain Python over
plain values, so tests drive it without ROS.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from indgen_core.cell.trajectory import Trajectory
from indgen_core.waiting import wait_until
from indgen_robot.arm_state import Sample, StateSource


class StopKind(enum.Enum):
    SYSTEM = "system"  # aborted, run again, never scored
    POLICY = "policy"  # the robot stopped the policy's motion: ended, labelled, counted
    UNEXPLAINED = "unexplained"  # stopped during the policy's motion, no cause to read: the person says
    OPERATOR = "operator"  # the person ended the episode: labelled
    STEP_LIMIT = "step_limit"  # ran to the step limit: labelled


class StopCause(str, enum.Enum):
    """What stopped the robot, finer than StopKind: a result's details keep it as "stop" (a
    string in the store and the bag: the enum is a str)."""

    REFLEX = "reflex"  # a joint or Cartesian reflex of libfranka
    USER_STOP = "user_stop"  # the hardware e-stop (user stop) is pressed
    FAULT = "fault"  # the robot is in an error state or recovering from one
    DRIVER_DOWN = "driver_down"  # the driver's state stopped arriving
    UNEXPLAINED = "unexplained"  # stopped during the policy's motion, no cause to read: the person says
    STATE_DELAYED = "state_delayed"  # the arm's states paused and came back by themselves: no stop
    NO_REFLEX = "no_reflex"  # recovered and found in no fault: the state stopped on its way, not the arm


@dataclass(frozen=True)
class Stop:
    kind: StopKind
    reason: str
    details: dict = field(default_factory=dict)
    #: the stamp of the arm's last sample before its state stopped (a stale-state stop): how
    #: long the state was away is measured from here, not from whenever the stop is looked at
    state_stopped_at: float | None = None

    @property
    def aborted(self) -> bool:
        return self.kind is StopKind.SYSTEM


#: franka_msgs/Errors fields a policy's motion can cause (libfranka's reflexes); any other
#: error is the system's (communication_constraints_violation, power_limit_violation...)
MOTION_ERRORS = {
    "joint_reflex": "a contact (joint torque beyond the collision thresholds)",
    "cartesian_reflex": "a contact (Cartesian force beyond the collision thresholds)",
    "self_collision_avoidance_violation": "the arm nearly hit itself",
    "joint_position_limits_violation": "a joint reached its position limit",
    "cartesian_position_limits_violation": "the hand left the Cartesian limits",
    "joint_velocity_violation": "a joint exceeded its velocity limit",
}


def classify_robot_errors(errors: Sequence[str]) -> Stop:
    """The stop, from the error flags franka reports (FrankaRobotState.last_motion_errors)."""
    errors = [e for e in errors if e]
    motion = [e for e in errors if e in MOTION_ERRORS]
    if motion and len(motion) == len(errors):
        return Stop(
            StopKind.POLICY,
            f"the robot stopped the motion: {MOTION_ERRORS[motion[0]]} ({motion[0]})",
            {"stop": StopCause.REFLEX, "errors": motion},
        )
    return Stop(StopKind.SYSTEM, f"robot fault: {', '.join(errors) or 'unknown error'}", {"errors": errors})


#: franka_msgs/FrankaRobotState.ROBOT_MODE_* (franka_ros2 v3.4.0, FrankaRobotState.msg)
ROBOT_MODE_REFLEX, ROBOT_MODE_USER_STOPPED, ROBOT_MODE_AUTOMATIC_ERROR_RECOVERY = 4, 5, 6


def robot_mode_stop(mode: int, current_errors: Sequence[str]) -> Stop | None:
    """What franka's own robot state says of a stop, or None while it reports none. A reflex
    follows the stop rule like any stop (rule 1): the policy's when its errors are motion
    errors, the system's otherwise; the user stop and an error recovery under way are the
    system's. (franka_hardware's read() returns ERROR in the cycle libfranka raises, so a REFLEX
    sample may never be published; the broadcaster's silence then leads to the same rule.)"""
    if mode == ROBOT_MODE_REFLEX:
        if current_errors:
            return classify_robot_errors(current_errors)
        return Stop(
            StopKind.UNEXPLAINED,
            "the robot reports a reflex without naming it: label it failure if the arm hit something, or redo",
            {"stop": StopCause.REFLEX},
        )
    if mode == ROBOT_MODE_USER_STOPPED:
        return Stop(
            StopKind.SYSTEM, "the robot's user stop (hardware e-stop) is pressed", {"stop": StopCause.USER_STOP}
        )
    if mode == ROBOT_MODE_AUTOMATIC_ERROR_RECOVERY:
        return Stop(StopKind.SYSTEM, "the robot is recovering from an error by itself", {"stop": StopCause.FAULT})
    return None


def driver_down() -> Stop:
    """Rule 2's stop."""
    return Stop(
        StopKind.SYSTEM,
        "the arm's driver is down (its trajectory controller's topic lost its subscriber); the "
        "trial runs again once it is back",
        {"stop": StopCause.DRIVER_DOWN},
    )


#: samples and segments within this long before the state stopped are looked at
LOOK_BACK_S = 0.25


def classify_fault(
    history: Sequence[Sample],
    segments: Sequence[tuple[Trajectory, bool]],
    silent_for: float,
    driver_alive: bool = True,
    still_speed: float = 0.05,
) -> Stop:
    """The arm's state stopped coming (franka deactivated its broadcaster, or its driver is
    gone) and the robot reported no cause: rules 2, 3 and 6 of the module docstring (4 and 5
    come after it: `state_came_back`, `after_recovery`).

    `history`: the broadcaster's last samples; `segments`: what the runner sent, each with
    whether it was a commanded motion."""
    if not driver_alive:
        return driver_down()
    history = list(history)
    last = history[-1].stamp if history else 0.0
    commanded = any(moving for seg, moving in segments if seg.end_time >= last - LOOK_BACK_S)
    arm_moving = any(float(np.max(np.abs(s.dq))) >= still_speed for s in history if s.stamp >= last - LOOK_BACK_S)
    if not (commanded or arm_moving):
        return Stop(
            StopKind.SYSTEM,
            f"the arm's joint states stopped ({silent_for:.2f} s old) while it was held "
            "still: a robot or driver fault (network, user stop, driver); the trial runs again",
            {"stop": StopCause.FAULT},
            state_stopped_at=last or None,
        )
    return Stop(
        StopKind.UNEXPLAINED,
        "the robot stopped during the policy's motion and reported no cause IndGen can "
        "read (most often a contact reflex; it may be a network fault): label it failure if the arm hit "
        "something, or redo to run the trial again if it was a fault",
        {"stop": StopCause.UNEXPLAINED},
        state_stopped_at=last or None,
    )


@dataclass(frozen=True)
class Recovery:
    """What an attempt to bring a faulted robot back gave."""

    ok: bool
    message: str
    #: False when the robot's driver did not answer at all (its process is down)
    reachable: bool = True
    #: whether the robot was in a fault when the recovery began (None: cannot tell)
    found_fault: bool | None = None


#: how long the runner waits, holding, for the arm's state to come back on its own after an
#: unexplained stop, before it recovers the robot (Fast DDS held a publish for about 0.3 s
#: while a participant came or went: docs/real-robot.md)
STATE_BACK_S = 1.0


def state_came_back(stop: Stop, silent_for: float) -> Stop:
    """An unexplained stop whose arm state came back by itself (rule 4): the broadcaster was
    never deactivated, so no reflex stopped the motion; the trial runs again. `silent_for`:
    the gap between the last sample before the stop and the first after it, by their stamps."""
    if stop.kind is not StopKind.UNEXPLAINED:
        return stop
    return Stop(
        StopKind.SYSTEM,
        f"the arm's joint states paused for {silent_for:.3f} s and came back without a recovery: "
        "franka's broadcaster was never stopped, so the robot did not stop the motion (a delay in "
        "the middleware or a busy host); the trial runs again",
        {"stop": StopCause.STATE_DELAYED},
    )


def after_recovery(stop: Stop, recovery: Recovery, robot_errors: Sequence[str] = ()) -> Stop:
    """An unexplained stop once the runner tried to recover the robot right after it: a driver
    that did not answer was the fault (rule 5); where the robot, recovered, reports the errors
    that stopped it (franka_msgs' last_motion_errors), they decide (rule 1)."""
    if stop.kind is not StopKind.UNEXPLAINED:
        return stop
    if not recovery.reachable:
        return Stop(
            StopKind.SYSTEM,
            f"the robot's driver does not answer ({recovery.message}): a driver fault; the "
            "trial runs again once it is back",
            {"stop": StopCause.DRIVER_DOWN},
        )
    if recovery.ok and recovery.found_fault is False:
        return Stop(
            StopKind.SYSTEM,
            "the robot was in no fault when it was recovered (its hardware was still active), so no reflex stopped "
            "the motion: the arm's state stopped on its way (the network, the driver, a busy host); the trial runs "
            "again",
            {"stop": StopCause.NO_REFLEX},
        )
    if recovery.ok and robot_errors:
        return classify_robot_errors(robot_errors)
    return stop


def settle_unexplained(
    stop: Stop,
    arm: StateSource,
    recover: Callable[[], Recovery],
    robot_errors: Callable[[], list[str]],
    driver_alive: Callable[[], bool] = lambda: True,
    wait: Callable[[Callable[[], object], float], bool] = wait_until,
) -> Stop:
    """Rules 4 and 5 for a stop `classify_fault` left unexplained: the arm held, wait up to
    STATE_BACK_S for its state to come back by itself (rule 2 if the driver's subscription
    vanishes meanwhile); else restore the robot's state at once (`recover`: franka's error
    recovery, the hardware and its broadcasters; the arm controller stays off until the
    operator acknowledges, so nothing moves), and a driver that does not answer, a robot found
    in no fault, or a recovered robot that reports the errors that stopped it, says whose
    doing it was."""
    if stop.kind is not StopKind.UNEXPLAINED:
        return stop
    before = stop.state_stopped_at
    if wait(lambda: arm.fresh() is not None or not driver_alive(), STATE_BACK_S):
        if not driver_alive():
            return driver_down()
        back = arm.latest()
        return state_came_back(stop, back.stamp - before if back is not None and before else float("nan"))
    recovery = recover()
    return after_recovery(stop, recovery, robot_errors() if recovery.ok else [])


@dataclass
class TickInputs:
    """What the runner knows before a tick, as plain values."""

    estop: bool
    cancel_requested: bool
    policy_lost: str | None
    arm: Sample | None  # the broadcaster's latest sample that is fresh, None when stale
    arm_age: float
    gripper_fresh: bool
    gripper_age: float
    robot_fault: Stop | None  # what franka reports of itself (robot_mode, errors) where franka_msgs is read
    end_requested: str


class TickChecks:
    """The per-tick checks, in order of precedence; a Stop when the episode must end now."""

    def __init__(self, config):
        self.config = config
        self.lower = np.array(config.arm.lower)
        self.upper = np.array(config.arm.upper)

    def __call__(self, now: TickInputs, fault: Callable[[float], Stop]) -> Stop | None:
        c = self.config.control
        if now.estop:
            return Stop(StopKind.SYSTEM, "operator e-stop")
        if now.cancel_requested:
            return Stop(StopKind.SYSTEM, "cancelled by the progression manager")
        if now.policy_lost:
            return Stop(StopKind.SYSTEM, now.policy_lost)
        if now.robot_fault is not None:
            return now.robot_fault
        if now.arm is None:
            return fault(now.arm_age)
        if not now.gripper_fresh:
            return Stop(
                StopKind.SYSTEM,
                f"the gripper's joint states are {_age(now.gripper_age)} (limit "
                f"{c.gripper_state_max_age_s:g} s): the gripper driver is down",
            )
        q = now.arm.q
        outside = [self.config.arm.joints[i] for i in range(len(q)) if not self.lower[i] <= q[i] <= self.upper[i]]
        if outside:
            return Stop(StopKind.SYSTEM, f"the arm left its joint limits ({', '.join(outside)})")
        if now.end_requested:
            return Stop(StopKind.OPERATOR, now.end_requested)
        return None


def _age(age: float) -> str:
    return "missing" if not np.isfinite(age) else f"{age:.2f} s old"
