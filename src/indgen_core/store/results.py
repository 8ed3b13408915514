"""Recording what happened: a trial's attempts and final result, and an operator's labels.

`commit_result` is the store's central promise (see the package docstring): the attempt, the
final result and the trial's "done" mark are one transaction, so a trial is never counted twice.
"""

from __future__ import annotations

import json
import time

from indgen_core.records import Outcome, Source, TrialResult
from indgen_core.store.artifacts import _artifact_kind
from indgen_core.store.records import DuplicateResult, RepeatedAttempt, StoreError
from indgen_core.store.schema import StoreBase


class ResultsMixin(StoreBase):
    """Writes: results and attempts (commit_result) and operator labels (relabel)."""

    def commit_result(self, campaign_id: str, result: TrialResult, attempt_key: str | None = None) -> bool:
        """Record one episode's result atomically. Returns True when it is the trial's final
        result; an aborted (or, on the operator's redo, superseded) attempt is recorded and
        leaves the trial pending (it runs again); a skipped one marks the trial skipped. An
        operator's label goes into the label history in the same transaction. A second final
        result for the same trial raises DuplicateResult and changes nothing.

        `attempt_key` names the attempt as its sender knows it (the graph: the result message's
        signature): the same key again raises RepeatedAttempt and changes nothing, so an aborted
        attempt republished to a scorer that restarted meanwhile is still counted once."""
        outcome = Outcome.parse(result.outcome)
        now = time.time()
        with self._tx() as db:
            if (
                attempt_key is not None
                and db.execute(
                    "SELECT 1 FROM attempts WHERE campaign_id=? AND attempt_key=?", (campaign_id, attempt_key)
                ).fetchone()
            ):
                raise RepeatedAttempt(f"attempt of trial '{result.trial_id}' is already recorded")
            row = db.execute(
                "SELECT status FROM trials WHERE campaign_id=? AND trial_id=?", (campaign_id, result.trial_id)
            ).fetchone()
            if row is None:
                raise StoreError(f"campaign '{campaign_id}' has no trial '{result.trial_id}'")
            if row["status"] == "done":
                raise DuplicateResult(
                    f"trial '{result.trial_id}' of campaign '{campaign_id}' already has a result; "
                    "the new one was not counted"
                )
            db.execute(
                "INSERT INTO attempts (campaign_id, trial_id, outcome, reason, recorded_at, attempt_key) "
                "VALUES (?,?,?,?,?,?)",
                (campaign_id, result.trial_id, outcome.word, result.reason, now, attempt_key),
            )
            if outcome is Outcome.SUPERSEDED:
                self._label(db, campaign_id, result, "superseded", now)
            # every attempt's files, an aborted one's too: a world saves a level's image with
            # whichever attempt came first (again after an aborted one: the same path, kept once),
            # and the video of an aborted attempt shows why
            for path in result.artifacts:
                db.execute(
                    "INSERT INTO artifacts (campaign_id, trial_id, level, kind, path, created_at) "
                    "SELECT ?, ?, level, ?, ?, ? FROM trials WHERE campaign_id=? AND trial_id=? AND NOT EXISTS "
                    "(SELECT 1 FROM artifacts WHERE campaign_id=? AND path=?)",
                    (
                        campaign_id,
                        result.trial_id,
                        _artifact_kind(path),
                        path,
                        now,
                        campaign_id,
                        result.trial_id,
                        campaign_id,
                        path,
                    ),
                )
            if not outcome.final:
                return False
            if outcome is Outcome.SKIPPED:
                db.execute(
                    "UPDATE trials SET status='skipped', skip_reason=? WHERE campaign_id=? AND trial_id=?",
                    (result.reason, campaign_id, result.trial_id),
                )
                return True
            if Source(result.source) is Source.OPERATOR:
                self._label(db, campaign_id, result, "label", now)
            db.execute(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    campaign_id,
                    result.trial_id,
                    outcome.word,
                    result.reason,
                    float(result.partial_score),
                    int(result.steps),
                    float(result.duration_s),
                    float(result.wall_time_s),
                    Source(result.source).name.lower(),
                    json.dumps(result.details, sort_keys=True, default=str),
                    now,
                ),
            )
            db.execute(
                "UPDATE trials SET status='done' WHERE campaign_id=? AND trial_id=?", (campaign_id, result.trial_id)
            )
            db.execute("UPDATE campaigns SET updated_at=? WHERE id=?", (now, campaign_id))
        return True

    @staticmethod
    def _label(db, campaign_id: str, result: TrialResult, kind: str, now: float, previous: str = "") -> None:
        details = result.details or {}
        outcome = (
            details.get("label", Outcome.parse(result.outcome).word)
            if kind == "superseded"
            else Outcome.parse(result.outcome).word
        )
        db.execute(
            "INSERT INTO labels (campaign_id, trial_id, kind, outcome, partial_score, operator, note, previous, "
            "at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                campaign_id,
                result.trial_id,
                kind,
                outcome,
                float(result.partial_score),
                str(details.get("operator", "")),
                str(details.get("note", "")),
                previous,
                now,
            ),
        )

    def relabel(
        self,
        campaign_id: str,
        trial_id: str,
        outcome: Outcome,
        partial_score: float,
        operator: str,
        note: str,
        ref: str = "",
    ) -> str:
        """A new operator label for a trial that has its final result: the result takes it,
        the old label stays in the history. Returns the outcome it replaced. A relabel whose
        `ref` is already in the history (the same request resent) changes nothing."""
        outcome = Outcome.parse(outcome)
        if outcome not in (Outcome.SUCCESS, Outcome.FAILURE, Outcome.INVALID):
            raise StoreError(f"a relabel is success, failure or invalid, not {outcome.word}")
        now = time.time()
        with self._tx() as db:
            if ref:
                seen = db.execute(
                    "SELECT previous FROM labels WHERE campaign_id=? AND ref=?", (campaign_id, ref)
                ).fetchone()
                if seen is not None:
                    return seen["previous"]
            row = db.execute(
                "SELECT outcome FROM results WHERE campaign_id=? AND trial_id=?", (campaign_id, trial_id)
            ).fetchone()
            if row is None:
                raise StoreError(f"trial '{trial_id}' of campaign '{campaign_id}' has no result to relabel")
            reason = f"relabelled {outcome.word} by {operator or 'the operator'}"
            reason += f": {note}" if note else ""
            db.execute(
                "UPDATE results SET outcome=?, partial_score=?, reason=?, source='operator' WHERE "
                "campaign_id=? AND trial_id=?",
                (outcome.word, float(partial_score), reason, campaign_id, trial_id),
            )
            db.execute(
                "INSERT INTO labels (campaign_id, trial_id, kind, outcome, partial_score, operator, note, "
                "previous, ref, at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    campaign_id,
                    trial_id,
                    "relabel",
                    outcome.word,
                    float(partial_score),
                    operator,
                    note,
                    row["outcome"],
                    ref,
                    now,
                ),
            )
            db.execute("UPDATE campaigns SET updated_at=? WHERE id=?", (now, campaign_id))
        return row["outcome"]
