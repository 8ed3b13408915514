"""Reading what was recorded: attempts, label histories, each trial with its result, and the
counts a report is built from. Nothing here writes."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from indgen_core.records import Outcome
from indgen_core.store.records import AttemptRow, PlannedTrial, TrialRow
from indgen_core.store.schema import StoreBase


@dataclass
class LevelCounts:
    """What became of one policy's trials at one level: planned, still pending, skipped by the
    person, each final outcome (keyed by `Outcome`), and the aborted attempts that were run
    again (an attempt, not a trial: a trial aborted twice and then scored counts 2 here and 1
    in its outcome)."""

    planned: int = 0
    pending: int = 0
    skipped: int = 0
    aborted: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)

    def of(self, outcome: Outcome) -> int:
        return self.outcomes[outcome]

    @property
    def successes(self) -> int:
        return self.outcomes[Outcome.SUCCESS]

    @property
    def scored(self) -> int:
        """The trials a success rate counts (`Outcome.scored`)."""
        return sum(n for outcome, n in self.outcomes.items() if outcome.scored)

    @property
    def invalid(self) -> int:
        return self.outcomes[Outcome.INVALID]


class TalliesMixin(StoreBase):
    """Reads over results, attempts and labels, per campaign."""

    if TYPE_CHECKING:  # CampaignsMixin's, beside this one in ResultsStore

        def planned_trials(self, campaign_id: str) -> list[PlannedTrial]: ...

    def label_history(self, campaign_id: str, trial_id: str | None = None) -> list[dict[str, Any]]:
        """Every label, relabel and superseded label, oldest first."""
        q, args = "SELECT * FROM labels WHERE campaign_id=?", [campaign_id]
        if trial_id is not None:
            q += " AND trial_id=?"
            args.append(trial_id)
        return [dict(r) for r in self._db.execute(q + " ORDER BY id", args)]

    def attempts(self, campaign_id: str, trial_id: str | None = None) -> list[AttemptRow]:
        """Every recorded attempt of every trial (or of one), aborted ones included, in the order
        they came."""
        q, args = "SELECT trial_id, outcome, reason FROM attempts WHERE campaign_id=?", [campaign_id]
        if trial_id is not None:
            q += " AND trial_id=?"
            args.append(trial_id)
        return [AttemptRow(t, Outcome.parse(o), r) for t, o, r in self._db.execute(q + " ORDER BY id", args)]

    def unfinished_starts(self, campaign_id: str) -> list[str]:
        """Trials a run started (a `started` event) that are still pending with no attempt
        recorded since: the run was killed during the attempt, and its result never reached the
        store. The next run records each as an interrupted attempt before it goes on."""
        started = self._db.execute(
            "SELECT message, MAX(at) FROM events WHERE campaign_id=? AND kind='started' GROUP BY message",
            (campaign_id,),
        ).fetchall()
        out = []
        for trial_id, at in started:
            pending = self._db.execute(
                "SELECT 1 FROM trials WHERE campaign_id=? AND trial_id=? AND status='pending'", (campaign_id, trial_id)
            ).fetchone()
            since = self._db.execute(
                "SELECT 1 FROM attempts WHERE campaign_id=? AND trial_id=? AND recorded_at>=?",
                (campaign_id, trial_id, at),
            ).fetchone()
            if pending and not since:
                out.append(trial_id)
        return out

    def attempt_count(self, campaign_id: str, trial_id: str) -> int:
        """How many results (aborted ones included) were recorded for a trial."""
        return self._db.execute(
            "SELECT COUNT(*) FROM attempts WHERE campaign_id=? AND trial_id=?", (campaign_id, trial_id)
        ).fetchone()[0]

    def rows(self, campaign_id: str) -> list[TrialRow]:
        query = """
            SELECT t.campaign_id, t.trial_id, t.policy, t.level, t.trial_index, t.seed, t.order_idx, t.status,
                   r.outcome, r.reason, r.partial_score, r.steps, r.duration_s, r.wall_time_s, r.source,
                   r.recorded_at,
                   (SELECT COUNT(*) FROM attempts a WHERE a.campaign_id=t.campaign_id AND a.trial_id=t.trial_id
                        AND a.outcome='aborted') AS aborted_attempts
            FROM trials t LEFT JOIN results r ON r.campaign_id=t.campaign_id AND r.trial_id=t.trial_id
            WHERE t.campaign_id=? ORDER BY t.order_idx"""
        # the store keeps an outcome's word ("success"); a row hands it out as an Outcome
        return [
            TrialRow(**dict(r, outcome=None if r["outcome"] is None else Outcome.parse(r["outcome"])))
            for r in self._db.execute(query, (campaign_id,))
        ]

    def result_details(self, campaign_id: str) -> list[tuple[str, int, Outcome, dict[str, Any]]]:
        """(policy, level, outcome, details) of every final result."""
        query = """SELECT t.policy, t.level, r.outcome, r.details_json FROM results r JOIN trials t
                   ON t.campaign_id=r.campaign_id AND t.trial_id=r.trial_id WHERE r.campaign_id=?"""
        rows = self._db.execute(query, (campaign_id,))
        return [(p, k, Outcome.parse(o), json.loads(d or "{}")) for p, k, o, d in rows]

    def counts(self, campaign_id: str) -> dict[tuple[str, int], LevelCounts]:
        """(policy, level) -> what became of its trials (`LevelCounts`)."""
        out: dict[tuple[str, int], LevelCounts] = {}
        for row in self.rows(campaign_id):
            c = out.setdefault((row.policy, row.level), LevelCounts())
            c.planned += 1
            c.aborted += row.aborted_attempts
            if row.status == "pending":
                c.pending += 1
            elif row.status == "skipped":
                c.skipped += 1
            else:
                assert row.outcome is not None, "a done trial has a result"
                c.outcomes[row.outcome] += 1
        return out

    def operator_counts(self, campaign_id: str) -> dict[tuple[str, int], dict[str, int]]:
        """(policy, level) -> what the person did: trials labelled, relabelled, redone (a
        superseded attempt), skipped, invalid, and labels that disagree with the world's own
        check (rehearsal in sim)."""
        out: dict[tuple[str, int], dict[str, int]] = {}
        trials = {t.trial_id: (t.policy, t.level) for t in self.planned_trials(campaign_id)}
        for key in set(trials.values()):
            out[key] = dict.fromkeys(("labelled", "relabelled", "redone", "skipped", "invalid", "disagreements"), 0)
        relabelled: set[str] = set()
        for row in self.label_history(campaign_id):
            c = out[trials[row["trial_id"]]]
            if row["kind"] == "label":
                c["labelled"] += 1
            elif row["kind"] == "superseded":
                c["redone"] += 1
            elif row["trial_id"] not in relabelled:
                relabelled.add(row["trial_id"])
                c["relabelled"] += 1
        for trial in self.rows(campaign_id):
            c = out[(trial.policy, trial.level)]
            c["skipped"] += trial.status == "skipped"
            c["invalid"] += trial.outcome is Outcome.INVALID
        query = "SELECT trial_id, outcome, details_json FROM results WHERE campaign_id=? AND source='operator'"
        for trial_id, outcome, details in self._db.execute(query, (campaign_id,)):
            auto = json.loads(details or "{}").get("auto_outcome")
            if auto and auto != outcome:
                out[trials[trial_id]]["disagreements"] += 1
        return out
