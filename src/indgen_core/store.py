"""The results store: one SQLite file (WAL mode) that no trial result is ever lost from.

A trial's final result, its attempt record and its "done" mark are written in one
transaction (synchronous=FULL) before the next trial starts, so a campaign killed at any
instant resumes exactly where it stopped: the trial that was running has no result and runs
again; a committed one is never run or counted twice (results are keyed by trial id).
Several processes may use the store at once (the scorer writes while a report reads).

Default location: $INDGEN_DB, else $XDG_DATA_HOME/indgen/results.sqlite (see paths.py).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indgen_core import auth, paths
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, Source, TrialResult

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    axis TEXT NOT NULL,
    world TEXT NOT NULL,
    purpose TEXT NOT NULL DEFAULT 'evaluate',
    group_name TEXT NOT NULL DEFAULT '',
    order_mode TEXT NOT NULL,
    seed INTEGER NOT NULL,
    config_json TEXT NOT NULL,
    axis_json TEXT NOT NULL,
    protocol_json TEXT NOT NULL DEFAULT '{}',
    override_uncertified INTEGER NOT NULL DEFAULT 0,
    override_reason TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'planned',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    trial_id TEXT NOT NULL,
    policy TEXT NOT NULL,
    level INTEGER NOT NULL,
    trial_index INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    order_idx INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',   -- pending | done | skipped
    skip_reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (campaign_id, trial_id)
);
CREATE INDEX IF NOT EXISTS trials_order ON trials(campaign_id, status, order_idx);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign_id TEXT NOT NULL,
    trial_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    FOREIGN KEY (campaign_id, trial_id) REFERENCES trials(campaign_id, trial_id)
);
CREATE TABLE IF NOT EXISTS results (
    campaign_id TEXT NOT NULL,
    trial_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    partial_score REAL NOT NULL,
    steps INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    wall_time_s REAL NOT NULL,
    source TEXT NOT NULL,
    details_json TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    PRIMARY KEY (campaign_id, trial_id),
    FOREIGN KEY (campaign_id, trial_id) REFERENCES trials(campaign_id, trial_id)
);
CREATE TABLE IF NOT EXISTS artifacts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    trial_id TEXT NOT NULL DEFAULT '',
    level INTEGER,
    kind TEXT NOT NULL,            -- image | video | bag | report | ...
    path TEXT NOT NULL,
    created_at REAL NOT NULL,
    details_json TEXT NOT NULL DEFAULT '{}'  -- e.g. a bag's time range of the trial
);
CREATE TABLE IF NOT EXISTS certificates (
    key TEXT NOT NULL,
    world TEXT NOT NULL,
    axis TEXT NOT NULL,
    level INTEGER NOT NULL,
    parameters_json TEXT NOT NULL,
    options_json TEXT NOT NULL,
    policy TEXT NOT NULL,
    n INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    campaign_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (key, campaign_id, policy)
);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign_id TEXT NOT NULL,
    trial_id TEXT NOT NULL,
    kind TEXT NOT NULL,            -- label | relabel | superseded
    outcome TEXT NOT NULL,
    partial_score REAL NOT NULL,
    operator TEXT NOT NULL,
    note TEXT NOT NULL,
    previous TEXT NOT NULL DEFAULT '',  -- relabel: the outcome it replaced
    ref TEXT NOT NULL DEFAULT '',       -- relabel: its id, so a resent relabel counts once
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS campaign_keys (
    campaign_id TEXT PRIMARY KEY REFERENCES campaigns(id),
    key BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign_id TEXT NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"""


class StoreError(IndGenError):
    pass


class DuplicateResult(StoreError):
    """A second final result for a trial that already has one; the first one stands."""


@dataclass(frozen=True)
class PlannedTrial:
    trial_id: str
    policy: str
    level: int
    trial_index: int
    seed: int
    order_idx: int


@dataclass(frozen=True)
class CampaignRecord:
    id: str
    name: str
    axis: str
    world: str
    purpose: str
    group_name: str
    order_mode: str
    seed: int
    config: dict[str, Any]
    axis_snapshot: dict[str, Any]
    protocol: dict[str, Any]
    override_uncertified: bool
    override_reason: str
    status: str
    created_at: float
    updated_at: float

    @property
    def policies(self) -> list[str]:
        return list(self.config.get("policies", []))


@dataclass(frozen=True)
class TrialRow:
    """A planned trial with its final result, if any (one row of an export)."""

    campaign_id: str
    trial_id: str
    policy: str
    level: int
    trial_index: int
    seed: int
    order_idx: int
    status: str
    outcome: str | None
    reason: str | None
    partial_score: float | None
    steps: int | None
    duration_s: float | None
    wall_time_s: float | None
    source: str | None
    recorded_at: float | None
    aborted_attempts: int


class ResultsStore:
    """One connection to the store. Open one per process (and per thread that writes)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else paths.default_db()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder of the results store {self.path}: {exc.strerror or exc}"
            ) from None
        new = not self.path.exists()
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
            if new:  # it holds the campaigns' signing keys (auth.py); its -wal/-shm files follow its mode
                os.chmod(self.path, 0o600)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.executescript(
                "BEGIN IMMEDIATE;"
                + SCHEMA
                + f"INSERT OR IGNORE INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
            )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable IndGen results store ({exc})") from None
        version = int(self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
        if version != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: results store schema {version}, this IndGen reads {SCHEMA_VERSION}")
        self._add_columns()

    def _add_columns(self) -> None:
        """Columns added within schema 1 (additive: an older store gains them, with defaults)."""
        have = {r["name"] for r in self._db.execute("PRAGMA table_info(artifacts)")}
        if "details_json" not in have:
            with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                self._db.execute("ALTER TABLE artifacts ADD COLUMN details_json TEXT NOT NULL DEFAULT '{}'")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- campaigns ---------------------------------------------------------------------------
    def create_campaign(self, record: CampaignRecord, trials: Iterable[PlannedTrial]) -> None:
        """The campaign and its whole plan, in one transaction (all or nothing)."""
        with self._tx() as db:
            if db.execute("SELECT 1 FROM campaigns WHERE id=?", (record.id,)).fetchone():
                raise StoreError(f"campaign '{record.id}' already exists in {self.path}; resume it instead")
            db.execute(
                "INSERT INTO campaigns VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.id,
                    record.name,
                    record.axis,
                    record.world,
                    record.purpose,
                    record.group_name,
                    record.order_mode,
                    record.seed,
                    json.dumps(record.config, sort_keys=True),
                    json.dumps(record.axis_snapshot, sort_keys=True),
                    json.dumps(record.protocol, sort_keys=True),
                    int(record.override_uncertified),
                    record.override_reason,
                    record.status,
                    record.created_at,
                    record.updated_at,
                ),
            )
            db.executemany(
                "INSERT INTO trials (campaign_id, trial_id, policy, level, trial_index, seed, order_idx) "
                "VALUES (?,?,?,?,?,?,?)",
                [(record.id, t.trial_id, t.policy, t.level, t.trial_index, t.seed, t.order_idx) for t in trials],
            )
            db.execute("INSERT INTO campaign_keys VALUES (?, ?)", (record.id, auth.new_key()))
            self._event(db, record.id, "created", f"{record.name}: axis {record.axis}, world {record.world}")
            if record.override_uncertified:
                self._event(db, record.id, "override", f"uncertified levels allowed: {record.override_reason}")

    def campaign(self, campaign_id: str) -> CampaignRecord:
        row = self._db.execute("SELECT * FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
        if row is None:
            known = [r[0] for r in self._db.execute("SELECT id FROM campaigns ORDER BY created_at DESC LIMIT 5")]
            hint = f" (recent: {', '.join(known)})" if known else " (the store has no campaigns)"
            raise StoreError(f"no campaign '{campaign_id}' in {self.path}{hint}")
        return self._campaign(row)

    def campaign_key(self, campaign_id: str) -> bytes | None:
        """The campaign's secret signing key (auth.py); None when there is no such campaign.
        A campaign planned before keys existed gets one now."""
        row = self._db.execute("SELECT key FROM campaign_keys WHERE campaign_id=?", (campaign_id,)).fetchone()
        if row is not None:
            return bytes(row[0])
        if not self.has_campaign(campaign_id):
            return None
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO campaign_keys VALUES (?, ?)", (campaign_id, auth.new_key()))
        return bytes(
            self._db.execute("SELECT key FROM campaign_keys WHERE campaign_id=?", (campaign_id,)).fetchone()[0]
        )

    def has_campaign(self, campaign_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM campaigns WHERE id=?", (campaign_id,)).fetchone() is not None

    @staticmethod
    def _campaign(row: sqlite3.Row) -> CampaignRecord:
        return CampaignRecord(
            id=row["id"],
            name=row["name"],
            axis=row["axis"],
            world=row["world"],
            purpose=row["purpose"],
            group_name=row["group_name"],
            order_mode=row["order_mode"],
            seed=row["seed"],
            config=json.loads(row["config_json"]),
            axis_snapshot=json.loads(row["axis_json"]),
            protocol=json.loads(row["protocol_json"]),
            override_uncertified=bool(row["override_uncertified"]),
            override_reason=row["override_reason"],
            status=row["status"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    def campaigns(self, group: str | None = None) -> list[CampaignRecord]:
        if group is None:
            rows = self._db.execute("SELECT * FROM campaigns ORDER BY created_at")
        else:
            rows = self._db.execute("SELECT * FROM campaigns WHERE group_name=? ORDER BY created_at", (group,))
        return [self._campaign(r) for r in rows]

    def set_status(self, campaign_id: str, status: str, message: str = "") -> None:
        with self._tx() as db:
            db.execute("UPDATE campaigns SET status=?, updated_at=? WHERE id=?", (status, time.time(), campaign_id))
            self._event(db, campaign_id, "status", f"{status}{': ' + message if message else ''}")

    # -- trials and results ------------------------------------------------------------------
    def pending_trials(self, campaign_id: str) -> list[PlannedTrial]:
        rows = self._db.execute(
            "SELECT trial_id, policy, level, trial_index, seed, order_idx FROM trials "
            "WHERE campaign_id=? AND status='pending' ORDER BY order_idx",
            (campaign_id,),
        )
        return [PlannedTrial(*r) for r in rows]

    def planned_trials(self, campaign_id: str) -> list[PlannedTrial]:
        rows = self._db.execute(
            "SELECT trial_id, policy, level, trial_index, seed, order_idx FROM trials "
            "WHERE campaign_id=? ORDER BY order_idx",
            (campaign_id,),
        )
        return [PlannedTrial(*r) for r in rows]

    def trial(self, campaign_id: str, trial_id: str) -> PlannedTrial:
        row = self._db.execute(
            "SELECT trial_id, policy, level, trial_index, seed, order_idx FROM trials "
            "WHERE campaign_id=? AND trial_id=?",
            (campaign_id, trial_id),
        ).fetchone()
        if row is None:
            raise StoreError(f"campaign '{campaign_id}' has no trial '{trial_id}'")
        return PlannedTrial(*row)

    def commit_result(self, campaign_id: str, result: TrialResult) -> bool:
        """Record one episode's result atomically. Returns True when it is the trial's final
        result; an aborted (or, on the operator's redo, superseded) attempt is recorded and
        leaves the trial pending (it runs again); a skipped one marks the trial skipped. An
        operator's label goes into the label history in the same transaction. A second final
        result for the same trial raises DuplicateResult and changes nothing."""
        outcome = Outcome.parse(result.outcome)
        now = time.time()
        with self._tx() as db:
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
                "INSERT INTO attempts (campaign_id, trial_id, outcome, reason, recorded_at) VALUES (?,?,?,?,?)",
                (campaign_id, result.trial_id, outcome.name.lower(), result.reason, now),
            )
            if outcome is Outcome.SUPERSEDED:
                self._label(db, campaign_id, result, "superseded", now)
            # every attempt's files, an aborted one's too: a world saves a level's image once,
            # with whichever attempt came first, and the video of an aborted attempt shows why
            for path in result.artifacts:
                db.execute(
                    "INSERT INTO artifacts (campaign_id, trial_id, level, kind, path, created_at) "
                    "SELECT ?, ?, level, ?, ?, ? FROM trials WHERE campaign_id=? AND trial_id=?",
                    (campaign_id, result.trial_id, _artifact_kind(path), path, now, campaign_id, result.trial_id),
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
                    outcome.name.lower(),
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
            details.get("label", Outcome.parse(result.outcome).name.lower())
            if kind == "superseded"
            else Outcome.parse(result.outcome).name.lower()
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
            raise StoreError(f"a relabel is success, failure or invalid, not {outcome.name.lower()}")
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
            reason = f"relabelled {outcome.name.lower()} by {operator or 'the operator'}"
            reason += f": {note}" if note else ""
            db.execute(
                "UPDATE results SET outcome=?, partial_score=?, reason=?, source='operator' WHERE "
                "campaign_id=? AND trial_id=?",
                (outcome.name.lower(), float(partial_score), reason, campaign_id, trial_id),
            )
            db.execute(
                "INSERT INTO labels (campaign_id, trial_id, kind, outcome, partial_score, operator, note, "
                "previous, ref, at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    campaign_id,
                    trial_id,
                    "relabel",
                    outcome.name.lower(),
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

    def label_history(self, campaign_id: str, trial_id: str | None = None) -> list[dict[str, Any]]:
        """Every label, relabel and superseded label, oldest first."""
        q, args = "SELECT * FROM labels WHERE campaign_id=?", [campaign_id]
        if trial_id is not None:
            q += " AND trial_id=?"
            args.append(trial_id)
        return [dict(r) for r in self._db.execute(q + " ORDER BY id", args)]

    def attempts(self, campaign_id: str) -> list[dict[str, Any]]:
        """Every recorded attempt of every trial, aborted ones included, in the order they came:
        trial_id, outcome, reason."""
        query = "SELECT trial_id, outcome, reason FROM attempts WHERE campaign_id=? ORDER BY id"
        return [{"trial_id": t, "outcome": o, "reason": r} for t, o, r in self._db.execute(query, (campaign_id,))]

    def attempt_count(self, campaign_id: str, trial_id: str) -> int:
        """How many results (aborted ones included) were recorded for a trial."""
        return self._db.execute(
            "SELECT COUNT(*) FROM attempts WHERE campaign_id=? AND trial_id=?", (campaign_id, trial_id)
        ).fetchone()[0]

    def skip_trial(self, campaign_id: str, trial_id: str, reason: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE trials SET status='skipped', skip_reason=? WHERE campaign_id=? AND trial_id=? "
                "AND status='pending'",
                (reason, campaign_id, trial_id),
            )

    def rows(self, campaign_id: str) -> list[TrialRow]:
        query = """
            SELECT t.campaign_id, t.trial_id, t.policy, t.level, t.trial_index, t.seed, t.order_idx, t.status,
                   r.outcome, r.reason, r.partial_score, r.steps, r.duration_s, r.wall_time_s, r.source,
                   r.recorded_at,
                   (SELECT COUNT(*) FROM attempts a WHERE a.campaign_id=t.campaign_id AND a.trial_id=t.trial_id
                        AND a.outcome='aborted') AS aborted_attempts
            FROM trials t LEFT JOIN results r ON r.campaign_id=t.campaign_id AND r.trial_id=t.trial_id
            WHERE t.campaign_id=? ORDER BY t.order_idx"""
        return [TrialRow(*r) for r in self._db.execute(query, (campaign_id,))]

    def result_details(self, campaign_id: str) -> list[tuple[str, int, str, dict[str, Any]]]:
        """(policy, level, outcome, details) of every final result."""
        query = """SELECT t.policy, t.level, r.outcome, r.details_json FROM results r JOIN trials t
                   ON t.campaign_id=r.campaign_id AND t.trial_id=r.trial_id WHERE r.campaign_id=?"""
        return [(p, k, o, json.loads(d or "{}")) for p, k, o, d in self._db.execute(query, (campaign_id,))]

    def counts(self, campaign_id: str) -> dict[tuple[str, int], dict[str, int]]:
        """(policy, level) -> counts of each final outcome, planned, pending and skipped trials."""
        out: dict[tuple[str, int], dict[str, int]] = {}
        for row in self.rows(campaign_id):
            c = out.setdefault(
                (row.policy, row.level),
                {
                    "planned": 0,
                    "pending": 0,
                    "skipped": 0,
                    "aborted": 0,
                    **{o.name.lower(): 0 for o in Outcome if o.final},
                },
            )
            c["planned"] += 1
            c["aborted"] += row.aborted_attempts
            if row.status == "pending":
                c["pending"] += 1
            elif row.status == "skipped":
                c["skipped"] += 1
            else:
                assert row.outcome is not None, "a done trial has a result"
                c[row.outcome] += 1
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
            c["invalid"] += trial.outcome == "invalid"
        query = "SELECT trial_id, outcome, details_json FROM results WHERE campaign_id=? AND source='operator'"
        for trial_id, outcome, details in self._db.execute(query, (campaign_id,)):
            auto = json.loads(details or "{}").get("auto_outcome")
            if auto and auto != outcome:
                out[trials[trial_id]]["disagreements"] += 1
        return out

    def level_image(self, axis: str, level: int) -> str | None:
        """The newest level image of this axis and level in any campaign (the twin's, for a
        person building the real scene), or None."""
        row = self._db.execute(
            "SELECT a.path FROM artifacts a JOIN campaigns c ON c.id=a.campaign_id WHERE a.kind='level_image' "
            "AND c.axis=? AND a.level=? ORDER BY a.id DESC LIMIT 1",
            (axis, level),
        ).fetchone()
        return row[0] if row else None

    # -- artifacts, certificates, events -----------------------------------------------------
    def add_artifact(
        self,
        campaign_id: str,
        kind: str,
        path: str,
        trial_id: str = "",
        level: int | None = None,
        details: dict[str, Any] | None = None,
    ):
        with self._tx() as db:
            db.execute(
                "INSERT INTO artifacts (campaign_id, trial_id, level, kind, path, created_at, details_json) "
                "VALUES (?,?,?,?,?,?,?)",
                (campaign_id, trial_id, level, kind, str(path), time.time(), json.dumps(details or {}, sort_keys=True)),
            )

    def artifacts(self, campaign_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        rows = self._artifact_rows(campaign_id, kind)
        for row in rows:
            row["details"] = json.loads(row.pop("details_json") or "{}")
        return rows

    def _artifact_rows(self, campaign_id: str, kind: str | None) -> list[dict[str, Any]]:
        q = "SELECT trial_id, level, kind, path, details_json FROM artifacts WHERE campaign_id=?"
        args: tuple = (campaign_id,)
        if kind:
            q += " AND kind=?"
            args += (kind,)
        return [dict(r) for r in self._db.execute(q + " ORDER BY id", args)]

    def add_certificate(
        self,
        key: str,
        world: str,
        axis: str,
        level: int,
        parameters: list,
        options: dict,
        policy: str,
        n: int,
        successes: int,
        campaign_id: str,
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO certificates VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    key,
                    world,
                    axis,
                    level,
                    json.dumps(parameters),
                    json.dumps(options, sort_keys=True),
                    policy,
                    n,
                    successes,
                    campaign_id,
                    time.time(),
                ),
            )

    def certificate(self, key: str) -> dict[str, Any] | None:
        """The strongest certificate (most successes) recorded for `key`, or None."""
        row = self._db.execute(
            "SELECT * FROM certificates WHERE key=? AND successes > 0 ORDER BY successes DESC, created_at DESC LIMIT 1",
            (key,),
        ).fetchone()
        return dict(row) if row else None

    def certificates(self, world: str | None = None, axis: str | None = None) -> list[dict[str, Any]]:
        q, args = "SELECT * FROM certificates WHERE 1=1", []
        if world:
            q += " AND world=?"
            args.append(world)
        if axis:
            q += " AND axis=?"
            args.append(axis)
        return [dict(r) for r in self._db.execute(q + " ORDER BY axis, level, created_at", args)]

    def log_event(self, campaign_id: str, kind: str, message: str) -> None:
        with self._tx() as db:
            self._event(db, campaign_id, kind, message)

    def events(self, campaign_id: str) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._db.execute(
                "SELECT at, kind, message FROM events WHERE campaign_id=? ORDER BY id", (campaign_id,)
            )
        ]

    @staticmethod
    def _event(db: sqlite3.Connection, campaign_id: str, kind: str, message: str) -> None:
        db.execute(
            "INSERT INTO events (campaign_id, at, kind, message) VALUES (?,?,?,?)",
            (campaign_id, time.time(), kind, message),
        )

    # -- export ------------------------------------------------------------------------------
    def export(self, campaign_id: str, path: Path, fmt: str) -> Path:
        """Every planned trial with its result, as CSV or JSON (with the campaign and events)."""
        rows = [dataclasses.asdict(r) for r in self.rows(campaign_id)]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "csv":
            with path.open("w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(TrialRow.__dataclass_fields__))
                writer.writeheader()
                writer.writerows(rows)
        elif fmt == "json":
            c = self.campaign(campaign_id)
            doc = {
                "campaign": dataclasses.asdict(c),
                "trials": rows,
                "events": self.events(campaign_id),
                "artifacts": self.artifacts(campaign_id),
            }
            path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str))
        else:
            raise StoreError(f"unknown export format '{fmt}'; expected csv or json")
        return path


def _artifact_kind(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".png", ".jpg", ".jpeg"):
        return "level_image" if Path(path).stem.startswith("level_image") else "image"
    if suffix in (".mp4", ".webm", ".gif"):
        return "video"
    if suffix in (".mcap", ".db3") or Path(path).is_dir():
        return "bag"
    return "file"
