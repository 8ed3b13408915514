"""The results store: one SQLite file (WAL mode) that no trial result is ever lost from.

A trial's final result, its attempt record and its "done" mark are written in one
transaction (synchronous=FULL) before the next trial starts, so a campaign killed at any
instant resumes exactly where it stopped: the trial that was running has no result and runs
again; a committed one is never run or counted twice (results are keyed by trial id).
Several processes may use the store at once (the scorer writes while a report reads).

Default location: $INDGEN_DB, else $XDG_DATA_HOME/indgen/results.sqlite (see paths.py).

The package, by idea (each module reads in one sitting):

    records.py     the rows it hands out (CampaignRecord, PlannedTrial, TrialRow) and its errors
    schema.py      the SQL schema, opening (and migrating) the file, the transaction helper
    campaigns.py   campaigns, their signing keys, their planned trials
    results.py     committing results and attempts; operator labels and relabels
    tallies.py     reads: attempts, label histories, trials with results, counts
    artifacts.py   artifacts, feasibility certificates, the event log

Why mixins on one class, rather than functions over a connection: callers hold one
`ResultsStore` and call its methods (`store.commit_result(...)`), one surface however the code
is grouped. Every mixin derives from `StoreBase`, which owns the connection and `_tx()`, so
each group writes in the transactions of the one class. `export` reads every group, so it lives on the composed class.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

from indgen_core.store.artifacts import ArtifactsMixin
from indgen_core.store.campaigns import CampaignsMixin
from indgen_core.store.records import (
    AttemptRow,
    CampaignRecord,
    DuplicateResult,
    PlannedTrial,
    RepeatedAttempt,
    StoreError,
    TrialRow,
)
from indgen_core.store.results import ResultsMixin
from indgen_core.store.tallies import TalliesMixin

__all__ = [
    "AttemptRow",
    "CampaignRecord",
    "DuplicateResult",
    "PlannedTrial",
    "RepeatedAttempt",
    "ResultsStore",
    "StoreError",
]


class ResultsStore(CampaignsMixin, ResultsMixin, TalliesMixin, ArtifactsMixin):
    """One connection to the store. Open one per process (and per thread that writes)."""

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def export(self, campaign_id: str, path: Path, fmt: str) -> Path:
        """Every planned trial with its result, as CSV or JSON (with the campaign and events)."""
        rows = [r.exported() for r in self.rows(campaign_id)]
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
