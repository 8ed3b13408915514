"""The store's file: its schema, the connection that opens (and migrates) it, transactions.

`StoreBase` owns the one SQLite connection; every method group of `ResultsStore` (the mixins
beside this module) reads `self._db` and writes through `self._tx()`, so a group's writes are
exactly the transactions they were when the store was one class.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from indgen_core import paths
from indgen_core.store.records import StoreError

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
    attempt_key TEXT,  -- its sender's identity of the attempt (a signature): a repeat is refused
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


class StoreBase:
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
        for table, column, kind in (
            ("artifacts", "details_json", "TEXT NOT NULL DEFAULT '{}'"),
            ("attempts", "attempt_key", "TEXT"),
        ):
            have = {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        # an attempt sent again (the manager republishes until the store has it) is refused here,
        # whichever scorer process sees it: SQLite's unique index treats NULL keys as distinct
        self._db.execute("CREATE UNIQUE INDEX IF NOT EXISTS attempts_key ON attempts(campaign_id, attempt_key)")

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @staticmethod
    def _event(db: sqlite3.Connection, campaign_id: str, kind: str, message: str) -> None:
        db.execute(
            "INSERT INTO events (campaign_id, at, kind, message) VALUES (?,?,?,?)",
            (campaign_id, time.time(), kind, message),
        )
