"""What the results store hands out and raises: its row types and its errors.

(Not to be confused with `indgen_core.records`, which holds what a world reports; these are
the store's own rows: a campaign, a planned trial, a trial joined with its final result.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.snapshot import AxisSnapshot
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome


class StoreError(IndGenError):
    pass


class DuplicateResult(StoreError):
    """A second final result for a trial that already has one; the first one stands."""


class RepeatedAttempt(DuplicateResult):
    """An attempt the store already has, sent again under the same attempt key (its sender
    republishes until the store has it): nothing changes, and nothing is wrong."""


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
    """A planned campaign as the store keeps it, typed: its configuration validated again on
    the way out, its axis snapshot, the Definition-4 findings of its planning."""

    id: str
    name: str
    axis: str
    world: str
    purpose: str
    group_name: str
    order_mode: str
    seed: int
    config: CampaignConfig
    axis_snapshot: AxisSnapshot
    #: the planning's Definition-4 findings and their summary (protocol.ProgressionReport)
    protocol: dict[str, Any]
    override_uncertified: bool
    override_reason: str
    status: str
    created_at: float
    updated_at: float
    #: a blind campaign's policy -> letter (blind.py); {} when it is not blind
    blind_labels: dict[str, str] = field(default_factory=dict)

    @property
    def policies(self) -> list[str]:
        return list(self.config.policies)


@dataclass(frozen=True)
class AttemptRow:
    """One recorded attempt of a trial, aborted and interrupted ones included."""

    trial_id: str
    outcome: Outcome
    reason: str


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
    outcome: Outcome | None
    reason: str | None
    partial_score: float | None
    steps: int | None
    duration_s: float | None
    wall_time_s: float | None
    source: str | None
    recorded_at: float | None
    aborted_attempts: int

    def exported(self) -> dict[str, Any]:
        """The row as CSV and JSON exports write it: the outcome spelled as the store keeps it."""
        row = dataclasses.asdict(self)
        row["outcome"] = None if self.outcome is None else self.outcome.word
        return row
