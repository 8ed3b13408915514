"""The progression manager's calls to the world, made from the campaign thread while the
executor keeps spinning: prepare a trial (/indgen/prepare_trial: on the real robot, the reset
before the person builds the scene) and run its episode (the RunEpisode action), each asked
again when DDS loses a request or its reply right after discovery, each ending in an aborted
trial (run again, never failed) when the world does not answer, answers too late, or goes
silent mid-episode. The world's prepare reply also says whether it is physical: from then on
every scene waits for the operator and every episode is labelled."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from builtin_interfaces.msg import Time

from indgen_core import records, topics
from indgen_core.nodes import messages
from indgen_core.nodes.interfaces import ProgressionManagerParameters
from indgen_core.records import Outcome, TrialResult
from indgen_core.ros import convert
from indgen_core.ros.waits import wait_future, wait_result, wait_server
from indgen_core.waiting import wait_until
from indgen_msgs.action import RunEpisode
from indgen_msgs.msg import CampaignStatus
from indgen_msgs.srv import PrepareTrial

#: while the world waits for the person (the soft e-stop held, a stop to acknowledge), ask it
#: again this often (an instant answer)
ESTOP_POLL_S = 0.5


class WorldLink:
    """The progression manager's RunEpisode client (`world`) and PrepareTrial client
    (`prepare_client`), with the goal in flight, when the world last gave feedback, and whether
    it needs the operator. Handed what it uses, not the node: the clients, the node's
    parameters, its clock (`now`, a stamp), its logger, its stop and its status publisher."""

    def __init__(
        self,
        world,
        prepare_client,
        parameters: ProgressionManagerParameters,
        now: Callable[[], Time],
        log,
        stop: threading.Event,
        status,
    ):
        self.world, self.prepare_client, self._now, self.log = world, prepare_client, now, log
        self.p = parameters
        self._stop = stop
        self._status = status
        self.needs_operator = False  # the world said it is physical (its prepare reply)
        self.last_feedback = 0.0
        self.phase = ""  # the world's latest feedback phase
        self.attempt: object | None = None  # whose feedback counts: the latest attempt's
        self.goal = None

    @property
    def with_operator(self) -> bool:
        return self.p.wait_for_operator or self.needs_operator

    def run_episode(self, setup: records.TaskSetup) -> TrialResult:
        started = time.monotonic()

        def aborted(reason: str) -> TrialResult:
            return TrialResult(setup.trial_id, Outcome.ABORTED, reason, wall_time_s=time.monotonic() - started)

        if not wait_server(self.world, self.p.server_wait_s, stop=self._stop):
            return aborted(f"world not answering: no RunEpisode server on {topics.RUN_EPISODE}")
        goal = RunEpisode.Goal(setup=convert.setup_to_msg(setup, self._now()))
        handles = []
        # every episode starts with its reset; set before the goal goes, so that feedback that
        # comes before the goal's acceptance is seen (a world that has reset already: "running")
        self.phase = "resetting"
        attempt = self.attempt = object()  # an abandoned attempt's goal may still send feedback: not ours

        def on_feedback(feedback) -> None:
            if self.attempt is attempt:
                self._feedback(feedback)

        def acknowledged() -> bool:
            # right after discovery DDS can lose a goal response; the bridge attaches a resent
            # goal for the same trial to the running episode, so resending (every 2 s) is safe
            if not self._stop.is_set():
                future = self.world.send_goal_async(goal, feedback_callback=on_feedback)
                if wait_future(future, 2.0, stop=self._stop):
                    handles.append(future.result())
            return bool(handles)

        if not wait_until(acknowledged, self.p.server_wait_s, poll=0, stop=self._stop):
            return aborted("world not answering: the episode goal was never acknowledged")
        handle = handles[0]
        if not handle.accepted:
            return aborted("the world rejected the episode goal (busy with another trial)")
        self.goal = handle
        self.last_feedback = time.monotonic()

        def allowed() -> float:
            if self.phase == "resetting":
                return max(self.p.world_silence_s, self.p.reset_silence_s)
            return self.p.world_silence_s

        def silent() -> bool:
            return self.p.world_silence_s > 0 and time.monotonic() - self.last_feedback > allowed()

        response = wait_result(handle, self.p.episode_timeout_s, stop=lambda: self._stop.is_set() or silent())
        if response is None:
            handle.cancel_goal_async()
            self.goal = None
            limit = self.p.episode_timeout_s
            if self._stop.is_set():
                return aborted("stopped")
            if silent():
                return aborted(f"the world went silent mid-episode (no feedback for {allowed():g} s, {self.phase})")
            return aborted(f"world did not finish within {limit} s")
        self.goal = None
        result = messages.result_from_msg(response.result.result)
        if result.trial_id != setup.trial_id:
            return aborted(f"the world answered for trial '{result.trial_id}'")
        return result

    def prepare(self, setup: records.TaskSetup) -> tuple[bool, str]:
        """Ask the world to get ready (the real robot: reset pose) before the person builds
        the scene; worlds without /indgen/prepare_trial need nothing."""
        if not wait_server(self.prepare_client, self.p.server_wait_s if self.with_operator else 0.5, stop=self._stop):
            return (False, f"no {topics.PREPARE_TRIAL} service") if self.with_operator else (True, "")
        request = PrepareTrial.Request(setup=convert.setup_to_msg(setup, self._now()))
        self._status(CampaignStatus.STATE_RUNNING, f"preparing {setup.trial_id}")
        response = self._ask_prepare(request)
        while (
            response is not None
            and (response.estop_engaged or response.waiting_for_operator)
            and not self._stop.is_set()
        ):
            # the person holds the e-stop, or is to acknowledge a stop before the robot is
            # re-enabled: wait with them, then ask again; not an attempt
            self._status(CampaignStatus.STATE_WAITING, f"{response.message} ({setup.trial_id} waits)")
            if wait_until(self._stop.is_set, ESTOP_POLL_S):
                break
            response = self._ask_prepare(request)
        if response is None:
            # a reset that hangs, or a world that never answers: the trial is re-run
            return False, f"no answer to the prepare request within {self.p.prepare_timeout_s:g} s"
        if response.needs_operator and not self.needs_operator:
            self.needs_operator = True
            self.log.info(
                "the world is physical: every scene waits for the operator, every episode is "
                "labelled (run `indgen console` in another terminal)"
            )
        return bool(response.ready), response.message

    def _ask_prepare(self, request):
        """The world's answer, or None when none came within prepare_timeout_s. Right after
        discovery DDS can lose a request or its reply: ask again every prepare_retry_s (a world
        answers a repeat for a prepared trial at once, without moving)."""
        deadline = time.monotonic() + self.p.prepare_timeout_s
        calls = []

        def answered() -> bool:
            calls.append(self.prepare_client.call_async(request))
            retry = min(max(self.p.prepare_retry_s, 0.1), deadline - time.monotonic())
            return wait_until(lambda: any(c.done() for c in calls), retry, poll=0.005, stop=self._stop)

        if not wait_until(answered, self.p.prepare_timeout_s, poll=0, stop=self._stop):
            return None
        return next(c for c in calls if c.done()).result()

    def _feedback(self, feedback) -> None:
        fb = feedback.feedback
        self.last_feedback, self.phase = time.monotonic(), str(fb.phase)[:32]
        self.log.debug(f"{fb.phase}: step {fb.step}/{fb.max_steps}")
