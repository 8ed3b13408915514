"""The runner's safety logic as plain code (arm_state, motion, reset, safety, episode_loop)
against the stand-in's plain cell (franka's controllers, reflexes and recovery as the real
stack behaves, around the twin's physics) on a simulated clock: no ROS, no wall clock.

What these prove: every segment starts at the measured arm, so recovering from a fault and
then holding or resetting never jumps to a stale point; the reference never leads a blocked
arm by more than the stated bound (pushing into the table); the stop rule tells the
system's faults from stops during the policy's motion; a policy that is still warming up
does not abort an episode, and a cancel ends one at once; and whatever sequence of faults,
recoveries and commands comes, nothing sent is non-finite, outside the limits or over the
acceleration limits."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.sim_cell import SimCell
from indgen_core.cell.robot_config import load_robot_config
from indgen_core.cell.trajectory import Trajectory
from indgen_core.episode import PolicyUnavailable
from indgen_core.specs.droid import GRIPPER_CLOSED_RAD, RAD_PER_S_AT_ONE
from indgen_robot.arm_state import ClockCheck, Sample, StateSource
from indgen_robot.episode_loop import EpisodeLoop, Refusal
from indgen_robot.motion import NoFreshState
from indgen_robot.reset import SETTLE_S, ResetSequence, at_pose, at_rest
from indgen_robot.safety import (
    StopKind,
    TickChecks,
    TickInputs,
    classify_fault,
    classify_robot_errors,
    settle_unexplained,
)

pytest.importorskip("mujoco")
CONFIG = load_robot_config("fr3_robotiq_zed")
ACC_LIMIT = np.array(CONFIG.arm.acceleration_limits)
LOWER = np.array(CONFIG.arm.lower) + CONFIG.arm.position_margin
UPPER = np.array(CONFIG.arm.upper) - CONFIG.arm.position_margin
DOWN = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # joints 2 and 4 forward: the hand goes down


def _drive(sc: SimCell, velocity, ticks: int) -> None:
    for _ in range(ticks):
        with contextlib.suppress(NoFreshState):  # a faulted arm: nothing is sent
            sc.motion.stream(np.asarray(velocity, float))
        sc.advance(1 / 15)


#: Nm: collision thresholds a push into the table reaches. DROID's 40 Nm is out of the runner's
#: reach by design (the torque bound: the controller pushes a blocked joint with under 34 Nm), so
#: a contact reflex needs a robot set stiffer
CONTACT_REFLEX_NM = 10.0


def _fault_while_moving(sc: SimCell) -> np.ndarray:
    """Stream towards the table until a contact reflex stops the arm; where the arm stood then."""
    sc.cell.contact_thresholds = np.full(7, CONTACT_REFLEX_NM)
    _drive(sc, 0.3 * DOWN, 1)
    for _ in range(200):
        if sc.arm.fresh() is None:
            break
        _drive(sc, 0.3 * DOWN, 1)
    assert sc.cell.error == "joint_reflex", sc.cell.summary()
    return sc.q()


# -- every segment from the measured arm ------------------------------------------------------------
@pytest.mark.parametrize("then", ["reset", "hold"])
def test_recover_then_first_segment_starts_at_the_measured_pose_within_the_acceleration_limits(then):
    """The old runner planned holds and resets from its own model of the controller's
    reference. After a reflex that model is where the arm was meant to go, not where it
    stopped: the first segment after re-activation was a 0.4 s jump back to it. Now a reflex
    at speed into the table, recovery, then a hold or a reset: the first segment sent starts
    where the arm is, and its spline stays under the acceleration limits."""
    sc = SimCell()
    stopped = _fault_while_moving(sc)
    assert sc.motion.hold() is False  # a stale arm: nothing is planned from it, nothing sent
    sent = len(sc.sent)
    sc.advance(0.5)
    assert len(sc.sent) == sent
    recovery = sc.recover()
    assert recovery.ok, recovery.message
    sc.advance(0.2)
    if then == "reset":
        ok, message = sc.reset.run()
        assert ok, message
        assert np.max(np.abs(sc.q() - np.array(CONFIG.reset.pose))) <= CONFIG.reset.tolerance
    else:
        assert sc.motion.hold()
        sc.advance(1.0)
    first = sc.sent[sent]
    start = Trajectory(0.0, first[2], first[3], first[1]).sample(0.0)[0]
    assert np.max(np.abs(start - stopped)) < 0.01, "the first segment after recovery starts where the arm stopped"
    peak = max(float(np.max(sc.segment_acceleration(i) / ACC_LIMIT)) for i in range(sent, len(sc.sent)))
    measured = float(np.max(sc.cell.status.peak_acceleration_after_activation / ACC_LIMIT))
    print(f"recover then {then}: planned peak acceleration {peak:.2f} of the limit, measured after re-activation "
          f"{measured:.2f}")  # pytest -s
    assert peak < 0.8 and measured < 1.0
    assert sc.cell.error is None and sc.cell.status.reflexes == 1


def _speeds_then_reset(speeds: list[float]):
    """A ResetSequence over an arm at the reset pose whose joint speed follows `speeds`, one
    sample per 20 ms sleep, then stays at the last value (a simulated clock)."""
    clock = {"t": 0.0}
    arm = StateSource("arm", CONFIG.arm.joints, 0.15, 0.05, clock=lambda: clock["t"])
    queue = list(speeds)

    def sleep(seconds: float) -> None:
        clock["t"] += seconds
        speed = queue.pop(0) if len(queue) > 1 else queue[0]
        arm.update(CONFIG.arm.joints, CONFIG.reset.pose, [speed, 0, 0, 0, 0, 0, 0], clock["t"])

    sleep(0.0)
    motion = type("Motion", (), {"arm": arm})()
    return ResetSequence(CONFIG, motion, None, sleep=sleep, clock=lambda: clock["t"]), clock


def test_the_arm_counts_as_settled_only_after_staying_at_rest_for_settle_s():
    """The runner that failed at the cell: a reset verified by one quiet sample at the end of
    the segment (the controller still settling the arm), the arm moving again at 0.08 rad/s
    when the episode started. At the pose, one quiet sample between moving ones does not
    count; the arm must stay under at_rest_speed for reset.settle_s without a break."""
    quiet, moving = 0.01, 0.08
    reset, clock = _speeds_then_reset([moving, quiet, moving, moving] + [quiet])
    ok, message = reset.settled()
    assert ok, message
    assert clock["t"] >= 4 * 0.02 + CONFIG.reset.settle_s - 1e-9, "the dip at 20 ms did not count as settled"

    reset, clock = _speeds_then_reset([moving])  # it never comes to rest: the trial does not start
    ok, message = reset.settled()
    assert not ok and message == "the arm still moves at 0.08 rad/s", message
    assert clock["t"] >= SETTLE_S


def test_after_a_reset_the_arm_stays_at_the_pose_and_a_bump_is_waited_out_before_an_episode():
    """On the stand-in cell: after the reset, every sample for the next second is at the pose
    and at rest; a small bump (a person at the scene) is waited out while holding, with
    nothing sent; an arm pushed off the pose keeps the episode from starting."""
    sc = SimCell()
    _drive(sc, 0.6 * DOWN, 12)
    ok, message = sc.reset.run()
    assert ok, message
    for _ in range(50):
        sc.advance(0.02)
        ok, message = at_pose(CONFIG, sc.arm.fresh())
        assert ok, f"{message} after the reset"
    w = sc.cell.physics.world
    with sc.cell.lock:
        w.d.qvel[w.arm_dof[1]] += 0.2  # a person bumps the arm: the controller brings it back
    sc.advance(0.01)
    assert not at_rest(sc.arm.fresh(), CONFIG.reset.at_rest_speed)[0]
    sent, started = len(sc.sent), sc.t
    ok, message = sc.reset.settled()
    assert ok, message
    assert len(sc.sent) == sent and sc.t - started >= CONFIG.reset.settle_s
    _drive(sc, 0.5 * DOWN, 6)  # pushed well off the pose: waited for, then refused in one sentence
    ok, message = sc.reset.settled()
    assert not ok and "rad from the reset pose" in message, message


def test_reflex_free_push_into_the_table_keeps_the_lead_within_the_bound():
    """The policy drives the hand down into the table and keeps pushing at full speed. Each
    segment starts at the blocked arm, so the controller's reference leads it by at most
    max_lead: the PD pushes with at most p x max_lead, no runaway torque (the old stiff PD
    tracked a reference that integrated the commands regardless of the arm)."""
    sc = SimCell()
    _drive(sc, 0.05 * DOWN, 330)  # slowly down to the table
    assert sc.pinch_height() < 0.03, sc.pinch_height()
    sc.cell.reset_peaks()
    _drive(sc, DOWN, 60)  # then push as hard as DROID's velocity allows, for 4 s
    summary = sc.cell.summary()
    lead, torque = np.array(summary["peak_lead"]), np.array(summary["peak_pd_torque"])
    bound = np.array(CONFIG.arm.max_lead)
    budget = CONFIG.torque_budget()
    print(f"bound: max_lead {bound.tolist()} rad, worst-case torque {CONFIG.worst_torques().round(2).tolist()} Nm "
          f"(at most {CONFIG.arm.max_torque_fraction:.0%} of the torque limits); pushing into the table: peak lead "
          f"{lead.round(4).tolist()} rad, peak PD torque {torque.round(2).tolist()} Nm, peak external torque "
          f"{summary['peak_external_torque']} Nm")  # pytest -s
    assert np.all(lead <= bound) and np.all(torque <= budget)
    assert summary["reflexes"] == 0 and sc.cell.error is None
    assert np.all(np.abs(summary["peak_external_torque"]) < 40)  # under DROID's collision thresholds


SHOULDER = np.array([1.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # joints 1-4 at full speed, clear of the table
WRIST = np.array([0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 1.0])
TOP = SHOULDER + WRIST


def _full_speed(sc: SimCell, joints: np.ndarray, ticks: int) -> tuple[np.ndarray, np.ndarray]:
    """Stream DROID's full velocity on `joints` for `ticks`; the peak commanded and measured speeds."""
    commanded, measured = np.zeros(7), np.zeros(7)
    for _ in range(ticks):
        with contextlib.suppress(NoFreshState):
            commanded = np.maximum(commanded, np.abs(sc.motion.stream(joints)))
        sc.advance(1 / 15)
        measured = np.maximum(measured, np.abs(sc.cell.physics.state()[1]))
    return commanded, measured


def _blocked_at_top_speed(sc: SimCell, joints: np.ndarray, at: float = 0.6, seconds: float = 2.5):
    """Stream DROID's full velocity on `joints` towards stiff walls `at` rad away, which each
    joint meets at its top speed, and keep pushing for `seconds`; the peak commanded and
    measured speeds before the wall."""
    q0 = sc.q()
    wall = q0 + joints * at
    with sc.cell.lock:
        sc.cell.physics.walls(np.where(joints < 0, wall, q0 - 3.0), np.where(joints > 0, wall, q0 + 3.0))
    sc.cell.reset_peaks()
    return _full_speed(sc, joints, int(seconds * 15))


@pytest.mark.parametrize("joints", [SHOULDER, WRIST], ids=["joints 1-4", "joints 5-7"])
def test_a_joint_blocked_by_a_wall_at_top_speed_is_pushed_within_the_torque_bound(joints):
    """The worst case of the torque bound: every joint runs into a stiff wall at the runner's
    top speed and the policy keeps pushing, with the controller's path tolerance off (the runner
    alone bounds the lead) and no collision reflex to end it (thresholds out of reach). The
    controller's command (P, D, feed-forward, integral and its output clamp, as ros2_controllers
    computes it) peaks within the stated bound on every joint, and below DROID's 40 Nm on
    joints 1-4; the PID before the clamp too (the gains alone keep the bound)."""
    sc = SimCell(contact_threshold=1e6)
    sc.cell.path_tolerance(False)
    commanded, top = _blocked_at_top_speed(sc, joints)
    s = sc.cell.summary()
    command, unclamped, lead = np.array(s["peak_command"]), np.array(s["peak_unclamped"]), np.array(s["peak_lead"])
    bound, caps = CONFIG.worst_torques(), CONFIG.speed_caps()
    print(f"commanded {commanded.round(3).tolist()} rad/s (caps {caps.round(3).tolist()}), the arm at "
          f"{top.round(3).tolist()} rad/s into the walls: peak command "
          f"{command.round(2).tolist()} Nm, before the clamp {unclamped.round(2).tolist()} Nm, bound "
          f"{bound.round(2).tolist()} Nm; peak lead {lead.round(4).tolist()} rad, max_lead {CONFIG.arm.max_lead}; "
          f"peak external torque {s['peak_external_torque']} Nm")  # pytest -s
    moved = joints != 0
    assert np.allclose(commanded[moved], caps[moved]), "the reference ran at the caps"
    assert np.all(top[moved] >= 0.5 * caps[moved]), "the joints met the walls at speed"
    assert np.all(command <= bound + 1e-6) and np.all(unclamped <= bound + 1e-6)
    assert np.all(command[:4] < 40.0) and np.all(command <= CONFIG.torque_budget())
    assert np.all(lead <= np.array(CONFIG.arm.max_lead) + 1e-6)
    assert s["path_tolerance_holds"] == 0 and s["reflexes"] == 0, s


@pytest.mark.parametrize("joints", [SHOULDER * [1, 0, 0, 0, 0, 0, 0], WRIST], ids=["joint 1", "joints 5-7"])
def test_with_no_new_command_the_arm_moves_at_most_max_lead(joints):
    """A runner that stalls or dies mid-motion at top speed: the controller carries out what it
    has (the last segment, which ends at rest), and every joint comes to rest within max_lead of
    where it was when the commands stopped (the ROS version, with the runner's process stopped
    and killed: test_fr3_runner.py)."""
    sc = SimCell()
    commanded, _ = _full_speed(sc, joints, 20)
    moving, at = np.abs(sc.cell.physics.state()[1]), sc.q()
    sc.advance(1.5)  # nothing more is sent
    went = np.abs(sc.q() - at)
    print(f"commanded {commanded.round(3).tolist()}, the arm at {moving.round(3).tolist()} rad/s, then no command: "
          f"each joint went {went.round(4).tolist()} rad (bound max_lead {CONFIG.arm.max_lead})")  # pytest -s
    moved = joints != 0
    assert np.allclose(commanded[moved], CONFIG.speed_caps()[moved]), "the reference at the caps"
    assert np.all(went <= np.array(CONFIG.arm.max_lead))
    assert np.all(np.abs(sc.cell.physics.state()[1]) < 1e-2)


def _obstacle_before_the_reset(sc: SimCell) -> np.ndarray:
    """The arm away from the reset pose with a stiff wall between it and the pose on joint 2."""
    _drive(sc, 0.5 * DOWN, 12)
    q = sc.q()
    lower, upper = np.array(CONFIG.arm.lower), np.array(CONFIG.arm.upper)
    wall = lower.copy()
    wall[1] = q[1] - 0.05  # joint 2 goes back (down) towards the reset pose: it meets the wall
    with sc.cell.lock:
        sc.cell.physics.walls(wall, upper)
    return q


def test_a_reset_into_a_stiff_obstacle_without_path_tolerance_stops_within_the_bounds_and_holds():
    """A reset whose way is blocked (a stiff obstacle), with the controller's path tolerance off:
    the reset is streamed like an episode, so the reference leads the blocked joint by at most
    max_lead and the command stays within the torque bound; its progress stops, and the runner
    holds at the measured pose and says why, instead of pushing until a timeout."""
    sc = SimCell(contact_threshold=1e6)
    sc.cell.path_tolerance(False)
    _obstacle_before_the_reset(sc)
    sc.cell.reset_peaks()
    started = sc.t
    ok, message = sc.reset.run()
    sc.advance(0.01)  # the last segment reaches the controller
    s = sc.cell.summary()
    lead, command = np.array(s["peak_lead"]), np.array(s["peak_command"])
    print(f"reset into an obstacle: {message!r} after {sc.t - started:.1f} s; peak lead {lead.round(4).tolist()} rad, "
          f"peak command {command.round(2).tolist()} Nm (bound {CONFIG.worst_torques().round(2).tolist()})")
    assert not ok and "the reset is blocked: fr3_joint2" in message and "holds where it is" in message, message
    assert np.all(lead <= np.array(CONFIG.arm.max_lead) + 1e-6) and np.all(command <= CONFIG.worst_torques() + 1e-6)
    last = sc.sent[-1]
    assert len(last[1]) == 1 and not np.any(last[1][0].velocities), "the last segment is a hold"
    # a hold stops from the measured velocity (the arm still creeps into the obstacle's give)
    assert np.max(np.abs(last[1][0].positions - last[2])) < 0.02, "held at the measured pose"
    sent = len(sc.sent)
    sc.advance(1.0)
    assert len(sc.sent) == sent and sc.t - started < CONFIG.reset.stall_s + 6.0


def test_a_state_gap_during_a_reset_ends_with_a_hold_at_the_measured_pose():
    """The arm's state pauses for 0.2 s mid-reset (a host stall, no fault): as soon as it is
    back the runner holds at the measured pose, then goes on with the reset, which arrives. A
    gap that lasts (a fault) abandons the reset, and the hold it was owed goes out as soon as
    the state returns, so a controller that ran its last segment meanwhile stops pushing."""
    sc = SimCell()
    _drive(sc, 0.6 * DOWN, 12)
    original = sc.reset._stream_to_pose
    gap = {}

    def with_a_gap(progress, should_stop):
        sc.arm_delayed_until = sc.t + 0.5  # the reset streams for 0.5 s, then the state pauses
        gap["from"] = sc.t + 0.5
        return original(progress, should_stop)

    def pause_at_half_a_second(seconds):
        if "from" in gap and "until" not in gap and sc.t >= gap["from"]:
            sc.arm_delayed_until = sc.t + 0.2
            gap["until"] = sc.t + 0.2
        elif "from" in gap and "until" not in gap:
            sc.arm_delayed_until = -np.inf
        sc.advance(seconds)

    sc.reset._stream_to_pose = with_a_gap
    sc.reset.sleep = pause_at_half_a_second
    ok, message = sc.reset.run()
    assert ok, message
    back = [i for i, sent in enumerate(sc.sent) if sent[0] >= gap["until"]]
    first = sc.sent[back[0]]
    print(f"state gap {sc.reset.paused_s:.3f} s: first segment {first[0] - gap['until']:.3f} s after it: "
          f"{'a hold' if len(first[1]) == 1 else 'a stream'}")  # pytest -s
    assert len(first[1]) == 1 and not np.any(first[1][0].velocities), "the first segment after the gap is a hold"
    assert first[0] - gap["until"] <= 1 / 15 + 0.02, "within one tick of the state's return"
    assert abs(sc.reset.paused_s - 0.2) < 0.03

    stuck = SimCell()
    _drive(stuck, 0.6 * DOWN, 12)
    when = {}
    streaming = stuck.reset._stream_to_pose

    def then_a_fault(progress, should_stop):  # 0.2 s into the streaming the state stops for 2 s
        when["from"] = stuck.t + 0.2
        return streaming(progress, should_stop)

    def stale_for_good(seconds):
        if "from" in when and stuck.t >= when["from"] and "gap" not in when:
            stuck.arm_delayed_until = when["gap"] = stuck.t + 2.0
        stuck.advance(seconds)

    stuck.reset._stream_to_pose = then_a_fault
    stuck.reset.sleep = stale_for_good
    ok, message = stuck.reset.run()
    assert not ok and "reset abandoned" in message and stuck.motion.hold_owed, message
    sent = len(stuck.sent)
    stuck.advance(when["gap"] - stuck.t + 0.05)  # the state returns
    assert len(stuck.sent) == sent + 1 and len(stuck.sent[-1][1]) == 1 and not stuck.motion.hold_owed
    assert stuck.sent[-1][0] - when["gap"] <= 0.02, "the owed hold went out as the state came back"


# -- the stop rule ----------------------------------------------------------------------------------
def test_a_reflex_during_the_policys_motion_is_not_a_system_fault():
    sc = SimCell()
    _fault_while_moving(sc)
    stop = classify_fault(sc.arm.history(), sc.motion.segments(), sc.arm.age())
    assert stop.kind is StopKind.UNEXPLAINED and "label it failure" in stop.reason, stop


def test_a_fault_while_the_arm_is_held_still_is_the_systems():
    sc = SimCell()
    _drive(sc, np.zeros(7), 10)
    sc.cell.inject("communication_constraints_violation")
    sc.advance(0.2)
    assert sc.arm.fresh() is None
    stop = classify_fault(sc.arm.history(), sc.motion.segments(), sc.arm.age())
    assert stop.kind is StopKind.SYSTEM and "held still" in stop.reason
    crashed = classify_fault(sc.arm.history(), sc.motion.segments(), sc.arm.age(), driver_alive=False)
    assert crashed.kind is StopKind.SYSTEM and "driver is down" in crashed.reason


def test_a_state_that_comes_back_by_itself_was_delayed_not_stopped_and_a_silent_one_is_recovered():
    """Rule 4: on the real stack a reflex deactivates the broadcaster until the robot is
    recovered; the arm's state that resumes by itself was only held on its way (Fast DDS held
    the stand-in's publish about 0.3 s while a participant came or went): the robot never stopped
    the policy's motion, the trial runs again, and nothing is recovered."""
    sc = SimCell()
    _drive(sc, 0.3 * DOWN, 5)  # the policy moves the arm
    sc.arm_delayed_until = sc.t + 0.4
    _drive(sc, 0.3 * DOWN, 3)  # the runner's ticks find the state stale
    assert sc.arm.fresh() is None and sc.cell.error is None
    stop = classify_fault(sc.arm.history(), sc.motion.segments(), sc.arm.age())
    assert stop.kind is StopKind.UNEXPLAINED  # during motion, no cause to read: yet
    settled = settle_unexplained(stop, sc.arm, sc.recover, lambda: [], wait=sc.wait)
    assert settled.kind is StopKind.SYSTEM and settled.aborted, settled
    assert "came back without a recovery" in settled.reason and sc.recoveries == 0
    paused = float(settled.reason.split("paused for ")[1].split(" s")[0])
    assert 0.35 <= paused <= 0.45, settled.reason  # the gap itself (0.4 s), read at the stop, not after
    assert settled.details == {"stop": "state_delayed"}
    # a reflex: the broadcaster stays silent, the robot is recovered, the person labels it
    reflexed = SimCell()
    _fault_while_moving(reflexed)
    stop = classify_fault(reflexed.arm.history(), reflexed.motion.segments(), reflexed.arm.age())
    settled = settle_unexplained(stop, reflexed.arm, reflexed.recover, lambda: [], wait=reflexed.wait)
    assert settled.kind is StopKind.UNEXPLAINED and reflexed.recoveries == 1, settled
    # the driver's subscription vanishes while the runner waits: its process is gone, nothing to
    # recover (a recovery that waited for its services could find a restarted driver and lose that)
    gone = SimCell()
    _fault_while_moving(gone)
    stop = classify_fault(gone.arm.history(), gone.motion.segments(), gone.arm.age())
    settled = settle_unexplained(stop, gone.arm, gone.recover, lambda: [], driver_alive=lambda: False, wait=gone.wait)
    assert settled.aborted and settled.details == {"stop": "driver_down"} and gone.recoveries == 0, settled
    # where the recovered robot reports what stopped it (franka_msgs), that decides
    again = SimCell()
    _fault_while_moving(again)
    stop = classify_fault(again.arm.history(), again.motion.segments(), again.arm.age())
    settled = settle_unexplained(stop, again.arm, again.recover, lambda: ["joint_reflex"], wait=again.wait)
    assert settled.kind is StopKind.POLICY and again.recoveries == 1, settled


def test_a_stop_the_recovery_finds_no_fault_for_is_the_systems():
    """The arm's state stops for longer than STATE_BACK_S mid-motion, but franka never faulted
    (the middleware held the state): the restore finds no error to recover from, so no reflex
    stopped the motion, and the trial runs again instead of going to the person."""
    sc = SimCell()
    _drive(sc, 0.3 * DOWN, 5)
    sc.arm_delayed_until = sc.t + 2.0  # longer than STATE_BACK_S: recovery is tried
    _drive(sc, 0.3 * DOWN, 3)
    stop = classify_fault(sc.arm.history(), sc.motion.segments(), sc.arm.age())
    assert stop.kind is StopKind.UNEXPLAINED
    settled = settle_unexplained(stop, sc.arm, sc.recover, lambda: [], wait=sc.wait)
    assert settled.kind is StopKind.SYSTEM and settled.details == {"stop": "no_reflex"}, settled
    assert sc.recoveries == 1 and "in no fault" in settled.reason


def test_a_reflex_franka_reports_follows_the_stop_rule():
    """robot_mode REFLEX is not a system fault by itself (the first reading aborted it): a
    reflex of the policy's motion is the policy's, scored and labelled; a reflex naming a system
    error, the user stop and an error recovery under way are the system's."""
    from indgen_robot.safety import robot_mode_stop

    assert robot_mode_stop(4, ["joint_reflex"]).kind is StopKind.POLICY
    assert robot_mode_stop(4, ["cartesian_reflex"]).details["stop"] == "reflex"
    assert robot_mode_stop(4, ["communication_constraints_violation"]).kind is StopKind.SYSTEM
    assert robot_mode_stop(4, []).kind is StopKind.UNEXPLAINED  # no flag to read: the person says
    assert robot_mode_stop(5, []).kind is StopKind.SYSTEM and "user stop" in robot_mode_stop(5, []).reason
    assert robot_mode_stop(6, []).kind is StopKind.SYSTEM
    assert robot_mode_stop(2, []) is None and robot_mode_stop(1, []) is None
    checks = TickChecks(CONFIG)
    stop = checks(_inputs(robot_fault=robot_mode_stop(4, ["joint_reflex"])), lambda age: None)
    assert stop.kind is StopKind.POLICY  # the tick check passes franka's verdict through


def test_torque_control_comes_back_only_when_the_operator_acknowledges():
    """After a stop the robot's state is restored at once (nothing moves) and its torque control
    only once the operator has acknowledged; a restore that finds no fault leaves it on."""
    from indgen_robot.safety import Recovery
    from indgen_robot.torque_control import AWAITING, TorqueControl

    class Recovering:
        def __init__(self, found_fault=True):
            self.enabled, self.found_fault = 0, found_fault

        def restore_state(self):
            return Recovery(True, "restored", found_fault=self.found_fault)

        def enable_torque(self):
            self.enabled += 1
            return Recovery(True, "enabled")

    port = Recovering()
    torque = TorqueControl(port)
    assert torque.enable_torque().ok and port.enabled == 0  # on: nothing to do
    assert torque.acknowledge()[0] is False  # nothing to acknowledge
    assert torque.restore_state().ok and torque.awaiting_acknowledgement
    refused = torque.enable_torque()
    assert not refused.ok and refused.message == AWAITING and port.enabled == 0
    assert torque.acknowledge()[0] and not torque.awaiting_acknowledgement
    assert torque.enable_torque().ok and port.enabled == 1 and not torque.off
    assert torque.restore_state().ok and not torque.recover().ok  # a second stop: acknowledged again
    no_fault = TorqueControl(Recovering(found_fault=False))
    assert no_fault.restore_state().ok and not no_fault.awaiting_acknowledgement  # never switched off


def test_the_robots_own_error_report_decides_where_it_is_readable():
    assert classify_robot_errors(["joint_reflex"]).kind is StopKind.POLICY
    assert classify_robot_errors(["cartesian_reflex", "joint_velocity_violation"]).kind is StopKind.POLICY
    stop = classify_robot_errors(["communication_constraints_violation"])
    assert stop.kind is StopKind.SYSTEM and "communication_constraints_violation" in stop.reason
    assert classify_robot_errors(["joint_reflex", "power_limit_violation"]).kind is StopKind.SYSTEM
    assert classify_robot_errors([]).kind is StopKind.SYSTEM


def _inputs(**changes) -> TickInputs:
    sample = Sample(np.array(CONFIG.reset.pose), np.zeros(7), 1.0, 1.0)
    base = {"estop": False, "cancel_requested": False, "policy_lost": None, "arm": sample, "arm_age": 0.01,
            "gripper_fresh": True, "gripper_age": 0.01, "robot_fault": None, "end_requested": ""}
    return TickInputs(**{**base, **changes})


def test_tick_checks_in_order_of_precedence():
    checks = TickChecks(CONFIG)
    faulted = []

    def fault(age):
        faulted.append(age)
        return classify_fault([], [], age)

    assert checks(_inputs(), fault) is None
    assert checks(_inputs(estop=True, cancel_requested=True), fault).reason == "operator e-stop"
    assert checks(_inputs(cancel_requested=True), fault).kind is StopKind.SYSTEM
    assert checks(_inputs(policy_lost="policy lost: x"), fault).reason == "policy lost: x"
    stale = checks(_inputs(arm=None, arm_age=0.4), fault)
    assert stale.kind is StopKind.SYSTEM and faulted == [0.4]
    assert "gripper" in checks(_inputs(gripper_fresh=False, gripper_age=2.0), fault).reason
    outside = _inputs(arm=Sample(np.array(CONFIG.reset.pose) + [3.0, 0, 0, 0, 0, 0, 0], np.zeros(7), 1.0, 1.0))
    assert "joint limits" in checks(outside, fault).reason
    assert checks(_inputs(end_requested="the operator ended the episode"), fault).kind is StopKind.OPERATOR


# -- the arm's state by its stamps ------------------------------------------------------------------
def test_state_age_is_judged_by_stamps_and_repeats_are_not_fresh():
    now = [100.0]
    arm = StateSource("arm", CONFIG.arm.joints, 0.1, 0.05, clock=lambda: now[0])
    names = list(reversed(CONFIG.arm.joints))
    arm.update(names, list(range(7)), [0.0] * 7, 99.99)
    assert np.allclose(arm.fresh().q, list(reversed(range(7))))  # any name order
    now[0] = 100.2  # the driver went quiet: the same sample, re-sent with its old stamp, is no news
    arm.update(names, list(range(7)), [0.0] * 7, 99.99)
    assert arm.fresh() is None and arm.age() == pytest.approx(0.21)
    with pytest.raises(ValueError, match="lacks"):
        arm.update(names[1:], list(range(6)), [], 100.2)
    with pytest.raises(ValueError, match="not finite"):
        arm.update(names, [np.nan] * 7, [], 100.2)


def test_a_clock_offset_between_hosts_is_one_sentence():
    check = ClockCheck(0.05, needed=5)
    for i in range(5):
        check.add(stamp=10.0 + i * 0.01 + 0.8, received=10.0 + i * 0.01 + 0.001)
    assert "ahead of this computer's clock" in check.problem("the arm's state", 0.15)
    late = ClockCheck(0.05, needed=5)
    for i in range(5):
        late.add(stamp=10.0 + i, received=10.0 + i + 0.3)
    assert "synchronise the clocks" in late.problem("x", 0.15)
    assert late.problem("a camera", 0.5) is None  # a frame may take that long from capture to here
    fine = ClockCheck(0.05, needed=5)
    for i in range(5):
        fine.add(stamp=10.0 + i, received=10.0 + i + 0.002)
    assert fine.problem("x", 0.15) is None


# -- the episode loop -------------------------------------------------------------------------------
class ScriptedPolicy:
    """A policy port that answers every tick with `velocity` once it is ready."""

    def __init__(self, sc: SimCell, velocity, ready_after: int = 0):
        self.sc, self.velocity, self.ready_after = sc, np.asarray(velocity, float), ready_after
        self.asked = 0
        self.ticks = 0

    def ready(self):
        self.asked += 1
        return None if self.asked > self.ready_after else "warming up the policy server"

    def publish_tick(self, step):
        self.ticks += 1

    def wait(self, timeout, abort, what):
        reason = abort()
        if reason:
            raise PolicyUnavailable(reason)
        return {"arm": self.velocity * RAD_PER_S_AT_ONE, "gripper": np.array([0.0 * GRIPPER_CLOSED_RAD])}


def _loop(sc: SimCell, policy, cancel_at: int | None = None) -> EpisodeLoop:
    def inputs():
        return TickInputs(estop=False, cancel_requested=cancel_at is not None and policy.ticks >= cancel_at,
                          policy_lost=None, arm=sc.arm.fresh(), arm_age=sc.arm.age(),
                          gripper_fresh=sc.gripper.fresh() is not None, gripper_age=sc.gripper.age(),
                          robot_fault=None, end_requested="")

    return EpisodeLoop(CONFIG, sc.motion, sc, policy, inputs,
                       fault=lambda age: classify_fault(sc.arm.history(), sc.motion.segments(), age),
                       clock=lambda: sc.t, sleep=sc.advance)


def test_warm_up_a_policy_that_is_not_ready_yet_holds_and_does_not_abort():
    """The first request to openpi's server compiles for seconds: until the policy node says
    it is ready the loop holds (no tick, no miss) and then runs the whole episode."""
    sc = SimCell()
    policy = ScriptedPolicy(sc, np.zeros(7), ready_after=60)  # 3 s of "warming up"
    end = _loop(sc, policy).run(max_steps=20)
    assert end.stop.kind is StopKind.STEP_LIMIT and end.steps == 20 and policy.ticks == 20
    assert end.timing["missed_ticks"] == 0


def test_cancel_ends_the_episode_at_the_next_tick():
    sc = SimCell()
    policy = ScriptedPolicy(sc, 0.2 * DOWN)
    end = _loop(sc, policy, cancel_at=5).run(max_steps=200)
    assert end.stop.kind is StopKind.SYSTEM and "cancelled" in end.stop.reason and end.steps == 5


class LatePolicy(ScriptedPolicy):
    """Answers every tick at once except `late_tick`, whose reply comes `delay` s after the tick
    (pi0.5 computing a chunk), as the answer slot does: nothing within a wait's timeout."""

    def __init__(self, sc: SimCell, velocity, late_tick: int, delay: float):
        super().__init__(sc, velocity)
        self.late_tick, self.delay, self.asked_at = late_tick, delay, None

    def publish_tick(self, step):
        super().publish_tick(step)
        self.asked_at = self.sc.t

    def wait(self, timeout, abort, what):
        if self.ticks - 1 == self.late_tick and self.sc.t + timeout < self.asked_at + self.delay:
            self.sc.advance(timeout)
            raise PolicyUnavailable(f"no arm and gripper command for {what} within {timeout:g} s")
        if self.ticks - 1 == self.late_tick:
            self.sc.advance(max(self.asked_at + self.delay - self.sc.t, 0.0))
        return super().wait(timeout, abort, what)


def test_a_late_reply_is_waited_for_holding_and_then_executed_not_dropped():
    """A command that comes 0.8 s after its tick (later than command_timeout_s, 0.3 s): the arm
    holds meanwhile (DROID's loop blocks on its policy the same way), and the command is then
    executed, not dropped; no tick is missed. One later than reply_timeout_s is a missed tick."""
    sc = SimCell()
    policy = LatePolicy(sc, 0.2 * DOWN, late_tick=5, delay=0.8)
    end = _loop(sc, policy).run(max_steps=12)
    sc.advance(0.05)  # the last segments reach the controller
    timing = end.timing
    holds = [i for i, sent in enumerate(sc.sent) if len(sent[1]) == 1]
    print(f"late reply: {timing['late_replies']} late, {timing['missed_ticks']} missed, holds at segments {holds}")
    assert end.stop.kind is StopKind.STEP_LIMIT and end.steps == 12
    assert timing["late_replies"] == 1 and timing["missed_ticks"] == 0
    assert holds, "the arm held while the reply was late"
    assert len(sc.sent) - len(holds) >= 12, "every tick's command was executed"
    too_late = SimCell()
    policy = LatePolicy(too_late, 0.2 * DOWN, late_tick=5, delay=CONFIG.control.reply_timeout_s + 0.5)
    end = _loop(too_late, policy).run(max_steps=12)
    assert end.timing["missed_ticks"] == 1 and end.timing["late_replies"] == 1


class FrozenCameraPolicy(ScriptedPolicy):
    """The policy node's refusal for every tick: a camera's frame is stale by its stamp."""

    def wait(self, timeout, abort, what):
        why = "image/wrist is 0.91 s old by its stamp (limit 0.25 s)"
        return {"arm": Refusal(why), "gripper": Refusal(why)}


def test_a_frozen_camera_aborts_at_once_naming_the_camera():
    """A camera that froze: the policy node refuses each tick with its reason, so the arm holds
    in the same tick (no wait for command_timeout_s) and the abort after max_missed_ticks names
    the camera and how old its frame is."""
    sc = SimCell()
    started = sc.t
    end = _loop(sc, FrozenCameraPolicy(sc, np.zeros(7))).run(max_steps=100)
    print(f"frozen camera: {end.stop.reason} after {sc.t - started:.2f} s")  # pytest -s
    assert end.stop.kind is StopKind.SYSTEM and end.steps == CONFIG.control.max_missed_ticks
    assert "no usable command for 8 ticks in a row (the policy node sent none: image/wrist is 0.91 s old" in (
        end.stop.reason
    )
    assert sc.t - started < (CONFIG.control.max_missed_ticks + 1) / CONFIG.control.rate_hz + 0.1


# -- any sequence of faults, recoveries and commands ------------------------------------------------
EVENTS = st.lists(st.one_of(
    st.tuples(st.just("stream"), st.lists(st.floats(-1, 1), min_size=7, max_size=7), st.integers(1, 12)),
    st.tuples(st.just("hold"), st.none(), st.integers(1, 6)),
    st.tuples(st.just("fault"), st.sampled_from(["communication_constraints_violation"]), st.just(3)),
    st.tuples(st.just("recover"), st.none(), st.just(3)),
    st.tuples(st.just("reset"), st.none(), st.just(1)),
), min_size=3, max_size=12)


@settings(max_examples=15, deadline=None)
@given(events=EVENTS)
def test_any_sequence_of_faults_recoveries_and_commands_sends_only_safe_segments(events):
    """Every point sent is finite and inside the limits (less the margin); the commanded velocity
    changes by at most the allowed acceleration from tick to tick; the controller never commands
    more than the torque bound; the stand-in never sees a velocity, position or acceleration
    violation (a contact with the table is the commands' doing, not the runner's, and may
    happen)."""
    sc = SimCell()
    for kind, arg, ticks in events:
        if kind == "stream":
            _drive(sc, np.array(arg) * 0.5, ticks)
        elif kind == "hold":
            sc.motion.hold()
            sc.advance(ticks / 15)
        elif kind == "fault":
            sc.cell.inject(arg)
            sc.advance(ticks / 15)
        elif kind == "recover":
            sc.recover()
            sc.advance(ticks / 15)
        else:
            sc.reset.run()
    for _, points, _, _ in sc.sent:
        for p in points:
            assert np.all(np.isfinite(p.positions)) and np.all(np.isfinite(p.velocities))
            assert np.all(p.positions >= LOWER - 1e-9) and np.all(p.positions <= UPPER + 1e-9)
    # the commanded velocity changes by at most dv from one streamed tick to the next (the
    # reference's own acceleration), or brakes at the tail deceleration near a position limit;
    # what the controller then asks of a lagging arm is bounded by the torque bound, and the arm
    # itself never breaks a limit
    for (t0, p0, _, _), (t1, p1, _, _) in zip(sc.sent, sc.sent[1:], strict=False):
        if len(p0) == 2 and len(p1) == 2 and t1 - t0 < sc.gate.lookahead:  # one stream, then the next
            step = np.maximum(sc.gate.dv, sc.gate.a_stop * (t1 - t0))
            assert np.all(np.abs(p1[0].velocities - p0[0].velocities) <= step + 1e-9)
    assert np.all(np.array(sc.cell.summary()["peak_command"]) <= CONFIG.worst_torques() + 1e-6)
    limits = {"joint_velocity_violation", "joint_position_limits_violation", "joint_acceleration_violation"}
    assert not limits & set(sc.cell.status.errors), sc.cell.summary()
