"""A scripted person at the robot for the real-robot tests: registers as an operating console
on /indgen/operator_register and answers prompts through /indgen/operator_ack, the same
interfaces `indgen console` uses. Before saying "scene ready" it builds the scene (on the
stand-in: /indgen/sim/stand_in/build_scene, what a person's hands do); labels come from a
script, one per episode, in order. When the robot stopped and waits for the operator before it
re-enables torque control (/indgen/robot_status), it acknowledges on /indgen/acknowledge_stop,
as the console's `a` does (unless `acknowledge` is False)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from indgen_core.ros.base import LATCHED
from indgen_core.ros.waits import call


class ScriptedOperator:
    def __init__(self, context, labels: list[str | tuple[str, float, str]] | Callable | None = None,
                 build_scene: bool = True, name: str = "scripted", end_when_placed: bool = True,
                 acknowledge: bool = True):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        from indgen_msgs.msg import OperatorPrompt
        from indgen_msgs.srv import OperatorAck, OperatorRegister

        self.Ack, self.Register, self.Prompt, self.Trigger = OperatorAck, OperatorRegister, OperatorPrompt, Trigger
        self.node = rclpy.create_node(f"operator_{name}", context=context)
        self.labels = labels if labels is not None else []
        self.build = build_scene
        self.prompts: list = []
        self.answers: list[tuple[str, str, bool, str]] = []  # (kind, response, accepted, message)
        self.session = ""
        self.console_id = f"{name}-{id(self)}"
        self._latest = None
        self._scene = -1
        self._done_ids: set[str] = set()
        self.node.create_subscription(OperatorPrompt, "/indgen/operator_prompt", self._on_prompt, LATCHED)
        self.ack = self.node.create_client(OperatorAck, "/indgen/operator_ack")
        self.register_client = self.node.create_client(OperatorRegister, "/indgen/operator_register")
        self.scene = self.node.create_client(Trigger, "/indgen/sim/stand_in/build_scene")
        self.end = self.node.create_client(Trigger, "/indgen/end_episode")
        self.end_when_placed = end_when_placed
        self.stand_in: dict = {}
        self.ended: list[str] = []
        from std_msgs.msg import String

        self.node.create_subscription(String, "/indgen/sim/stand_in/status", self._on_stand_in, LATCHED)
        from indgen_msgs.msg import RobotStatus

        self.acknowledge = acknowledge
        self.acknowledged: list[str] = []  # the robot's message each acknowledgement answered
        self.robot_status = None
        self.node.create_subscription(RobotStatus, "/indgen/robot_status", self._on_robot, LATCHED)
        self.ack_stop = self.node.create_client(Trigger, "/indgen/acknowledge_stop")
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._spin = threading.Thread(target=self._spinner, daemon=True)
        self._spin.start()
        self._work = threading.Thread(target=self._loop, daemon=True)
        self._work.start()

    def _spinner(self):
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def _on_stand_in(self, msg):
        import json

        self.stand_in = json.loads(msg.data)

    def _maybe_end(self):
        """Like a person pressing space once the task is visibly done (the stand-in's check)."""
        s = self.stand_in
        if (self.end_when_placed and s.get("placed") and s.get("scenes") == self._scene
                and self._scene not in self.ended):
            reply = self._call(self.end, self.Trigger.Request(), 2.0)
            if reply is not None and reply.success:
                self.ended.append(self._scene)

    def _on_robot(self, msg):
        self.robot_status = msg

    def _maybe_acknowledge(self):
        """Like a person who checked the arm is clear and pressed `a`."""
        status = self.robot_status
        if self.acknowledge and status is not None and status.awaiting_acknowledgement:
            reply = self._call(self.ack_stop, self.Trigger.Request(), 5.0)
            if reply is not None and reply.success:
                self.acknowledged.append(status.message)
                self.robot_status = None  # wait for the next status before acknowledging again

    def _on_prompt(self, msg):
        self.prompts.append(msg)
        self._latest = msg

    def _call(self, client, request, timeout=10.0):
        return call(client, request, timeout, stop=self._stop, attempt_s=3.0)

    def _register(self):
        while not self.session and not self._stop.is_set():
            reply = self._call(self.register_client, self.Register.Request(
                console_id=self.console_id, operator_name="ada", role=self.Register.Request.ROLE_OPERATE), 5.0)
            if reply is not None and reply.accepted:
                self.session = reply.session

    def _next_label(self, prompt):
        if callable(self.labels):
            return self.labels(prompt)
        done = sum(1 for kind, *_ in self.answers if kind == "label")
        return self.labels[done] if done < len(self.labels) else "success"

    def _loop(self):
        self._register()
        while not self._stop.is_set():
            prompt = self._latest
            self._maybe_acknowledge()
            if prompt is None or not prompt.prompt_id or prompt.prompt_id in self._done_ids:
                self._maybe_end()
                self._stop.wait(0.05)  # a person looks at the screen now and then
                continue
            self._done_ids.add(prompt.prompt_id)
            request = self.Ack.Request(prompt_id=prompt.prompt_id, campaign_id=prompt.campaign_id,
                                       trial_id=prompt.trial_id, console_id=self.console_id, session=self.session,
                                       operator_name="ada")
            if prompt.kind == self.Prompt.KIND_SETUP:
                if self.build:
                    self._call(self.scene, self.Trigger.Request())
                    self._scene = self.stand_in.get("scenes", 0) + 1  # the scene just built
                request.response, kind = self.Ack.Request.RESPONSE_DONE, "setup"
            elif prompt.kind == self.Prompt.KIND_LABEL:
                label = self._next_label(prompt)
                name, score, note = (label, -1.0, "") if isinstance(label, str) else label
                request.response = {"success": 1, "failure": 2, "invalid": 3}[name]
                request.partial_score, request.note, kind = float(score), note, "label"
            else:
                continue
            reply = self._call(self.ack, request)
            if reply is not None and not reply.accepted and "registered" in reply.message:
                self.session = ""  # a new progression manager (relaunched): join it again, answer again
                self._register()
                request.session = self.session
                reply = self._call(self.ack, request)
            self.answers.append((kind, str(request.response), bool(reply and reply.accepted),
                                 reply.message if reply else "no reply"))

    def close(self):
        self._stop.set()
        self._work.join(5)
        self._spin.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
