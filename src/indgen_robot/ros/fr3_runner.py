"""fr3_runner: the real FR3 as an IndGen world. Serves the same RunEpisode action as the sim
bridge, on the wall clock at the robot configuration's rate (15 Hz), and is the only node that
writes to the robot's controllers.

This module only wires ROS to plain code: the arm and gripper states by their own drivers'
topics and stamps (arm_state.py), every segment from the measured arm (motion.py), the reset
sequence with fault recovery (reset.py), the episode loop and its per-tick checks
(episode_loop.py, safety.py), and the rule that tells a system fault (aborted, run again)
from a stop the policy's own motion caused (ended, labelled, counted: episode_result.py).
Per trial, `/indgen/prepare_trial` (called by the progression manager before it asks the
person for the scene) recovers a faulted robot, opens the gripper and moves the arm to the
reset pose, and verifies it got there. The RunEpisode goal then runs the episode on its own
thread, so that a cancel, a prepare (refused while an episode runs) and the e-stop are served
meanwhile. The result says `judged: false`: the person labels it (the progression manager
asks), and its source is then `operator`; a system fault makes it `aborted` (never scored).

The soft e-stop (`/indgen/estop`: std_msgs/Bool from any publisher, reliable or best effort,
volatile or latching, or the std_srvs/SetBool service) holds at once, aborts the trial and
refuses every new one until released. After a stop the robot's state is restored at once
(nothing moves) and its torque control only once the operator acknowledges
(`/indgen/acknowledge_stop`, torque_control.py). The arm's and gripper's joint states and
franka's 1 kHz robot state are taken newest-first at 100 Hz and at each tick
(indgen_core/ros/latest.py), not delivered message by message. Nothing here keeps the robot safe on its own: the FR3's
own reflexes and the hardware e-stop within the operator's reach do. Parameters and
endpoints: indgen_robot/node_interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from indgen_core import topics
from indgen_core.cell.robot_config import load_robot_config
from indgen_core.errors import IndGenError, first_line
from indgen_core.nodes import messages
from indgen_core.nodes.world_watch import WorldWatch
from indgen_core.records import Outcome, TrialResult
from indgen_core.ros import convert, fr3
from indgen_core.ros.base import (
    LATCHED,
    LOCKSTEP,
    TICKS,
    read_parameters,
    run_node,
    serve,
    subscribe,
    threaded_execute,
)
from indgen_core.ros.world_node import WorldNodeContract
from indgen_core.waiting import heartbeat
from indgen_msgs.action import RunEpisode
from indgen_msgs.msg import ControlTick, PolicyStatus, RobotStatus, TaskSetup
from indgen_robot.control import CommandGate
from indgen_robot.episode_loop import EpisodeLoop, Refusal
from indgen_robot.episode_result import malformed_goal_setup, trial_result
from indgen_robot.motion import ArmMotion
from indgen_robot.node_interfaces import FR3_RUNNER_ENDPOINTS
from indgen_robot.node_interfaces import Fr3RunnerParameters as Parameters
from indgen_robot.reset import ResetSequence, at_pose
from indgen_robot.ros.cell_io import CellIO
from indgen_robot.ros.policy_port import RosPolicyPort
from indgen_robot.safety import (
    Stop,
    StopKind,
    TickInputs,
    classify_fault,
    classify_robot_errors,
    settle_unexplained,
)
from indgen_robot.torque_control import AWAITING


class Fr3Runner(WorldNodeContract, Node):
    ENDPOINTS = FR3_RUNNER_ENDPOINTS  # held to what it creates: ros.base.check_endpoints
    ESTOP_EFFECT = "the robot holds"

    def __init__(self) -> None:
        super().__init__("fr3_runner")
        self.p = read_parameters(self, Parameters)
        self.config = load_robot_config(self.p.robot)
        robot = self.config  # the robot configuration (config/robots/*.yaml)
        if robot.bringup.arm_controllers == "":
            raise IndGenError(
                f"robot configuration '{robot.name}' names no arm controller file (bringup.arm_controllers)"
            )
        self.gate = CommandGate(robot)
        self.io = rclpy.create_node(f"{self.get_name()}_io", context=self.context, use_global_arguments=False)
        self.cell = CellIO(
            self, self.io, robot, self.p.recovery or robot.recovery.method, on_change=self._publish_status
        )
        self.arm, self.gripper = self.cell.arm, self.cell.gripper
        self.motion = ArmMotion(self.gate, self.arm, self.cell.publish_segment)
        self.cell.after_sample = self.motion.hold_if_owed  # a hold the stale state kept back goes out then
        self.watch = WorldWatch(policy_silence_s=5.0)
        self.prepared: tuple[str, float] | None = None  # trial id, when
        self.last_prepare: tuple[str, int, int] | None = None  # (trial id, request stamp): a repeat
        self.episode_lock = threading.Lock()  # held while an episode runs
        self.state = RobotStatus.STATE_IDLE
        self.status_message = "waiting for a trial"
        self.loop: EpisodeLoop | None = None

        self.tick_pub = self.io.create_publisher(ControlTick, topics.CONTROL_TICK, TICKS)
        self.policy = RosPolicyPort(self.watch.waiting, self.tick_pub.publish, lambda: self.get_clock().now().to_msg())
        subscribe(self.io, Float64MultiArray, topics.ARM_VELOCITY_COMMAND, self._command("arm"), LOCKSTEP)
        subscribe(self.io, Float64MultiArray, topics.GRIPPER_COMMAND, self._command("gripper"), LOCKSTEP)
        subscribe(self.io, PolicyStatus, topics.POLICY_STATUS, self._on_policy_status, LATCHED)
        subscribe(self.io, TaskSetup, topics.TASK_SETUP, self.watch.on_setup, LATCHED)
        serve(self.io, Trigger, topics.ACKNOWLEDGE_STOP, self._acknowledge_service)
        self.status_pub = self.io.create_publisher(RobotStatus, topics.ROBOT_STATUS, LATCHED)
        self.io.create_timer(0.5, self._publish_status)
        self.torque = self.cell.torque
        self.reset = ResetSequence(robot, self.motion, self.cell)

        # the world-node contract (indgen_core/ros/world_node.py): the e-stop from any publisher,
        # "end the episode now", PrepareTrial, RunEpisode
        self.serve_world_contract(self.io, self, threaded_execute(self, self._execute))
        speeds = ", ".join(f"{v:.2f}" for v in self.gate.v_max)
        torque = ", ".join(f"{t:.1f}" for t in robot.worst_torques())
        self.get_logger().info(
            f"FR3 runner for '{robot.name}': {robot.control.rate_hz:g} Hz; arm state from "
            f"{robot.arm.state_topic}, gripper state from {robot.gripper.state_topic}; segments to "
            f"{robot.arm.trajectory_topic} at most [{speeds}] rad/s, each within max_lead of the arm; a blocked "
            f"joint is pushed with at most [{torque}] Nm; recovery: {self.cell.recovery.describe()}"
        )

    def extra_nodes(self):
        return [self.io]

    def close(self) -> None:
        self.cell.close()

    # -- inputs -------------------------------------------------------------------------------------
    def _command(self, part: str):
        def take(msg: Float64MultiArray) -> None:
            why = fr3.refusal(msg)  # the policy node says why it has no command for this tick
            value = Refusal(why) if why is not None else np.array(msg.data, dtype=np.float64)
            self.policy.slot.offer(msg.layout.data_offset, value, part)

        return take

    def _on_policy_status(self, msg: PolicyStatus) -> None:
        self.watch.on_policy_status(msg)
        self.policy.slot.wake()  # a lost policy ends the tick's wait now: the arm holds in this tick

    def _set_estop(self, engaged: bool, source: str) -> None:
        with self.motion.lock:
            if engaged and not self.estop:
                self.estop = True
                self.motion.hold()
                self.get_logger().warning(f"soft e-stop engaged ({source}): holding")
            elif not engaged and self.estop:
                self.get_logger().info(f"soft e-stop released ({source})")
            self.estop = engaged
        self._publish_status()

    def _acknowledge_service(self, request, response):
        response.success, response.message = self.torque.acknowledge()
        if response.success:
            self.get_logger().info(f"the operator acknowledged the stop: {response.message}")
        self._publish_status()
        return response

    def _inputs(self, started: float, cancel) -> TickInputs:
        arm_age, gripper_age = self.arm.age(), self.gripper.age()
        return TickInputs(
            estop=self.estop,
            cancel_requested=cancel(),
            policy_lost=self.watch.reason(started, self.config.control.policy_ready_timeout_s),
            arm=self.arm.fresh(),
            arm_age=arm_age,
            gripper_fresh=self.gripper.fresh() is not None,
            gripper_age=gripper_age,
            robot_fault=self.cell.report.fault(),
            end_requested=self.end_requested,
        )

    def _classify_fault(self, age: float) -> Stop:
        report = self.cell.report.latest
        if report is not None and report[1]:
            return classify_robot_errors(report[1])
        latest = self.arm.latest()
        if latest is not None and latest.stamp == 0.0:
            return Stop(
                StopKind.SYSTEM,
                f"the arm's joint states on {self.config.arm.state_topic} carry no header "
                "stamp: their age cannot be judged",
            )
        return classify_fault(
            self.arm.history(),
            self.motion.segments(),
            age,
            driver_alive=self.cell.driver_alive(),
            still_speed=self.config.reset.at_rest_speed,
        )

    # -- status -------------------------------------------------------------------------------------
    def _publish_status(self) -> None:
        age = self.arm.age()
        timer = self.loop.timer if self.loop else None
        state = RobotStatus.STATE_ESTOP if self.estop else self.state
        awaiting = self.torque.awaiting_acknowledgement
        msg = RobotStatus(
            state=state,
            trial_id=self.watch.current[0],
            step=timer.ticks if timer else 0,
            joint_state_age_s=age if np.isfinite(age) else -1.0,
            tick_rate_hz=timer.rate_hz() if timer else 0.0,
            missed_ticks=timer.missed if timer else 0,
            estop=self.estop,
            awaiting_acknowledgement=awaiting,
            message=AWAITING if awaiting and not self.estop else self.status_message,
        )
        msg.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(msg)

    def _set_state(self, state: int, message: str) -> None:
        self.state, self.status_message = state, message
        self._publish_status()

    def _stop_reason(self) -> str | None:
        return "operator e-stop" if self.estop else None

    # -- prepare: the reset -------------------------------------------------------------------------
    def _prepare(self, request, response):
        setup = messages.setup_from_msg(request.setup)
        response.needs_operator = True
        if self.estop:
            response.ready, response.message = False, "the soft e-stop is engaged; release it first"
            response.estop_engaged = True
            return response
        if self.episode_lock.locked():
            response.ready, response.message = (
                False,
                f"an episode is running ({self.watch.current[0]}); it must end before the next trial is prepared",
            )
            return response
        asked = (setup.trial_id, request.setup.header.stamp.sec, request.setup.header.stamp.nanosec)
        if asked == self.last_prepare:
            # the same request again (the progression manager's first one or our reply was lost,
            # or the reset took long): the arm does not move again, a person may be in the cell
            ok, message = at_pose(self.config, self.arm.fresh())
            response.ready, response.message = ok, message
            return response
        if self.torque.awaiting_acknowledgement:
            # the person acts first: the manager waits and asks again (not an attempt)
            response.ready, response.message, response.waiting_for_operator = False, AWAITING, True
            self._publish_status()
            return response
        self.last_prepare = asked
        self._set_state(RobotStatus.STATE_RESETTING, f"resetting for {setup.trial_id}")
        ok, message = self.reset.run(should_stop=self._stop_reason)
        if ok:
            self.prepared = (setup.trial_id, time.monotonic())
        elif self.torque.awaiting_acknowledgement:
            self.last_prepare = None  # the same request, once acknowledged, resets
            response.waiting_for_operator = True
        self._set_state(RobotStatus.STATE_READY if ok else RobotStatus.STATE_HOLDING, message)
        response.ready, response.message = ok, message
        return response

    # -- the episode (its own thread: threaded_execute) ----------------------------------------------
    def _execute(self, goal_handle):
        try:
            setup = messages.setup_from_msg(goal_handle.request.setup)
        except Exception as exc:
            goal_handle.abort()
            return self._result_msg(None, TrialResult("", Outcome.ABORTED, f"malformed goal: {first_line(exc)}"))
        with self.episode_lock:
            self.watch.begin(setup.trial_id, goal_handle.request.setup.header.stamp)
            self.end_requested = ""
            try:
                result = self._episode(goal_handle, setup)
            except Exception as exc:  # never leave the robot moving on an unexpected error
                self.motion.hold()
                self.get_logger().error(f"{setup.trial_id}: {first_line(exc)}; holding")
                result = TrialResult(setup.trial_id, Outcome.ABORTED, f"runner error: {first_line(exc)}")
            finally:
                self.watch.end()
                self.prepared = None
        ended = result.outcome is not Outcome.ABORTED and "robot_stop" not in result.details
        self._set_state(
            RobotStatus.STATE_IDLE if ended else RobotStatus.STATE_HOLDING, f"{setup.trial_id}: {result.reason}"
        )
        verdict = result.outcome.word if result.details.get("judged", True) else "ended"
        self.get_logger().info(f"{setup.trial_id}: {verdict} after {result.steps} ticks ({result.reason})")
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return self._result_msg(setup, result)

    def _result_msg(self, setup, result: TrialResult):
        setup = setup or malformed_goal_setup()
        return RunEpisode.Result(result=convert.result_to_msg(result, setup, self.get_clock().now().to_msg()))

    def _episode(self, goal_handle, setup) -> TrialResult:
        started = time.monotonic()
        max_steps = setup.max_steps or 600

        def feedback(phase: str, step: int) -> None:
            goal_handle.publish_feedback(
                RunEpisode.Feedback(
                    phase=phase, step=step, max_steps=max_steps, elapsed=convert.duration(time.monotonic() - started)
                )
            )

        if self.estop:
            return TrialResult(setup.trial_id, Outcome.ABORTED, "the soft e-stop is engaged")
        if self.prepared is None or self.prepared[0] != setup.trial_id:
            # nobody prepared this trial (no operator in the loop): reset now, before any motion
            self._set_state(RobotStatus.STATE_RESETTING, f"resetting for {setup.trial_id}")
            ok, message = self.reset.run(progress=lambda: feedback("resetting", 0), should_stop=self._stop_reason)
            if not ok:
                return TrialResult(setup.trial_id, Outcome.ABORTED, f"reset failed: {message}")
        ok, message = self.reset.settled(progress=lambda: feedback("settling", 0), should_stop=self._stop_reason)
        if not ok:
            return TrialResult(setup.trial_id, Outcome.ABORTED, f"not starting: {message}")
        self.policy.trial_id = setup.trial_id
        self.loop = EpisodeLoop(
            self.config,
            self.motion,
            self.cell,
            self.policy,
            inputs=lambda: self._inputs(started, lambda: goal_handle.is_cancel_requested),
            fault=self._classify_fault,
            feedback=feedback,
        )
        self._set_state(RobotStatus.STATE_RUNNING, f"running {setup.trial_id}")
        end = self.loop.run(max_steps)
        cell = self.cell
        # telling the stop apart waits for the state, the driver and its recovery (seconds): the
        # episode says it is alive meanwhile, or the progression manager takes it for silent
        with heartbeat(lambda: feedback("settling the stop", end.steps), 0.5):
            stop = settle_unexplained(
                end.stop, self.arm, cell.restore_state, cell.report.last_motion_errors, cell.driver_alive
            )
        return trial_result(setup, dataclasses.replace(end, stop=stop))


def main() -> int:
    return run_node(Fr3Runner)


if __name__ == "__main__":
    raise SystemExit(main())
