"""The console's side of the graph: a ROS node that keeps a ConsoleModel current from what the
campaign publishes, and sends what the person decides. It joins the running campaign on
/indgen/operator_register (again when the progression manager was restarted) and reads the
prompt open now from the reply, so a console started in the middle of a prompt shows it.

Subscribes (all but the ticks latched, so a late console sees the present at once):
/indgen/operator_prompt, /indgen/campaign_status, /indgen/task_setup, /indgen/level_score,
/indgen/policy_status, /indgen/robot_status, /indgen/control_tick. Calls /indgen/operator_ack,
/indgen/estop (std_srvs/SetBool), /indgen/end_episode and /indgen/acknowledge_stop
(std_srvs/Trigger).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import SetBool, Trigger

from indgen_core import topics
from indgen_core.campaign import operator as op
from indgen_core.ros.base import LATCHED, LEVEL_SCORES, LOCKSTEP, subscribe
from indgen_core.ros.waits import call
from indgen_msgs.msg import (
    CampaignStatus,
    ControlTick,
    LevelScore,
    OperatorPrompt,
    PolicyStatus,
    RobotStatus,
    TaskSetup,
)
from indgen_msgs.srv import OperatorAck, OperatorRegister
from indgen_robot.console import model as m

CAMPAIGN_STATES = {
    CampaignStatus.STATE_PLANNED: "planned",
    CampaignStatus.STATE_RUNNING: "running",
    CampaignStatus.STATE_WAITING: "waiting",
    CampaignStatus.STATE_DONE: "done",
    CampaignStatus.STATE_CANCELLED: "stopped",
    CampaignStatus.STATE_FAILED: "failed",
}
ROBOT_STATES = {
    RobotStatus.STATE_IDLE: "idle",
    RobotStatus.STATE_RESETTING: "resetting",
    RobotStatus.STATE_READY: "ready",
    RobotStatus.STATE_RUNNING: "running",
    RobotStatus.STATE_HOLDING: "holding",
    RobotStatus.STATE_ESTOP: "E-STOP",
}
VERDICTS = {
    LevelScore.VERDICT_UNDECIDED: "undecided",
    LevelScore.VERDICT_HELD: "held",
    LevelScore.VERDICT_BROKEN: "BROKEN",
}


class ConsoleLink:
    def __init__(self, model: m.ConsoleModel, context=None, watch: bool = False):
        self.model = model
        self.lock = threading.RLock()
        self.console_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.role = OperatorRegister.Request.ROLE_WATCH if watch else OperatorRegister.Request.ROLE_OPERATE
        self.session = ""
        self.context = context
        self.node = rclpy.create_node(f"console_{uuid.uuid4().hex[:8]}", context=context)
        n = self.node
        subscribe(n, OperatorPrompt, topics.OPERATOR_PROMPT, self._on_prompt, LATCHED)
        subscribe(n, CampaignStatus, topics.CAMPAIGN_STATUS, self._on_status, LATCHED)
        subscribe(n, TaskSetup, topics.TASK_SETUP, self._on_setup, LATCHED)
        subscribe(n, LevelScore, topics.LEVEL_SCORE, self._on_score, LEVEL_SCORES)
        subscribe(n, PolicyStatus, topics.POLICY_STATUS, self._on_policy, LATCHED)
        subscribe(n, RobotStatus, topics.ROBOT_STATUS, self._on_robot, LATCHED)
        subscribe(n, ControlTick, topics.CONTROL_TICK, self._on_tick, LOCKSTEP)
        self.ack = n.create_client(OperatorAck, topics.OPERATOR_ACK)
        self.register_client = n.create_client(OperatorRegister, topics.OPERATOR_REGISTER)
        self.estop = n.create_client(SetBool, topics.ESTOP)
        self.end = n.create_client(Trigger, topics.END_EPISODE)
        self.acknowledge = n.create_client(Trigger, topics.ACKNOWLEDGE_STOP)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(n)
        self._stop = threading.Event()
        self._ticks: list[float] = []
        self._prompt_stamp = (0, 0)  # of the prompt shown
        self._last_tick = 0.0
        self._spinner = threading.Thread(target=self._spin, name="console-ros", daemon=True)
        self._spinner.start()
        threading.Thread(target=self._keep_registered, name="console-register", daemon=True).start()

    # -- the graph's news ------------------------------------------------------------------------------
    def _spin(self) -> None:
        while not self._stop.is_set():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # the context is shutting down
                return

    def _prompt_from(self, msg) -> m.Prompt | None:
        if not msg.prompt_id:
            return None
        return m.Prompt(
            kind=msg.kind,
            prompt_id=msg.prompt_id,
            trial_id=msg.trial_id,
            level=msg.level,
            text=msg.text,
            detail=msg.detail,
            reference_image=msg.reference_image,
            previous_trial_id=msg.previous_trial_id,
            auto_outcome=msg.auto_outcome,
        )

    def _on_prompt(self, msg: OperatorPrompt) -> None:
        with self.lock:
            # the prompt comes two ways, the latched topic and the registration reply; a reply
            # made before the latest prompt opened can arrive after it: the older never wins
            stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
            if stamp < self._prompt_stamp:
                return
            self._prompt_stamp = stamp
            prompt = self._prompt_from(msg)
            if prompt is None or prompt.prompt_id != getattr(self.model.prompt, "prompt_id", None):
                self.model.number = ""
                if self.model.mode is m.RELABEL:
                    self.model.mode = None
            self.model.prompt = prompt
            if msg.kind == op.INFO and msg.text:
                self.model.message = msg.text[:300]

    def _on_status(self, msg: CampaignStatus) -> None:
        with self.lock:
            if msg.campaign_id != self.model.campaign and self.model.campaign:
                self.model.levels.clear()
            self.model.campaign = msg.campaign_id
            self.model.campaign_state = CAMPAIGN_STATES.get(msg.state, str(msg.state))
            self.model.campaign_message = msg.message[:200]
            self.model.trials_done, self.model.trials_total = msg.trials_done, msg.trials_total

    def _on_setup(self, msg: TaskSetup) -> None:
        with self.lock:
            self.model.policy, self.model.axis, self.model.world = msg.policy, msg.axis, msg.world
            self.model.level, self.model.trial_id = msg.level, msg.trial_id
            self.model.parameters = ", ".join(f"{p.name}={p.value:g} {p.unit}" for p in msg.parameters)

    def _on_score(self, msg: LevelScore) -> None:
        with self.lock:
            self.model.levels[(msg.policy, msg.level)] = {
                "n": msg.n,
                "successes": msg.successes,
                "rate": msg.rate,
                "ci": (msg.ci_low, msg.ci_high),
                "verdict": VERDICTS.get(msg.verdict, "?"),
                "id": msg.in_distribution,
                "hidden": msg.rates_hidden,
            }

    def _on_policy(self, msg: PolicyStatus) -> None:
        with self.lock:
            self.model.policy_connected, self.model.policy_message = msg.connected, msg.message[:120]

    def _on_robot(self, msg: RobotStatus) -> None:
        with self.lock:
            self.model.robot_state = ROBOT_STATES.get(msg.state, str(msg.state))
            self.model.robot_message = msg.message[:160]
            self.model.estop = msg.estop
            self.model.awaiting_acknowledgement = msg.awaiting_acknowledgement
            self.model.episode_running = msg.state == RobotStatus.STATE_RUNNING
            if msg.tick_rate_hz > 0:
                self.model.tick_rate = msg.tick_rate_hz

    def _on_tick(self, msg: ControlTick) -> None:
        now = time.monotonic()
        with self.lock:
            if msg.step == 0 or self.model.episode_started is None or msg.trial_id != self.model.trial_id:
                self.model.episode_started = now
                self._ticks.clear()
            self._ticks.append(now)
            del self._ticks[:-16]
            if len(self._ticks) > 1:
                self.model.tick_rate = (len(self._ticks) - 1) / (self._ticks[-1] - self._ticks[0])
            self.model.step = msg.step
            self._last_tick = self.model.episode_last_tick = now
            if not msg.wall_clock:  # the simulated world has no robot status: ticks say an episode runs
                self.model.episode_running = True

    def refresh(self) -> None:
        """Facts that no message brings: a simulated episode is over when its ticks stop, and a
        node that left the graph (the launch ended, a crash) leaves its last latched status
        behind, which is no longer true (the screen said "policy server: connected" after the
        graph had exited)."""
        count = self.node.count_publishers
        with self.lock:
            if self.model.robot_state == "" and time.monotonic() - self._last_tick > 1.0:
                self.model.episode_running = False
            if self.model.policy_connected is not None and count(topics.POLICY_STATUS) == 0:
                self.model.policy_connected, self.model.policy_message = None, "no policy node on the graph"
            if self.model.robot_state not in ("", "unknown") and count(topics.ROBOT_STATUS) == 0:
                self.model.robot_state, self.model.robot_message = "unknown", "no robot node on the graph"
                self.model.episode_running = self.model.estop = self.model.awaiting_acknowledgement = False
            if self.model.campaign and not self.model.campaign_gone and count(topics.CAMPAIGN_STATUS) == 0:
                self.model.campaign_gone = True
                self.model.prompt = None  # nobody is left to take its answer
            elif self.model.campaign_gone and count(topics.CAMPAIGN_STATUS) > 0:
                self.model.campaign_gone = False  # a progression manager is back (a restart)

    # -- joining the campaign --------------------------------------------------------------------------
    def _call(self, client, request, timeout: float = 5.0):
        return call(client, request, timeout, stop=self._stop)

    def register(self) -> bool:
        reply = self._call(
            self.register_client,
            OperatorRegister.Request(console_id=self.console_id, operator_name=self.model.operator, role=self.role),
        )
        if reply is None or not reply.accepted:
            return False
        with self.lock:
            self.session = reply.session
            self.model.campaign = reply.campaign_id or self.model.campaign
            self._on_prompt(reply.prompt)  # the prompt open now, if any
        return True

    def _keep_registered(self) -> None:
        while not self._stop.is_set():
            if not self.session and not self.register():
                with self.lock:
                    if not self.model.campaign:
                        self.model.message = "waiting for a campaign (is `indgen launch` running?)"
            self._stop.wait(1.0)

    # -- what the person decided -----------------------------------------------------------------------
    def send(self, requests: list) -> None:
        """Send in the background: the screen never waits for the network."""
        for request in requests:
            threading.Thread(target=self._send_one, args=(request,), daemon=True).start()

    def _send_one(self, request) -> None:
        text = self._deliver(request)
        if text:
            with self.lock:
                self.model.message = text

    def _deliver(self, request) -> str:
        if isinstance(request, m.EStop):
            reply = self._call(self.estop, SetBool.Request(data=request.engaged))
            if reply is None:
                return (
                    "NO ANSWER from /indgen/estop: use the hardware e-stop"
                    if request.engaged
                    else "no answer from /indgen/estop"
                )
            if reply.success:
                with self.lock:
                    self.model.estop = request.engaged
            return reply.message
        if isinstance(request, m.EndEpisode):
            reply = self._call(self.end, Trigger.Request())
            return "no answer from /indgen/end_episode" if reply is None else reply.message
        if isinstance(request, m.AcknowledgeStop):
            reply = self._call(self.acknowledge, Trigger.Request())
            return f"no answer from {topics.ACKNOWLEDGE_STOP}" if reply is None else reply.message
        ack = OperatorAck.Request(console_id=self.console_id, operator_name=self.model.operator)
        if isinstance(request, m.Answer):
            ack.prompt_id, ack.response = request.prompt_id, request.response
            ack.partial_score, ack.note = request.partial_score, request.note
        elif isinstance(request, m.Relabel):
            ack.response, ack.trial_id, ack.label = op.RELABEL, request.trial_id, request.label
            ack.partial_score, ack.note = request.partial_score, request.note
        elif isinstance(request, m.Pause):
            ack.response = op.PAUSE
        for _ in range(2):
            ack.session = self.session
            reply = self._call(self.ack, ack)
            if reply is None:
                return "no answer from the progression manager; the answer was not taken"
            if not reply.accepted and "registered" in reply.message:
                self.session = ""  # the progression manager was restarted: join it again
                self.register()
                continue
            return reply.message if reply.accepted else f"refused: {reply.message}"
        return "refused: could not join the campaign"

    def close(self) -> None:
        self._stop.set()
        self._spinner.join(timeout=1.0)  # out of spin_once before the executor goes
        self.executor.shutdown()
        self.node.destroy_node()


def run_console(model: m.ConsoleModel, watch: bool = False) -> int:
    """`indgen console`: rclpy up, the link on the graph, the terminal app until it ends."""
    from indgen_robot.console import app

    rclpy.init()
    link = ConsoleLink(model, watch=watch)
    try:
        return app.run(model, link)
    finally:
        link.close()
        rclpy.try_shutdown()
