"""The progression manager's side of the person at the robot: the prompts of one trial (build
the scene, label the episode), a pause between trials, skips, redos and relabels, and which
consoles may answer (indgen_core.campaign.operator.OperatorDesk).

Per trial, with a person in the loop: [paused?] -> prepare (the world) -> SETUP prompt (what
to build, what changed since the last trial, a reference image) -> the episode -> LABEL prompt
(the world's own verdict beside it in rehearsal). A skip ends the trial as SKIPPED (recorded,
not scored); a redo records the attempt as SUPERSEDED and the trial runs again; a relabel
(any time) gives a committed trial a new label, the old one staying in the store's history;
stopping (q) ends the campaign without recording anything for the trial at hand.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from typing import Any, Protocol

from indgen_core.campaign import operator
from indgen_core.campaign.runner import StopCampaign
from indgen_core.records import Outcome, Source, TaskSetup, TrialResult
from indgen_core.store import AttemptRow, CampaignRecord, ResultsStore

LABEL_OUTCOMES = {
    operator.SUCCESS: Outcome.SUCCESS,
    operator.FAILURE: Outcome.FAILURE,
    operator.INVALID: Outcome.INVALID,
}


def change_since(previous: TaskSetup | None, setup: TaskSetup) -> str:
    """What the person changes from the last trial's scene to this one's, in one line."""
    if previous is None:
        return "first trial of this session: build the scene from scratch"
    if previous.level == setup.level:
        return f"same level as the last trial ({previous.trial_id}): put the scene back as it was"
    old = {p.name: p.value for p in previous.parameters}
    changes = [
        f"{p.name} {old[p.name]:g} -> {p.value:g} {p.unit}"
        for p in setup.parameters
        if p.name in old and old[p.name] != p.value
    ]
    steps = abs(setup.level - previous.level)
    direction = "further out" if abs(setup.level) > abs(previous.level) else "back in"
    how = f"{steps} level{'s' if steps > 1 else ''} {direction}"
    return f"{how} (level {previous.level} -> {setup.level}): {', '.join(changes) or 'see the instruction'}"


def attempt_note(attempts: list[AttemptRow]) -> str:
    """Why the person sees a trial's scene prompt again, in one line ('' on its first attempt):
    the same prompt coming back unexplained reads as the console being stuck."""
    if not attempts:
        return ""
    last, n = attempts[-1], len(attempts)
    scored = ", not scored" if last.outcome is Outcome.ABORTED else ""
    return f"attempt {n + 1} of this trial: attempt {n} was {last.outcome.word} ({last.reason}){scored}"


class FlowHost(Protocol):
    """What the operator flow uses of the node that runs the campaign (the progression
    manager): its store and campaign, its log, the prompt it publishes, its waiting status, its
    stop, and the hand-over of a relabel to the scorer."""

    store: ResultsStore
    record: CampaignRecord

    @property
    def log(self) -> Any: ...

    def publish_prompt(self, prompt: operator.Prompt | None, trial: TaskSetup | None = None, **extra) -> None: ...

    def set_status_waiting(self, message: str) -> None: ...

    def stopping(self) -> bool: ...

    def hand_over_relabel(self, result: TrialResult, row) -> None: ...


class OperatorFlow:
    def __init__(self, host: FlowHost):
        self.host = host
        self.desk = operator.OperatorDesk()
        self.pause_requested: str = ""
        self.previous: TaskSetup | None = None
        self.last_labelled = ""
        self.stopped_by = ""
        for row in reversed(host.store.label_history(host.record.id)):
            if row["kind"] in ("label", "relabel"):
                self.last_labelled = row["trial_id"]
                break

    # -- prompts -------------------------------------------------------------------------------------
    def ask(self, kind: int, setup: TaskSetup, text: str, **extra) -> operator.Answer | None:
        prompt = self.desk.open(operator.Prompt(kind, setup.trial_id, setup.level, text, self.host.record.id))
        self.host.publish_prompt(prompt, **extra)
        self.host.set_status_waiting(f"waiting for the operator: {text}")
        answer = self.desk.wait(self.host.stopping)
        self.host.publish_prompt(None, trial=setup)
        if answer is not None and answer.response == operator.ABORT:
            self.stopped_by = answer.operator or "the operator"
            self.host.log.warning(
                f"{self.stopped_by} stopped the campaign; it resumes from the store with "
                f"campaign_id:={self.host.record.id}"
            )
            raise StopCampaign(f"stopped by {self.stopped_by}")
        return answer

    def before_trial(self, setup: TaskSetup) -> None:
        """A pause the person asked for takes effect here, between two trials."""
        if not self.pause_requested:
            return
        who, self.pause_requested = self.pause_requested, ""
        answer = self.ask(
            operator.PAUSED,
            setup,
            f"Paused by {who} before {setup.trial_id}: Enter resumes, q stops the campaign (resumable).",
        )
        if answer is None:
            raise StopCampaign("stopped while paused")

    def setup_prompt(self, setup: TaskSetup) -> TrialResult | None:
        """None when the scene is ready; else the trial's result (skipped)."""
        reference = self.host.store.level_image(setup.axis, setup.level) or ""
        text = setup.operator_instruction or f"Build the scene of level {setup.level}."
        again = attempt_note(self.host.store.attempts(self.host.record.id, setup.trial_id))
        detail = change_since(self.previous, setup)
        answer = self.ask(
            operator.SETUP, setup, text, detail=f"{again}; {detail}" if again else detail, reference_image=reference
        )
        if answer is None:
            raise StopCampaign("stopped")
        if answer.response == operator.SKIP:
            return TrialResult(
                setup.trial_id,
                Outcome.SKIPPED,
                f"skipped by {answer.operator or 'the operator'}" + (f": {answer.note}" if answer.note else ""),
                source=Source.OPERATOR,
                details={"operator": answer.operator, "note": answer.note},
            )
        return None

    def label(self, setup: TaskSetup, result: TrialResult) -> TrialResult:
        judged = result.details.get("judged", True)
        auto = result.outcome.word if judged else ""
        text = (
            f"Label {setup.trial_id} (level {setup.level}): success, failure or invalid setup; a partial score "
            "0-100 is optional."
        )
        if result.details.get("robot_stop"):  # the robot stopped the motion: the person says whose doing it was
            auto = "failure (the robot stopped the policy's motion)"
            text = (
                f"{result.details.get('end', result.reason)} {text} Redo runs the trial again (a fault, not the "
                "policy)."
            )
        answer = self.ask(operator.LABEL, setup, text, auto_outcome=auto, previous_trial_id=self.last_labelled)
        if answer is None:
            raise StopCampaign("stopped")
        details = {
            **result.details,
            "operator": answer.operator,
            "note": answer.note,
            "labelled_at": answer.at,
            "console": answer.console_id,
        }
        if auto:
            details["auto_outcome"] = auto
        who = answer.operator or "the operator"
        if answer.response == operator.REDO:
            return dataclasses.replace(
                result,
                outcome=Outcome.SUPERSEDED,
                reason=f"redo requested by {who}",
                source=Source.OPERATOR,
                details={**details, "label": "superseded"},
            )
        outcome = LABEL_OUTCOMES[answer.response]
        score = answer.partial_score / 100 if answer.partial_score >= 0 else float(outcome is Outcome.SUCCESS)
        reason = f"labelled {answer.name} by {who}" + (f": {answer.note}" if answer.note else "")
        return dataclasses.replace(
            result, outcome=outcome, reason=reason, partial_score=score, source=Source.OPERATOR, details=details
        )

    def after_trial(self, setup: TaskSetup, result: TrialResult) -> None:
        if result.outcome.final:
            self.previous = setup
            if result.source is Source.OPERATOR and result.outcome is not Outcome.SKIPPED:
                self.last_labelled = setup.trial_id

    # -- the service ---------------------------------------------------------------------------------
    def on_ack(self, request, response):
        if request.response in operator.CONTROLS:
            ok, refusal, who = self.desk.control(request.response, request.console_id, request.session)
            if not ok:
                response.accepted, response.message = False, refusal
            elif request.response == operator.PAUSE:
                self.pause_requested = who or "the operator"
                response.accepted, response.message = True, "the campaign pauses after the current trial"
            else:
                response.accepted, response.message = self.relabel(request, who)
            return response
        response.accepted, response.message, _ = self.desk.answer(
            request.prompt_id,
            request.response,
            request.console_id,
            request.session,
            request.note,
            request.partial_score,
        )
        return response

    def relabel(self, request, who: str) -> tuple[bool, str]:
        if request.label not in LABEL_OUTCOMES:
            return False, "a relabel is success, failure or invalid; nothing changed"
        score = float(request.partial_score)
        if score >= 0 and not (request.label in (operator.SUCCESS, operator.FAILURE) and score <= 100):
            return False, "a partial score is 0-100, given with a success or failure label; nothing changed"
        rows = {r.trial_id: r for r in self.host.store.rows(self.host.record.id)}
        row = rows.get(str(request.trial_id))
        if row is None or row.outcome is None:
            return False, f"trial '{str(request.trial_id)[:80]}' has no committed result to relabel; nothing changed"
        outcome = LABEL_OUTCOMES[request.label]
        note = str(request.note)[:2000]
        result = TrialResult(
            row.trial_id,
            outcome,
            f"relabelled {outcome.word} by {who or 'the operator'}",
            partial_score=score / 100 if score >= 0 else float(outcome is Outcome.SUCCESS),
            source=Source.OPERATOR,
            details={"operator": who, "note": note, "relabel_id": uuid.uuid4().hex},
        )
        threading.Thread(target=self.host.hand_over_relabel, args=(result, row), daemon=True).start()
        return True, f"{row.trial_id} relabelled {outcome.word} (was {row.outcome.word})"
