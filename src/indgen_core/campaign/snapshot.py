"""The axis as a campaign planned it, kept with the campaign in the store: a resumed campaign
runs exactly the setups it planned, and its report describes the levels it ran, even if the
axis file changed since."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from indgen_core.axes.progression import Axis, Level, ParameterValue
from indgen_core.stats.level_stats import DEFAULT_THRESHOLD


@dataclass(frozen=True)
class AxisSnapshot:
    name: str
    #: "vanilla" (an oracle certifies levels) or "black_box" (monotonicity checked after the fact)
    regime: str
    in_distribution: tuple[int, ...]
    #: the axis' own break threshold (a campaign's `break_threshold` overrides it)
    break_threshold: float
    #: a person changes the scene between levels (the axis has an operator instruction)
    physical: bool
    #: the parameters the axis moves
    moved: tuple[str, ...]
    #: the planned levels, by k
    levels: Mapping[int, Level]

    @classmethod
    def of(cls, axis: Axis, levels: list[Level]) -> AxisSnapshot:
        return cls(
            name=axis.name,
            regime=axis.spec.regime,
            in_distribution=tuple(axis.spec.in_distribution),
            break_threshold=axis.spec.break_threshold,
            physical=axis.physical,
            moved=tuple(axis.moved_parameters),
            levels={lv.k: lv for lv in levels},
        )

    def to_json(self) -> dict[str, Any]:
        """The store's form (the layout stores have always had: levels keyed by "k")."""
        return {
            "name": self.name,
            "regime": self.regime,
            "in_distribution": list(self.in_distribution),
            "break_threshold": self.break_threshold,
            "physical": self.physical,
            "moved": list(self.moved),
            "levels": {str(k): dataclasses.asdict(lv) for k, lv in self.levels.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AxisSnapshot:
        def level(raw: Mapping[str, Any]) -> Level:
            return Level(**{**raw, "parameters": tuple(ParameterValue(**p) for p in raw["parameters"])})

        return cls(
            name=data["name"],
            regime=data.get("regime", "vanilla"),
            in_distribution=tuple(data.get("in_distribution", (0,))),
            break_threshold=data.get("break_threshold", DEFAULT_THRESHOLD),
            physical=bool(data.get("physical", False)),
            moved=tuple(data.get("moved", ())),
            levels={int(k): level(raw) for k, raw in sorted(data["levels"].items(), key=lambda kv: int(kv[0]))},
        )
