"""fr3_runner: the real FR3 as an IndGen world. Serves the same RunEpisode action as the sim
bridge, on the wall clock at the robot configuration's rate (15 Hz), and is the only node that
writes to the robot's controllers.

Per trial, `/indgen/prepare_trial` (called by the progression manager before it asks the
person for the scene) opens the gripper and moves the arm to the reset pose, and verifies it
got there. The RunEpisode goal then runs the control loop: each tick publishes ControlTick,
waits up to command_timeout_s for the policy node's command that answers exactly that tick
(its sequence number), and streams it to the arm's JointTrajectoryController as a short
segment that ends at rest (control.py) and to the gripper's position controller. A command
that is missing, late, repeated, non-finite, the wrong size or out of range is never sent:
the runner holds (a segment to rest from where the controller is) in the same tick.

The episode ends at the step limit, when the operator ends it (`/indgen/end_episode`), or is
aborted (a system failure, re-run, never scored) when: the policy is lost, max_missed_ticks
ticks in a row had no usable command, joint states are older than joint_state_max_age_s (a
fault deactivates franka's broadcaster), the arm leaves its joint limits or stops following
its reference, the soft e-stop is engaged (`/indgen/estop`: std_msgs/Bool topic or
std_srvs/SetBool service; the robot holds at once and stays held until released), or the
progression manager cancels or moves on. The result says `judged: false`: the person labels
it (the progression manager asks), and its source is then `operator`.

Nothing here keeps the robot safe on its own: a runner that dies leaves the controller at
the end of its last segment, at rest; the hardware e-stop is what stops a robot whose
controller misbehaves.

Parameters: robot (robot configuration, config/robots/<name>.yaml), feedback_period_s.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from indgen_core import topics
from indgen_core.episode import PolicyUnavailable
from indgen_core.nodes import convert, fr3
from indgen_core.nodes.base import LATCHED, LOCKSTEP, declare, one_line, run_node, serve, subscribe
from indgen_core.nodes.lockstep import AnswerSlot
from indgen_core.nodes.world_watch import WorldWatch
from indgen_core.records import Outcome, TrialResult
from indgen_core.robot_config import load_robot_config
from indgen_core.trajectory import Trajectory
from indgen_msgs.action import RunEpisode
from indgen_msgs.msg import ControlTick, PolicyStatus, RobotStatus, TaskSetup
from indgen_msgs.srv import PrepareTrial
from indgen_robot.control import CommandGate, RefusedCommand, check_command
from indgen_robot.episode_timing import TickTimer
from indgen_robot.reset import reset_arm

#: joint states from any publisher, reliable or best effort
SENSOR = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


class EndEpisode(Exception):
    """The episode stops here (step limit, operator); `aborted` when the system failed."""

    def __init__(self, reason: str, aborted: bool):
        super().__init__(reason)
        self.aborted = aborted


class Fr3Runner(Node):
    def __init__(self):
        super().__init__("fr3_runner")
        self.p = declare(self, robot="fr3_robotiq_zed", feedback_period_s=0.5)
        self.config = load_robot_config(self.p["robot"])
        self.gate = CommandGate(self.config)
        self.lock = threading.Lock()
        self.send_lock = threading.RLock()
        self.joints = None  # (q, dq, knuckle, received monotonic)
        self.reference = None  # the trajectory the controller is following (what was last sent)
        self.estop = False
        self.end_requested = ""
        self.watch = WorldWatch(policy_silence_s=5.0)
        self.prepared: tuple[str, float] | None = None  # trial id, when
        self.last_prepare: tuple[str, int, int] | None = None  # (trial id, request stamp): a repeat
        self.sequence = 0
        self.state = RobotStatus.STATE_IDLE
        self.status_message = "waiting for a trial"
        self.timer = TickTimer()

        self.io = rclpy.create_node(f"{self.get_name()}_io", context=self.context, use_global_arguments=False)
        self.slot = AnswerSlot(("arm", "gripper"))
        subscribe(self.io, JointState, self.config.joint_states_topic, self._on_joints, SENSOR)
        subscribe(self.io, Float64MultiArray, topics.ARM_VELOCITY_COMMAND, self._command("arm"), LOCKSTEP)
        subscribe(self.io, Float64MultiArray, topics.GRIPPER_COMMAND, self._command("gripper"), LOCKSTEP)
        subscribe(self.io, PolicyStatus, topics.POLICY_STATUS, self.watch.on_policy_status, LATCHED)
        subscribe(self.io, TaskSetup, topics.TASK_SETUP, self.watch.on_setup, LATCHED)
        subscribe(self.io, Bool, topics.ESTOP, lambda m: self._set_estop(bool(m.data), "the e-stop topic"), LATCHED)
        serve(self.io, SetBool, topics.ESTOP, self._estop_service)
        serve(self.io, Trigger, topics.END_EPISODE, self._end_service)
        self.tick_pub = self.io.create_publisher(ControlTick, topics.CONTROL_TICK, LOCKSTEP)
        self.arm_pub = self.io.create_publisher(JointTrajectory, self.config.arm.trajectory_topic, LOCKSTEP)
        self.gripper_pub = self.io.create_publisher(Float64MultiArray, self.config.gripper.command_topic, LOCKSTEP)
        self.status_pub = self.io.create_publisher(RobotStatus, topics.ROBOT_STATUS, LATCHED)
        self.io.create_timer(0.5, self._publish_status)

        self.server = ActionServer(self, RunEpisode, topics.RUN_EPISODE, execute_callback=self._execute,
                                   goal_callback=lambda goal: GoalResponse.ACCEPT,
                                   cancel_callback=lambda _: CancelResponse.ACCEPT)
        serve(self, PrepareTrial, topics.PREPARE_TRIAL, self._prepare)
        self.get_logger().info(f"FR3 runner for '{self.config.name}': {self.config.control.rate_hz:g} Hz, arm on "
                               f"{self.config.arm.trajectory_topic}, gripper on {self.config.gripper.command_topic}")

    def extra_nodes(self):
        return [self.io]

    # -- inputs -------------------------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        names = self.config.arm.joints
        if any(n not in index for n in names) or len(msg.position) != len(msg.name):
            raise ValueError(f"joint state lacks {[n for n in names if n not in index]}")
        q = np.array([msg.position[index[n]] for n in names])
        dq = np.array([msg.velocity[index[n]] for n in names]) if len(msg.velocity) == len(msg.name) else np.zeros(7)
        knuckle = msg.position[index[self.config.gripper.joint]] if self.config.gripper.joint in index else 0.0
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq)) and np.isfinite(knuckle)):
            raise ValueError("joint state is not finite")
        with self.lock:
            self.joints = (q, dq, float(knuckle), time.monotonic())

    def _command(self, part: str):
        def take(msg: Float64MultiArray) -> None:
            self.slot.offer(msg.layout.data_offset, np.array(msg.data, dtype=np.float64), part)
        return take

    def _set_estop(self, engaged: bool, source: str) -> None:
        with self.send_lock:
            if engaged and not self.estop:
                self.estop = True
                self._hold()
                self.get_logger().warning(f"soft e-stop engaged ({source}): holding")
            elif not engaged and self.estop:
                self.get_logger().info(f"soft e-stop released ({source})")
            self.estop = engaged
        self._publish_status()

    def _estop_service(self, request, response):
        self._set_estop(bool(request.data), "the e-stop service")
        response.success = True
        response.message = "e-stop engaged: the robot holds" if request.data else "e-stop released"
        return response

    def _end_service(self, request, response):
        if not self.watch.current[0]:
            response.success, response.message = False, "no episode is running"
        else:
            self.end_requested = "the operator ended the episode"
            response.success, response.message = True, f"ending {self.watch.current[0]}"
        return response

    # -- outputs ------------------------------------------------------------------------------------
    def _state_now(self):
        with self.lock:
            joints = self.joints
        return joints

    def _reference_now(self, now: float) -> tuple[np.ndarray, np.ndarray]:
        if self.reference is None:
            joints = self._state_now()
            q = joints[0] if joints else np.array(self.config.reset.pose)
            return q, np.zeros(7)
        q, dq, _ = self.reference.sample(now)
        return q, dq

    def _send(self, points) -> None:
        with self.send_lock:  # the loop and the e-stop (another thread) both send
            now = time.monotonic()
            q0, dq0 = self._reference_now(now)
            self.reference = Trajectory(now, q0, dq0, points)
            self._publish_segment(points)

    def _publish_segment(self, points) -> None:
        msg = JointTrajectory(joint_names=list(self.config.arm.joints))
        for p in points:
            point = JointTrajectoryPoint(positions=[float(x) for x in p.positions],
                                         velocities=[float(x) for x in p.velocities] if p.velocities is not None
                                         else [])
            point.time_from_start = convert.duration(p.t)
            msg.points.append(point)
        self.arm_pub.publish(msg)  # header.stamp zero: the controller starts it at once

    def _hold(self) -> None:
        with self.send_lock:
            q, dq = self._reference_now(time.monotonic())
            self._send(self.gate.hold(q, dq))

    def _gripper(self, droid_gripper: float) -> None:
        self.gripper_pub.publish(Float64MultiArray(data=[self.gate.gripper(droid_gripper)]))

    def _publish_status(self) -> None:
        joints = self._state_now()
        age = time.monotonic() - joints[3] if joints else -1.0
        state = RobotStatus.STATE_ESTOP if self.estop else self.state
        msg = RobotStatus(state=state, trial_id=self.watch.current[0], step=self.timer.ticks, joint_state_age_s=age,
                          tick_rate_hz=self.timer.rate_hz(), missed_ticks=self.timer.missed, estop=self.estop,
                          message=self.status_message)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(msg)

    def _set_state(self, state: int, message: str) -> None:
        self.state, self.status_message = state, message
        self._publish_status()

    # -- prepare: the reset -------------------------------------------------------------------------
    def _prepare(self, request, response):
        setup = convert.setup_from_msg(request.setup)
        if self.estop:
            response.ready, response.message = False, "the soft e-stop is engaged; release it first"
            response.needs_operator = True
            return response
        asked = (setup.trial_id, request.setup.header.stamp.sec, request.setup.header.stamp.nanosec)
        if asked == self.last_prepare:
            # the same request again (the progression manager's first one or our reply was lost,
            # or the reset took long): the arm does not move again, a person may be in the cell
            ok, message = self.at_reset_pose()
            response.ready, response.message, response.needs_operator = ok, message, True
            return response
        self.last_prepare = asked
        self._set_state(RobotStatus.STATE_RESETTING, f"resetting for {setup.trial_id}")
        self._gripper(0.0)
        ok, message = reset_arm(self, self.config)
        if ok:
            self.prepared = (setup.trial_id, time.monotonic())
        self._set_state(RobotStatus.STATE_READY if ok else RobotStatus.STATE_HOLDING, message)
        response.ready, response.message, response.needs_operator = ok, message, True
        return response

    def at_reset_pose(self) -> tuple[bool, str]:
        joints = self._state_now()
        if joints is None or time.monotonic() - joints[3] > self.config.control.joint_state_max_age_s:
            return False, "no current joint state"
        error = np.abs(joints[0] - np.array(self.config.reset.pose))
        worst = int(np.argmax(error))
        if error[worst] > self.config.reset.tolerance:
            return False, f"{self.config.arm.joints[worst]} is {error[worst]:.3f} rad from the reset pose"
        if np.max(np.abs(joints[1])) > 0.05:
            return False, "the arm is still moving"
        return True, "at the reset pose"

    # -- the episode --------------------------------------------------------------------------------
    def _execute(self, goal_handle):
        try:
            setup = convert.setup_from_msg(goal_handle.request.setup)
        except Exception as exc:
            goal_handle.abort()
            return self._result_msg(None, TrialResult("", Outcome.ABORTED, f"malformed goal: {one_line(exc)}"))
        stamp = goal_handle.request.setup.header.stamp
        self.watch.begin(setup.trial_id, stamp)
        self.end_requested = ""
        try:
            result = self._episode(goal_handle, setup)
        except Exception as exc:  # never leave the robot moving on an unexpected error
            self._hold()
            self.get_logger().error(f"{setup.trial_id}: {one_line(exc)}; holding")
            result = TrialResult(setup.trial_id, Outcome.ABORTED, f"runner error: {one_line(exc)}")
        finally:
            self.watch.end()
            self.prepared = None
        self._set_state(RobotStatus.STATE_IDLE if result.outcome is not Outcome.ABORTED else RobotStatus.STATE_HOLDING,
                        f"{setup.trial_id}: {result.reason}")
        verdict = result.outcome.name.lower() if result.details.get("judged", True) else "ended"
        self.get_logger().info(f"{setup.trial_id}: {verdict} after {result.steps} ticks ({result.reason})")
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return self._result_msg(setup, result)

    def _result_msg(self, setup, result: TrialResult):
        setup = setup or convert.records.TaskSetup(campaign_id="", trial_id="", world="fr3", axis="", level=0,
                                                   in_distribution=False, parameters=(), trial_index=0, seed=0,
                                                   policy="")
        return RunEpisode.Result(result=convert.result_to_msg(result, setup, self.get_clock().now().to_msg()))

    def _check(self, goal_handle, started: float) -> None:
        """EndEpisode when the episode must stop before its next tick."""
        c = self.config.control
        if self.estop:
            raise EndEpisode("operator e-stop", aborted=True)
        if goal_handle.is_cancel_requested:
            raise EndEpisode("cancelled by the progression manager", aborted=True)
        lost = self.watch.reason(started, grace_s=c.command_timeout_s * 10)
        if lost:
            raise EndEpisode(lost, aborted=True)
        joints = self._state_now()
        age = time.monotonic() - joints[3] if joints else float("inf")
        if age > c.joint_state_max_age_s:
            raise EndEpisode(f"joint states are {age:.2f} s old (robot fault or driver down)", aborted=True)
        q = joints[0]
        arm = self.config.arm
        outside = [arm.joints[i] for i in range(7) if not arm.lower[i] <= q[i] <= arm.upper[i]]
        if outside:
            raise EndEpisode(f"the arm left its joint limits ({', '.join(outside)})", aborted=True)
        q_ref, _ = self._reference_now(time.monotonic())
        lag = float(np.max(np.abs(q_ref - q)))
        if lag > arm.tracking_tolerance:
            raise EndEpisode(f"the arm does not follow its commands ({lag:.2f} rad off; a collision or a fault)",
                             aborted=True)
        if self.end_requested:
            raise EndEpisode(self.end_requested, aborted=False)

    def _lost_now(self, started: float):
        """While a tick waits for its command: a policy lost now ends the wait at once (the
        robot holds in this tick, not after command_timeout_s)."""
        def reason() -> str | None:
            if self.estop:
                return "operator e-stop"
            if self.watch.policy_lost and self.watch.lost_since > started:
                return f"policy lost: {self.watch.policy_lost}"
            return None
        return reason

    def _episode(self, goal_handle, setup) -> TrialResult:
        started = time.monotonic()
        max_steps = setup.max_steps or 600
        if self.estop:
            return TrialResult(setup.trial_id, Outcome.ABORTED, "the soft e-stop is engaged")
        if self.prepared is None or self.prepared[0] != setup.trial_id:
            # nobody prepared this trial (no operator in the loop): reset now, before any motion
            self._gripper(0.0)
            ok, message = reset_arm(self, self.config, progress=lambda: goal_handle.publish_feedback(
                RunEpisode.Feedback(phase="resetting", max_steps=max_steps)))
            if not ok:
                return TrialResult(setup.trial_id, Outcome.ABORTED, f"reset failed: {message}")
        ok, message = self.at_reset_pose()
        if not ok:
            return TrialResult(setup.trial_id, Outcome.ABORTED, f"not starting: {message}")
        self.timer = TickTimer()
        period = 1.0 / self.config.control.rate_hz
        c = self.config.control
        last_feedback = 0.0
        misses, last_refusal = 0, ""
        next_tick = time.monotonic()
        step = 0
        self._set_state(RobotStatus.STATE_RUNNING, f"running {setup.trial_id}")
        reason, aborted = f"step limit {max_steps} reached", False
        try:
            while step < max_steps:
                delay = next_tick - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self._check(goal_handle, started)
                tick_time = time.monotonic()
                self.timer.tick(tick_time)
                self.sequence = (self.sequence + 1) % 2**32
                self.slot.expect(self.sequence)
                tick = ControlTick(trial_id=setup.trial_id, step=step, sequence=self.sequence, wall_clock=True)
                tick.header.stamp = self.get_clock().now().to_msg()
                self.tick_pub.publish(tick)
                try:
                    got = self.slot.wait(c.command_timeout_s, self._lost_now(started), f"tick {step}")
                    v, g = check_command(got["arm"] / fr3.RAD_PER_S_AT_ONE, got["gripper"] / fr3.GRIPPER_CLOSED_RAD)
                    answered = time.monotonic()
                    with self.send_lock:  # an e-stop that came meanwhile wins: nothing more is sent
                        if self.estop:
                            raise EndEpisode("operator e-stop", aborted=True)
                        q_ref, dq_ref = self._reference_now(answered)
                        points, _ = self.gate.stream(q_ref, dq_ref, v)
                        self._send(points)
                        self._gripper(g)
                    self.timer.command(tick_time, answered, time.monotonic())
                    misses = 0
                except (PolicyUnavailable, RefusedCommand) as exc:
                    self._hold()
                    self.timer.miss()
                    misses += 1
                    last_refusal = str(exc)
                    if misses >= c.max_missed_ticks:
                        raise EndEpisode(f"no usable command for {misses} ticks in a row ({last_refusal})",
                                         aborted=True) from None
                step += 1
                next_tick = max(next_tick + period, time.monotonic())
                if time.monotonic() - last_feedback >= self.p["feedback_period_s"]:
                    last_feedback = time.monotonic()
                    goal_handle.publish_feedback(RunEpisode.Feedback(
                        phase="running", step=step, max_steps=max_steps,
                        elapsed=convert.duration(time.monotonic() - started)))
        except EndEpisode as end:
            reason, aborted = str(end), end.aborted
        self._hold()
        duration = time.monotonic() - started
        details = {"judged": False, "end": reason, "timing": self.timer.summary()}
        if aborted:
            return TrialResult(setup.trial_id, Outcome.ABORTED, reason, steps=step, duration_s=duration,
                               wall_time_s=duration, details=details)
        return TrialResult(setup.trial_id, Outcome.FAILURE, f"episode ended: {reason}; to be labelled by the operator",
                           steps=step, duration_s=duration, wall_time_s=duration, details=details)


def main() -> int:
    return run_node(Fr3Runner)


if __name__ == "__main__":
    raise SystemExit(main())
