"""Campaigns and their plans: a campaign is written with its whole plan of trials (and its
signing key) in one transaction; the plan is then read in run order and trials are skipped."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable

from indgen_core.campaign import auth
from indgen_core.campaign.config import stored_config
from indgen_core.campaign.snapshot import AxisSnapshot
from indgen_core.errors import first_line
from indgen_core.store.records import CampaignRecord, PlannedTrial, StoreError
from indgen_core.store.schema import StoreBase


def stored_config_json(record: CampaignRecord) -> dict:
    """The campaign's configuration as the store keeps it (the layout stores have always had):
    the schema's fields, and a blind campaign's letters beside them."""
    stored = record.config.model_dump()
    if record.blind_labels:
        stored["blind_labels"] = dict(record.blind_labels)
    return stored


class CampaignsMixin(StoreBase):
    """Campaigns, their signing keys and their planned trials."""

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
                    json.dumps(stored_config_json(record), sort_keys=True),
                    json.dumps(record.axis_snapshot.to_json(), sort_keys=True),
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
        raw = json.loads(row["config_json"])
        labels = raw.pop("blind_labels", None) or {}
        try:
            config = stored_config(raw)
        except ValueError as exc:  # pydantic's ValidationError
            raise StoreError(
                f"campaign '{row['id']}' has a stored configuration this IndGen cannot read: {first_line(exc)}"
            ) from None
        return CampaignRecord(
            id=row["id"],
            name=row["name"],
            axis=row["axis"],
            world=row["world"],
            purpose=row["purpose"],
            group_name=row["group_name"],
            order_mode=row["order_mode"],
            seed=row["seed"],
            config=config,
            blind_labels=dict(labels),
            axis_snapshot=AxisSnapshot.from_json(json.loads(row["axis_json"])),
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

    #: every table that holds a campaign's rows, children first (foreign keys)
    _CAMPAIGN_TABLES = (
        "events", "labels", "results", "attempts", "artifacts", "certificates", "campaign_keys", "trials"
    )  # fmt: skip

    def delete_campaign(self, campaign_id: str) -> list[str]:
        """Remove a campaign and everything the store holds of it (its certificates too: the
        evidence is gone); returns the paths of its artifacts, for the caller to remove."""
        with self._tx() as db:
            paths = [r[0] for r in db.execute("SELECT path FROM artifacts WHERE campaign_id=?", (campaign_id,))]
            for table in self._CAMPAIGN_TABLES:
                db.execute(f"DELETE FROM {table} WHERE campaign_id=?", (campaign_id,))  # a constant name
            db.execute("DELETE FROM campaigns WHERE id=?", (campaign_id,))
        return paths

    def set_status(self, campaign_id: str, status: str, message: str = "") -> None:
        with self._tx() as db:
            db.execute("UPDATE campaigns SET status=?, updated_at=? WHERE id=?", (status, time.time(), campaign_id))
            self._event(db, campaign_id, "status", f"{status}{': ' + message if message else ''}")

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

    def skip_trial(self, campaign_id: str, trial_id: str, reason: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE trials SET status='skipped', skip_reason=? WHERE campaign_id=? AND trial_id=? "
                "AND status='pending'",
                (reason, campaign_id, trial_id),
            )
