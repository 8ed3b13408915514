"""progression_manager: runs a campaign's plan over the node graph.

For each pending trial (in plan order, resuming from the results store) it publishes the task
setup tau_k, an operator prompt where the axis has one (and waits for the operator's
acknowledgement when asked to), sends the RunEpisode goal to the world, relays feedback, and
hands the result to the scorer on /indgen/episode_result. The next trial starts only once the
scorer, the one writer of results, answers that it committed it (/indgen/result_committed).
A world that does not answer in time makes the trial aborted (never failed): it runs again
after a backoff, and the campaign waits as long as it takes for the world or the policy server
to come back. A world that goes silent mid-episode
(no feedback for world_silence_s, reset_silence_s while it says it is resetting: it was killed
or hangs) aborts the trial the same way.

Only this campaign's nodes count: the results and statuses it publishes are signed with the
campaign's key from the results store (auth.py), and an operator answer is accepted only for
the prompt open now, from a console that registered on /indgen/operator_register.

Parameters and endpoints: indgen_core/nodes/interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import contextlib
import json
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger

from indgen_core import records, topics
from indgen_core.campaign import blind, operator, routes
from indgen_core.campaign import planning as campaign_mod
from indgen_core.campaign.operator_flow import OperatorFlow
from indgen_core.campaign.runner import TooManyAborts, run_campaign
from indgen_core.campaign.source import plan_or_resume
from indgen_core.errors import IndGenError
from indgen_core.nodes import messages
from indgen_core.nodes.interfaces import PROGRESSION_MANAGER_ENDPOINTS
from indgen_core.nodes.interfaces import ProgressionManagerParameters as Parameters
from indgen_core.records import Outcome, TrialResult
from indgen_core.ros import convert
from indgen_core.ros.base import LATCHED, RELIABLE, read_parameters, run_node, serve, subscribe
from indgen_core.ros.waits import ActionClient
from indgen_core.ros.world_link import WorldLink
from indgen_core.store import ResultsStore
from indgen_core.waiting import Acknowledgements, wait_until
from indgen_msgs.action import RunEpisode
from indgen_msgs.msg import CampaignStatus, EpisodeResult, OperatorAnswer, OperatorPrompt, TaskSetup
from indgen_msgs.srv import OperatorAck, OperatorRegister, PrepareTrial


class ProgressionManager(Node):
    ENDPOINTS = PROGRESSION_MANAGER_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("progression_manager")
        self.p = read_parameters(self, Parameters)
        self.store = ResultsStore(self.p.db or None)
        self._failed = False  # the campaign ended on an error its status explains (not an interruption)
        self.record = plan_or_resume(self.store, self.p, self.get_logger())
        key = self.store.campaign_key(self.record.id)
        assert key is not None, "the campaign was just planned or resumed from this store"
        self.key = key
        self.group = ReentrantCallbackGroup()
        self.setup_pub = self.create_publisher(TaskSetup, topics.TASK_SETUP, LATCHED)
        self.prompt_pub = self.create_publisher(OperatorPrompt, topics.OPERATOR_PROMPT, LATCHED)
        self.result_pub = self.create_publisher(EpisodeResult, topics.EPISODE_RESULT, RELIABLE)
        self.status_pub = self.create_publisher(CampaignStatus, topics.CAMPAIGN_STATUS, LATCHED)
        # which policy server answers which policy (by the name the setups carry): the campaign's
        # endpoints, answered on request; the topic says only that there are routes to fetch
        self.routes_srv = serve(self, Trigger, topics.GET_POLICY_ROUTES, self._on_get_routes)
        self.routes_pub = self.create_publisher(String, topics.POLICY_ROUTES, LATCHED)
        self.routes_pub.publish(String(data=routes.notice_message(self.record, time.time_ns())))
        self.world = ActionClient(self, RunEpisode, topics.RUN_EPISODE, callback_group=self.group)
        self.ack_srv = serve(self, OperatorAck, topics.OPERATOR_ACK, self._on_ack, callback_group=self.group)
        self.answer_pub = self.create_publisher(OperatorAnswer, topics.OPERATOR_ANSWER, RELIABLE)
        self.register_srv = serve(
            self, OperatorRegister, topics.OPERATOR_REGISTER, self._on_register, callback_group=self.group
        )
        self.prepare_client = self.create_client(PrepareTrial, topics.PREPARE_TRIAL, callback_group=self.group)
        self._recorder_steady = threading.Event()
        self._recorder_waited = False
        self._answers: Acknowledgements[dict[str, str]] = (
            Acknowledgements()
        )  # the scorer's answers to results, by attempt key
        subscribe(self, String, topics.RESULT_COMMITTED, self._on_answer, RELIABLE, callback_group=self.group)
        self._report_written = threading.Event()
        subscribe(self, String, topics.REPORT_WRITTEN, self._on_report_written, LATCHED, callback_group=self.group)
        if self.p.recorder:
            subscribe(self, String, topics.RECORDER_STATUS, self._on_recorder, LATCHED, callback_group=self.group)
        self._open_prompt = OperatorPrompt()
        self._prompt_trials: dict[str, str] = {}  # prompt_id -> trial_id, the recent prompts (answers name no trial)
        self._stop = threading.Event()
        self.world_link = WorldLink(
            self.world,
            self.prepare_client,
            self.p,
            lambda: self.get_clock().now().to_msg(),
            self.get_logger(),
            self._stop,
            self._status,
        )
        self.flow = OperatorFlow(self)
        self._current: records.TaskSetup | None = None
        self._done = 0
        self._total = len(self.store.planned_trials(self.record.id))
        self._thread = threading.Thread(target=self._run, name="campaign", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self.world_link.goal is not None:
            with contextlib.suppress(Exception):
                self.world_link.goal.cancel_goal_async()
        self._thread.join(timeout=5.0)
        self._mark_interrupted()

    def _mark_interrupted(self) -> None:
        """A campaign the node leaves unfinished (Ctrl-C, SIGTERM, its launcher gone) says so in
        the store, with how to go on (else it would say `running` for good). Its own connection: the
        campaign thread may still hold the node's (a commit it waits for)."""
        with contextlib.suppress(Exception), ResultsStore(self.store.path) as store:
            record = store.campaign(self.record.id)
            pending = len(store.pending_trials(record.id))
            unfinished = record.status in ("running", "waiting", "stopped") and pending
            if unfinished and not self.flow.stopped_by and not self._failed:
                message = (
                    f"interrupted with {pending} trials pending; launch again with campaign_id:={record.id} to resume"
                )
                store.set_status(record.id, "interrupted", message)
                self.get_logger().info(f"campaign {record.id} {message}")

    # -- the campaign loop (its own thread; the executor keeps spinning callbacks) --------------
    def _run(self) -> None:
        if self.p.wait_for_operator:
            self.get_logger().info("a person answers every prompt: run `indgen console` in another terminal")
        try:
            self._status(CampaignStatus.STATE_RUNNING, "started")
            summary = run_campaign(
                self.store,
                self.record.id,
                self._execute,
                progress=self._progress,
                max_consecutive_aborts=0,
                abort_backoff_s=self.p.abort_backoff_s,
                commit=self._commit,
                should_stop=self._stop.is_set,
                on_wait=self._waiting,
                max_aborts_per_trial=self.p.max_aborts_per_trial,
                blind_view=True,
            )
        except CampaignInterrupted as exc:
            self.get_logger().info(str(exc))
            return  # close() marks the campaign interrupted
        except TooManyAborts as exc:  # a fault that keeps coming back: a person must look
            self._failed = True
            self.get_logger().error(str(exc))
            self._status(CampaignStatus.STATE_FAILED, str(exc))
            self.request_exit(1)
            return
        except Exception as exc:  # a broken store, a scorer that never commits: stop safely
            self._failed = True
            self.get_logger().error(f"campaign {self.record.id} stopped: {exc}")
            self._status(CampaignStatus.STATE_FAILED, str(exc))
            self.request_exit(1)
            return
        if summary.remaining == 0:
            self.get_logger().info(
                f"campaign {self.record.id} done: {summary.ran} trials run, "
                f"{summary.aborted_attempts} aborted attempts re-run"
            )
            self._status(CampaignStatus.STATE_DONE, "done")
            if self.p.exit_when_done:
                # the graph goes when this node goes: first the scorer's word that the report is
                # written (a shutdown while the scorer writes it cuts the report off)
                if not wait_until(self._report_written.is_set, self.p.report_wait_s, poll=0.1, stop=self._stop.is_set):
                    self.get_logger().warning(
                        f"no word from the scorer that the report of {self.record.id} is written within "
                        f"{self.p.report_wait_s:g} s (`indgen report {self.record.id}` writes it)"
                    )
                self.request_exit(0)
        else:
            self._status(CampaignStatus.STATE_CANCELLED, f"stopped with {summary.remaining} trials pending")
            if self.flow.stopped_by and self.p.exit_when_done:
                self.get_logger().info(
                    f"campaign {self.record.id} stopped by {self.flow.stopped_by} with "
                    f"{summary.remaining} trials pending; launch it again with campaign_id:="
                    f"{self.record.id} to resume"
                )
                time.sleep(1.0)
                self.request_exit(0)

    def _on_report_written(self, msg: String) -> None:
        data = json.loads(msg.data)  # (the guard drops a message that is not JSON)
        if isinstance(data, dict) and data.get("campaign_id") == self.record.id:
            if data.get("error"):
                self.get_logger().warning(f"the report of {self.record.id} was not written: {data['error']}")
            self._report_written.set()

    def _on_recorder(self, msg: String) -> None:
        if json.loads(msg.data).get("steady") is True:  # (the guard drops a status that is not JSON)
            self._recorder_steady.set()
        else:
            self._recorder_steady.clear()

    def _wait_for_recorder(self, setup: records.TaskSetup) -> None:
        if not self.p.recorder:
            return
        wait = 2.0 if self._recorder_waited else self.p.recorder_wait_s
        self._recorder_waited = True
        if not self._recorder_steady.wait(wait):
            self.get_logger().warning(
                f"the recorder has not settled on the graph's topics within {wait:.0f} s: "
                f"the bag may miss the start of {setup.trial_id}"
            )

    def _execute(self, setup: records.TaskSetup) -> TrialResult:
        self._current = setup
        self._wait_for_recorder(setup)
        now = self.get_clock().now().to_msg()
        self.setup_pub.publish(convert.setup_to_msg(setup, now))
        self.flow.before_trial(setup)
        ready, message = self.world_link.prepare(setup)
        if not ready:
            return TrialResult(setup.trial_id, Outcome.ABORTED, f"the world is not ready: {message}")
        if self._with_operator:
            skipped = self.flow.setup_prompt(setup)
            if skipped is not None:
                self.flow.after_trial(setup, skipped)
                return skipped
        elif setup.operator_instruction:
            self.publish_prompt(None, trial=setup)
        self._status(CampaignStatus.STATE_RUNNING, f"running {setup.trial_id}")
        result = self.world_link.run_episode(setup)
        if result.outcome.final and (result.details.get("judged") is False or self.p.operator_labels):
            result = self.flow.label(setup, result)
        self.flow.after_trial(setup, result)
        return result

    def _commit(self, result: TrialResult) -> bool:
        """Hand the result to the scorer, the one writer of results, and wait for its answer."""
        setup = self._current
        if setup is None or setup.trial_id != result.trial_id:  # an attempt an earlier run left unfinished
            (trial,) = [t for t in self.store.planned_trials(self.record.id) if t.trial_id == result.trial_id]
            setup = campaign_mod.setup_for(self.record, trial, blind_view=True)
        msg = messages.sign(convert.result_to_msg(result, setup, self.get_clock().now().to_msg()), self.key)
        answer = self._hand_over(msg, msg.signature)
        if answer is None:
            if self._stop.is_set():  # shutting down: the scorer commits it if it can; resume runs it if not
                raise CampaignInterrupted(f"stopped while trial {result.trial_id}'s result was being committed")
            raise IndGenError(
                f"the scorer did not answer trial {result.trial_id}'s result within {self.p.commit_timeout_s} s "
                f"(is the scorer node running with db={self.store.path}?)"
            )
        if answer["status"] == messages.REFUSED:
            raise IndGenError(f"the scorer refused trial {result.trial_id}'s result: {answer['reason']}")
        return result.outcome.final

    def _hand_over(self, msg: EpisodeResult, key: str) -> dict[str, str] | None:
        """Publish `msg` until the scorer answers it (once a second: a scorer that starts late, or
        restarts, gets it again and answers `repeated` for what it already has), or None after
        commit_timeout_s or a stop."""
        deadline = time.monotonic() + self.p.commit_timeout_s
        while not self._stop.is_set() and time.monotonic() < deadline:
            self.result_pub.publish(msg)
            answer = self._answers.wait(key, min(1.0, max(deadline - time.monotonic(), 0.0)))
            if answer is not None:
                return answer
        return None

    def _on_answer(self, msg: String) -> None:
        answer = messages.read_commit_answer(msg.data)
        if answer is not None and answer["campaign_id"] == self.record.id and answer["key"]:
            self._answers.put(answer["key"], answer)

    # -- operator (operator_flow.py) ---------------------------------------------------------------
    def publish_prompt(self, prompt: operator.Prompt | None, trial: records.TaskSetup | None = None, **extra) -> None:
        msg = OperatorPrompt(kind=operator.INFO, campaign_id=self.record.id)
        if prompt is not None:
            msg = OperatorPrompt(
                kind=prompt.kind,
                prompt_id=prompt.prompt_id,
                campaign_id=prompt.campaign_id,
                trial_id=prompt.trial_id,
                level=prompt.level,
                text=prompt.text,
                choices=prompt.choices,
                **extra,
            )
        elif trial is not None:
            msg.trial_id, msg.level = trial.trial_id, trial.level
        msg.header = self._header()
        self._open_prompt = msg
        if msg.prompt_id:
            self._prompt_trials[msg.prompt_id] = msg.trial_id
            while len(self._prompt_trials) > 64:
                self._prompt_trials.pop(next(iter(self._prompt_trials)))
        self.prompt_pub.publish(msg)

    @property
    def _with_operator(self) -> bool:
        return self.world_link.with_operator

    def set_status_waiting(self, message: str) -> None:
        self._status(CampaignStatus.STATE_WAITING, message)

    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def log(self):
        return self.get_logger()

    def hand_over_relabel(self, result: TrialResult, row) -> None:
        """Publish an operator's relabel (signed) until the scorer answers it."""
        setup = records.TaskSetup(
            campaign_id=self.record.id,
            trial_id=row.trial_id,
            world=self.record.world,
            axis=self.record.axis,
            level=row.level,
            in_distribution=False,
            parameters=(),
            trial_index=row.trial_index,
            seed=row.seed,
            policy=blind.labels(self.record).get(row.policy, row.policy),
        )
        msg = convert.result_to_msg(result, setup, self.get_clock().now().to_msg())
        msg.relabel = True
        messages.sign(msg, self.key)
        answer = self._hand_over(msg, str(result.details["relabel_id"]))
        if answer is not None and answer["status"] != messages.REFUSED:
            self.get_logger().info(f"{row.trial_id}: {result.reason}")
        elif answer is not None:
            self.get_logger().error(f"the scorer refused the relabel of {row.trial_id}: {answer['reason']}")
        else:
            self.get_logger().error(
                f"the relabel of {row.trial_id} was not answered within {self.p.commit_timeout_s} s"
            )

    def _on_register(self, request, response):
        accepted, message, session = self.flow.desk.register(request.console_id, request.operator_name, request.role)
        response.accepted, response.message, response.session = accepted, message, session
        if accepted:
            role = "operate" if request.role == operator.OPERATE else "watch"
            who = self.flow.desk.consoles[str(request.console_id)].operator
            self.get_logger().info(
                f"console {str(request.console_id)[:80]!r} ({(who or 'unnamed')[:80]!r}) registered to {role}"
            )
            response.campaign_id = self.record.id
            response.prompt = self._open_prompt if self.flow.desk.prompt is not None else OperatorPrompt()
        return response

    def _on_get_routes(self, _request, response):
        response.success, response.message = True, routes.routes_message(self.record)
        return response

    def _on_ack(self, request, response):
        response = self.flow.on_ack(request, response)
        console = self.flow.desk.consoles.get(str(request.console_id))
        # a console answers a prompt by its id; the bag pairs answers with trials, so name the trial
        trial_id = str(request.trial_id) or self._prompt_trials.get(str(request.prompt_id), "")
        msg = OperatorAnswer(
            campaign_id=self.record.id,
            trial_id=trial_id,
            prompt_id=request.prompt_id,
            response=request.response,
            label=request.label,
            partial_score=request.partial_score,
            note=request.note,
            operator_name=console.operator if console else request.operator_name,
            console_id=request.console_id,
            accepted=response.accepted,
            message=response.message,
        )
        msg.header.stamp = self.get_clock().now().to_msg()
        self.answer_pub.publish(msg)  # for the bag: services are not recorded
        return response

    # -- status ---------------------------------------------------------------------------------
    def _progress(self, done, total, trial, result) -> None:
        self._done = done
        self.get_logger().info(f"[{done}/{total}] {trial.trial_id}: {result.outcome.word} ({result.reason})")

    def _waiting(self, reason: str, delay: float) -> None:
        self.get_logger().warning(f"trial aborted ({reason}); retrying in {delay:.1f} s")
        self._status(CampaignStatus.STATE_WAITING, f"{reason}; retrying in {delay:.1f} s")

    def _status(self, state: int, message: str) -> None:
        pending = len(self.store.pending_trials(self.record.id))
        current = self._current
        self.status_pub.publish(
            messages.sign(
                CampaignStatus(
                    header=self._header(),
                    campaign_id=self.record.id,
                    state=state,
                    trials_total=self._total,
                    trials_done=self._total - pending,
                    current_trial_id=current.trial_id if current else "",
                    current_level=current.level if current else 0,
                    message=message,
                ),
                self.key,
            )
        )

    def _header(self):
        return Header(stamp=self.get_clock().now().to_msg())


class CampaignInterrupted(Exception):
    """The node is shutting down in the middle of a trial's hand-over."""


def main() -> int:
    return run_node(ProgressionManager, on_ready=lambda node: node.start())


if __name__ == "__main__":
    raise SystemExit(main())
