"""The plain-Python records that cross every boundary: a trial's task setup and its result.

They mirror indgen_msgs/TaskSetup and EpisodeResult field by field (ros/convert.py maps
one to the other), so the core, the store and in-process loops never need ROS.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import Any

from indgen_core.axes.progression import ParameterValue


class Outcome(enum.IntEnum):
    """Same numbers as EpisodeResult.OUTCOME_*."""

    SUCCESS = 0
    FAILURE = 1
    TIMEOUT = 2
    ABORTED = 3
    INVALID = 4
    #: the operator skipped the trial (recorded, not scored, not run again)
    SKIPPED = 5
    #: the operator asked for a redo: this attempt is kept, the trial runs again
    SUPERSEDED = 6

    @property
    def scored(self) -> bool:
        """Counts in a success rate (success, failure, timeout); the others do not."""
        return self in (Outcome.SUCCESS, Outcome.FAILURE, Outcome.TIMEOUT)

    @property
    def word(self) -> str:
        """How the store, the exports and the logs spell it ("success", "timeout", ...)."""
        return self.name.lower()

    @property
    def final(self) -> bool:
        """Ends the trial; an aborted or superseded attempt is run again."""
        return self not in (Outcome.ABORTED, Outcome.SUPERSEDED)

    @classmethod
    def parse(cls, text: str | int | Outcome) -> Outcome:
        if isinstance(text, Outcome):
            return text
        if isinstance(text, int):
            return cls(text)
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown outcome {text!r}; expected one of {[o.word for o in cls]}") from None


class Source(enum.IntEnum):
    """Same numbers as EpisodeResult.SOURCE_*."""

    AUTO = 0
    OPERATOR = 1


@dataclass(frozen=True)
class TaskSetup:
    """tau_k of one trial (indgen_msgs/TaskSetup)."""

    campaign_id: str
    trial_id: str
    world: str
    axis: str
    level: int
    in_distribution: bool
    parameters: tuple[ParameterValue, ...]
    trial_index: int
    seed: int
    policy: str
    language_instruction: str = ""
    operator_instruction: str = ""
    max_steps: int = 0
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def blank(
        cls,
        trial_id: str = "",
        world: str = "",
        axis: str = "",
        in_distribution: bool = False,
        language_instruction: str = "",
    ) -> TaskSetup:
        """A setup that names no campaign (a warm-up, a placeholder for an unreadable goal, a
        scene before the first trial): every other field empty or zero."""
        return cls(
            campaign_id="",
            trial_id=trial_id,
            world=world,
            axis=axis,
            level=0,
            in_distribution=in_distribution,
            parameters=(),
            trial_index=0,
            seed=0,
            policy="",
            language_instruction=language_instruction,
        )

    def value(self, name: str, default: float | None = None) -> float:
        for p in self.parameters:
            if p.name == name:
                return p.value
        if default is not None:
            return default
        raise KeyError(f"setup {self.trial_id} has no parameter '{name}' (has {[p.name for p in self.parameters]})")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


@dataclass(frozen=True)
class TrialResult:
    """The outcome of one episode (indgen_msgs/EpisodeResult)."""

    trial_id: str
    outcome: Outcome
    reason: str = ""
    partial_score: float = 0.0
    steps: int = 0
    duration_s: float = 0.0
    wall_time_s: float = 0.0
    source: Source = Source.AUTO
    artifacts: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.outcome is Outcome.SUCCESS
