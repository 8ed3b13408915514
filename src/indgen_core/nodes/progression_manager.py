"""progression_manager: runs a campaign's plan over the node graph.

For each pending trial (in plan order, resuming from the results store) it publishes the task
setup tau_k, an operator prompt where the axis has one (and waits for the operator's
acknowledgement when asked to), sends the RunEpisode goal to the world, relays feedback, and
hands the result to the scorer on /indgen/episode_result. The next trial starts only once the
scorer has committed the result to the store. A world that does not answer in time makes the
trial aborted (never failed): it runs again after a backoff, and the campaign waits as long as
it takes for the world or the policy server to come back. A world that goes silent mid-episode
(no feedback for world_silence_s: it was killed or hangs) aborts the trial the same way.

Only this campaign's nodes count: the results and statuses it publishes are signed with the
campaign's key from the results store (auth.py), and an operator answer is accepted only for
the prompt open now, from a console that registered on /indgen/operator_register.

Parameters:
  campaign (str)            campaign YAML; may be empty when campaign_id already exists (resume)
  campaign_id (str)         id to create, or to resume when it is in the store
  db (str)                  results store ("" = $INDGEN_DB or the default location)
  allow_uncertified (bool), override_reason (str)   see `indgen campaign run --help`
  episode_timeout_s (float) wall-clock limit of one episode before it is cancelled and aborted
  server_wait_s (float)     how long to wait for the world's RunEpisode server per attempt
  commit_timeout_s (float)  how long the scorer may take to commit a result
  abort_backoff_s (float)   first wait after an aborted trial (doubles, at most 30x)
  world_silence_s (float)   a running episode with no feedback for this long is aborted
  wait_for_operator (bool)  wait for /indgen/operator_ack after each setup prompt (real robot)
  exit_when_done (bool)     exit (status 0) when the campaign is done
  axis, levels, trials, world_options   override the campaign file's axis, levels ("-1,0,1"),
                            trials per level and world options (a YAML mapping, merged), so one
                            campaign file serves every task and axis of a world
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
import threading
import time
import uuid
from pathlib import Path

from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Header

from indgen_core import paths, topics
from indgen_core.campaign import load_campaign_config, plan_campaign
from indgen_core.errors import IndGenError
from indgen_core.nodes import convert
from indgen_core.nodes.base import LATCHED, RELIABLE, declare, run_node, serve
from indgen_core.records import Outcome, TrialResult
from indgen_core.records import TaskSetup as SetupRecord
from indgen_core.runner import run_campaign
from indgen_core.store import ResultsStore
from indgen_msgs.action import RunEpisode
from indgen_msgs.msg import CampaignStatus, EpisodeResult, OperatorPrompt, TaskSetup
from indgen_msgs.srv import OperatorAck, OperatorRegister

MAX_CONSOLES = 16


class ProgressionManager(Node):
    def __init__(self):
        super().__init__("progression_manager")
        self.p = declare(self, campaign="", campaign_id="", db="", allow_uncertified=False, override_reason="",
                         episode_timeout_s=600.0, server_wait_s=10.0, commit_timeout_s=30.0, abort_backoff_s=1.0,
                         world_silence_s=5.0, wait_for_operator=False, exit_when_done=True, axis="", levels="",
                         trials=0, world_options="")
        self.store = ResultsStore(self.p["db"] or None)
        self.record = self._plan_or_resume()
        self.key = self.store.campaign_key(self.record.id)
        self.group = ReentrantCallbackGroup()
        self.setup_pub = self.create_publisher(TaskSetup, topics.TASK_SETUP, LATCHED)
        self.prompt_pub = self.create_publisher(OperatorPrompt, topics.OPERATOR_PROMPT, LATCHED)
        self.result_pub = self.create_publisher(EpisodeResult, topics.EPISODE_RESULT, RELIABLE)
        self.status_pub = self.create_publisher(CampaignStatus, topics.CAMPAIGN_STATUS, LATCHED)
        self.world = ActionClient(self, RunEpisode, topics.RUN_EPISODE, callback_group=self.group)
        self.ack_srv = serve(self, OperatorAck, topics.OPERATOR_ACK, self._on_ack, callback_group=self.group)
        self.register_srv = serve(self, OperatorRegister, topics.OPERATOR_REGISTER, self._on_register,
                                  callback_group=self.group)
        self._consoles: dict[str, tuple[str, str, int]] = {}  # console id -> (session, operator, role)
        self._open_prompt = OperatorPrompt()
        self._last_feedback = 0.0
        self._stop = threading.Event()
        self._ack = threading.Event()
        self._ack_response = None
        self._prompt_id = ""
        self._current: SetupRecord | None = None
        self._goal = None
        self._done = 0
        self._total = len(self.store.planned_trials(self.record.id))
        self._thread = threading.Thread(target=self._run, name="campaign", daemon=True)

    # -- set-up ---------------------------------------------------------------------------------
    def _plan_or_resume(self):
        cid = paths.check_id(self.p["campaign_id"]) if self.p["campaign_id"] else ""
        if cid and self.store.has_campaign(cid):
            self.get_logger().info(f"resuming campaign {cid} from {self.store.path}")
            return self.store.campaign(cid)
        if not self.p["campaign"]:
            raise IndGenError("set the 'campaign' parameter to a campaign YAML (or 'campaign_id' to one in the store)")
        path = Path(self.p["campaign"])
        if not path.is_file() and (paths.config_dir() / path).is_file():
            path = paths.config_dir() / path  # a profile default such as campaigns/blockenv_oracle.yaml
        config = self._override(load_campaign_config(path))
        record = plan_campaign(self.store, config, campaign_id=cid or None,
                               allow_uncertified=self.p["allow_uncertified"],
                               override_reason=self.p["override_reason"], source=str(path))
        self.get_logger().info(f"planned campaign {record.id}: {len(self.store.planned_trials(record.id))} trials "
                               f"in {self.store.path}")
        return record

    def _override(self, config):
        changes = {}
        if self.p["axis"]:
            changes["axis"] = self.p["axis"]
        text = str(self.p["levels"]).strip().strip("[]")
        if text:
            try:
                changes["levels"] = [int(k) for k in text.split(",") if k.strip()]
            except ValueError:
                raise IndGenError(f"levels must be comma-separated integers such as -1,0,1, got {self.p['levels']!r}") \
                    from None
        if self.p["trials"]:
            changes["trials_per_level"] = int(self.p["trials"])
        if str(self.p["world_options"]).strip():
            import yaml

            extra = yaml.safe_load(str(self.p["world_options"]))
            if not isinstance(extra, dict):
                raise IndGenError(f"world_options must be a YAML mapping such as '{{task: 3}}', got "
                                  f"{self.p['world_options']!r}")
            changes["world_options"] = {**config.world_options, **extra}
        return config.model_validate({**config.model_dump(), **changes}) if changes else config

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._goal is not None:
            with contextlib.suppress(Exception):
                self._goal.cancel_goal_async()
        self._thread.join(timeout=5.0)

    # -- the campaign loop (its own thread; the executor keeps spinning callbacks) --------------
    def _run(self) -> None:
        try:
            self._status(CampaignStatus.STATE_RUNNING, "started")
            summary = run_campaign(self.store, self.record.id, self._execute, progress=self._progress,
                                   max_consecutive_aborts=0, abort_backoff_s=self.p["abort_backoff_s"],
                                   commit=self._commit, should_stop=self._stop.is_set, on_wait=self._waiting)
        except Exception as exc:  # a broken store, a scorer that never commits: stop safely
            self.get_logger().error(f"campaign {self.record.id} stopped: {exc}")
            self._status(CampaignStatus.STATE_FAILED, str(exc))
            self.request_exit(1)
            return
        if summary.remaining == 0:
            self.get_logger().info(f"campaign {self.record.id} done: {summary.ran} trials run, "
                                   f"{summary.aborted_attempts} aborted attempts re-run")
            self._status(CampaignStatus.STATE_DONE, "done")
            if self.p["exit_when_done"]:
                time.sleep(1.0)  # let late subscribers (the scorer's report) see DONE
                self.request_exit(0)
        else:
            self._status(CampaignStatus.STATE_CANCELLED, f"stopped with {summary.remaining} trials pending")

    def _execute(self, setup: SetupRecord) -> TrialResult:
        self._current = setup
        now = self.get_clock().now().to_msg()
        self.setup_pub.publish(convert.setup_to_msg(setup, now))
        if setup.operator_instruction and not self._prompt_operator(setup):
            return TrialResult(setup.trial_id, Outcome.ABORTED, "operator skipped or aborted the setup")
        self._status(CampaignStatus.STATE_RUNNING, f"running {setup.trial_id}")
        return self._run_episode(setup)

    def _run_episode(self, setup: SetupRecord) -> TrialResult:
        started = time.monotonic()

        def aborted(reason: str) -> TrialResult:
            return TrialResult(setup.trial_id, Outcome.ABORTED, reason, wall_time_s=time.monotonic() - started)

        if not self.world.wait_for_server(timeout_sec=self.p["server_wait_s"]):
            return aborted(f"world not answering: no RunEpisode server on {topics.RUN_EPISODE}")
        goal = RunEpisode.Goal(setup=convert.setup_to_msg(setup, self.get_clock().now().to_msg()))
        handle = None
        deadline = time.monotonic() + self.p["server_wait_s"]
        while handle is None and time.monotonic() < deadline and not self._stop.is_set():
            # right after discovery DDS can lose a goal response; the bridge attaches a resent
            # goal for the same trial to the running episode, so resending is safe
            future = self.world.send_goal_async(goal, feedback_callback=self._feedback)
            if _wait(future, 2.0, self._stop):
                handle = future.result()
        if handle is None:
            return aborted("world not answering: the episode goal was never acknowledged")
        if not handle.accepted:
            return aborted("the world rejected the episode goal (busy with another trial)")
        self._goal = handle
        self._last_feedback = time.monotonic()
        result_future = handle.get_result_async()
        silence = self.p["world_silence_s"]

        def silent() -> bool:
            return silence > 0 and time.monotonic() - self._last_feedback > silence

        if not _wait(result_future, self.p["episode_timeout_s"], self._stop, silent):
            handle.cancel_goal_async()
            self._goal = None
            limit = self.p["episode_timeout_s"]
            if self._stop.is_set():
                return aborted("stopped")
            if silent():
                return aborted(f"the world went silent mid-episode (no feedback for {silence:g} s)")
            return aborted(f"world did not finish within {limit} s")
        self._goal = None
        response = result_future.result()
        result = convert.result_from_msg(response.result.result)
        if result.trial_id != setup.trial_id:
            return aborted(f"the world answered for trial '{result.trial_id}'")
        return result

    def _commit(self, result: TrialResult) -> bool:
        """Hand the result to the scorer and wait until it is in the store."""
        before = self.store.attempt_count(self.record.id, result.trial_id)
        msg = convert.sign(convert.result_to_msg(result, self._current, self.get_clock().now().to_msg()), self.key)
        deadline = time.monotonic() + self.p["commit_timeout_s"]
        last_publish = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() - last_publish > 1.0:
                self.result_pub.publish(msg)  # the scorer drops a duplicate it already committed
                last_publish = time.monotonic()
            if self.store.attempt_count(self.record.id, result.trial_id) > before:
                return result.outcome.final
            time.sleep(0.02)
        raise IndGenError(f"the scorer did not commit trial {result.trial_id} within {self.p['commit_timeout_s']} s "
                          f"(is the scorer node running with db={self.store.path}?)")

    # -- operator -------------------------------------------------------------------------------
    def _prompt_operator(self, setup: SetupRecord) -> bool:
        wait = self.p["wait_for_operator"]
        kind = OperatorPrompt.KIND_SETUP if wait else OperatorPrompt.KIND_INFO
        prompt = OperatorPrompt(kind=kind, prompt_id=uuid.uuid4().hex[:12] if wait else "",
                                campaign_id=setup.campaign_id, trial_id=setup.trial_id, level=setup.level,
                                text=setup.operator_instruction, choices=["done", "skip", "abort"] if wait else [])
        prompt.header = self._header()
        self._open_prompt = prompt
        self._prompt_id = prompt.prompt_id
        self.prompt_pub.publish(prompt)
        if not wait:
            return True
        self._status(CampaignStatus.STATE_WAITING, f"waiting for the operator: {setup.operator_instruction}")
        self._ack.clear()
        while not self._ack.wait(0.1):
            if self._stop.is_set():
                return False
        if self._ack_response == OperatorAck.Request.RESPONSE_ABORT:
            self._stop.set()
        return self._ack_response == OperatorAck.Request.RESPONSE_DONE

    def _on_register(self, request, response):
        console_id = str(request.console_id)
        if not console_id or len(console_id) > 128:
            response.accepted, response.message = False, "a console registers with a console_id of 1-128 characters"
            return response
        if console_id not in self._consoles and len(self._consoles) >= MAX_CONSOLES:
            response.accepted, response.message = False, f"already {MAX_CONSOLES} consoles registered"
            return response
        if request.role not in (OperatorRegister.Request.ROLE_OPERATE, OperatorRegister.Request.ROLE_WATCH):
            response.accepted, response.message = False, f"unknown role {request.role}"
            return response
        session = secrets.token_hex(16)
        self._consoles[console_id] = (session, str(request.operator_name)[:128], request.role)
        self.get_logger().info(f"console {console_id!r} ({self._consoles[console_id][1] or 'unnamed'!r}) registered to "
                               f"{'operate' if request.role == OperatorRegister.Request.ROLE_OPERATE else 'watch'}")
        response.accepted, response.message, response.session = True, "registered", session
        response.campaign_id = self.record.id
        response.prompt = self._open_prompt if self._prompt_id else OperatorPrompt()
        return response

    def _console_refusal(self, request) -> str | None:
        """Why an answer is not from a registered, operating console (None when it is)."""
        console = self._consoles.get(str(request.console_id))
        if console is None or not hmac.compare_digest(console[0].encode(), str(request.session).encode()):
            return "answers are accepted only from a console registered on /indgen/operator_register; nothing changed"
        if console[2] != OperatorRegister.Request.ROLE_OPERATE:
            return "this console only watches; nothing changed"
        return None

    def _on_ack(self, request, response):
        allowed = (OperatorAck.Request.RESPONSE_DONE, OperatorAck.Request.RESPONSE_SKIP,
                   OperatorAck.Request.RESPONSE_ABORT)
        refusal = self._console_refusal(request)
        if refusal:
            response.accepted, response.message = False, refusal
        elif request.prompt_id != self._prompt_id or not self._prompt_id:
            response.accepted, response.message = False, f"no open prompt '{request.prompt_id}'; nothing changed"
        elif request.response not in allowed:
            response.accepted, response.message = False, "a setup prompt takes done, skip or abort"
        else:
            self._ack_response = request.response
            self._prompt_id = ""
            self._ack.set()
            response.accepted, response.message = True, "acknowledged"
        return response

    # -- status ---------------------------------------------------------------------------------
    def _feedback(self, feedback) -> None:
        self._last_feedback = time.monotonic()
        fb = feedback.feedback
        self.get_logger().debug(f"{fb.phase}: step {fb.step}/{fb.max_steps}")

    def _progress(self, done, total, trial, result) -> None:
        self._done = done
        self.get_logger().info(f"[{done}/{total}] {trial.trial_id}: {result.outcome.name.lower()} "
                               f"({result.reason})")

    def _waiting(self, reason: str, delay: float) -> None:
        self.get_logger().warning(f"trial aborted ({reason}); retrying in {delay:.1f} s")
        self._status(CampaignStatus.STATE_WAITING, f"{reason}; retrying in {delay:.1f} s")

    def _status(self, state: int, message: str) -> None:
        pending = len(self.store.pending_trials(self.record.id))
        current = self._current
        self.status_pub.publish(convert.sign(CampaignStatus(
            header=self._header(), campaign_id=self.record.id, state=state, trials_total=self._total,
            trials_done=self._total - pending, current_trial_id=current.trial_id if current else "",
            current_level=current.level if current else 0, message=message), self.key))

    def _header(self):
        return Header(stamp=self.get_clock().now().to_msg())


def _wait(future, timeout: float, stop: threading.Event, give_up=lambda: False) -> bool:
    deadline = time.monotonic() + timeout
    while not future.done():
        if stop.is_set() or time.monotonic() > deadline or give_up():
            return False
        time.sleep(0.005)
    return True


def main() -> int:
    return run_node(ProgressionManager, on_ready=lambda node: node.start())


if __name__ == "__main__":
    raise SystemExit(main())
