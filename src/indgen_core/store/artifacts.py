"""What a campaign leaves besides results: artifacts (images, videos, bags, reports), the
feasibility certificates its levels earned, and its event log."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from indgen_core.store.schema import StoreBase


class ArtifactsMixin(StoreBase):
    """Artifacts, certificates and events."""

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

    def level_image(self, axis: str, level: int) -> str | None:
        """The newest level image of this axis and level in any campaign (the twin's, for a
        person building the real scene), or None."""
        row = self._db.execute(
            "SELECT a.path FROM artifacts a JOIN campaigns c ON c.id=a.campaign_id WHERE a.kind='level_image' "
            "AND c.axis=? AND a.level=? ORDER BY a.id DESC LIMIT 1",
            (axis, level),
        ).fetchone()
        return row[0] if row else None

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


def _artifact_kind(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".png", ".jpg", ".jpeg"):
        return "level_image" if Path(path).stem.startswith("level_image") else "image"
    if suffix in (".mp4", ".webm", ".gif"):
        return "video"
    if suffix in (".mcap", ".db3") or Path(path).is_dir():
        return "bag"
    return "file"
