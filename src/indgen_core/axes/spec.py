"""The YAML schema of an axis file (config/axes/*.yaml), as pydantic models: what a file may
say, and the rule each field must follow, with the sentence a bad file is refused with.

Kept apart from axes.py, which resolves a valid file into an axis (compositions, levels,
templates): this module only decides whether one file, on its own, is well-formed.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from indgen_core.axes.units import UNITS
from indgen_core.stats.level_stats import DEFAULT_THRESHOLD

SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


def _check_slug(v: str) -> str:
    if not SLUG.match(v):
        raise ValueError(f"must be a lower-case identifier (letters, digits, _), got {v!r}")
    return v


def _check_unit(v: str) -> str:
    if v not in UNITS:
        raise ValueError(f"unknown unit {v!r}; expected one of {', '.join(UNITS)}")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Parameter(_Strict):
    """The one parameter an axis moves."""

    name: str = Field(description="identifier, e.g. blue_block_raise")
    unit: str = Field(description="unit of base and step (see units.py)")
    base: float = Field(description="value at level 0")
    step: float = Field(description="change per level: one atomic step")
    #: what the parameter is, in words, for people reading the file (IndGen does not read it)
    description: str = ""

    _slug = field_validator("name")(_check_slug)
    _unit = field_validator("unit")(_check_unit)

    @field_validator("step")
    @classmethod
    def _nonzero(cls, v: float) -> float:
        if v == 0 or not math.isfinite(v):
            raise ValueError("must be a finite, non-zero number: one atomic step")
        return v


class ContextParameter(_Strict):
    """A parameter the axis holds fixed (documented so the protocol can check it stays fixed)."""

    #: its name, a lower-case identifier; every level lists it under this name with its value
    name: str
    #: unit of value: one of units.py's (m, cm, mm, in, rad, deg, x, count, blocks, region)
    unit: str
    #: the value held at every level, in unit (a level's entry in measured replaces it)
    value: float

    _slug = field_validator("name")(_check_slug)
    _unit = field_validator("unit")(_check_unit)


class LevelRange(_Strict):
    #: the lowest level k: 0 (one-sided, 0..max) or -max (two-sided, -max..max)
    min: int
    #: the highest level k
    max: int

    @model_validator(mode="after")
    def _shape(self) -> LevelRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        if self.min not in (0, -self.max):
            raise ValueError(f"must be one-sided (min 0) or two-sided (min = -max), got {self.min}..{self.max}")
        return self


class Component(_Strict):
    """One axis inside a composition; `level: abs` makes it follow |k| (e.g. a distractor count)."""

    #: a single (not composed) axis of the library, by name
    axis: str
    #: k: the component is at the composed level k; abs: at |k| (its own levels must include each one)
    level: Literal["k", "abs"] = "k"


class AxisSpec(_Strict):
    """The YAML schema of an axis."""

    #: lower-case identifier, the same as the file name without .yaml; campaigns and compositions use it
    name: str
    #: the worlds the axis is defined for (lower-case identifiers); a campaign's world must be one of them
    worlds: list[str] = Field(min_length=1)
    #: one line on what the axis moves, shown by `indgen axes show`
    description: str = ""
    source: str = Field(default="", description="where the axis comes from (paper section, table)")
    #: the one parameter a single axis moves; an axis has exactly one of parameter and compose
    parameter: Parameter | None = None
    #: a composition: two or more single axes moved together, one atomic step of each per level
    compose: list[Component] | None = None
    #: parameters the axis holds fixed; every level lists them with its values, so the protocol's
    #: single-axis check sees that they do not change
    context: list[ContextParameter] = []
    #: level -> parameter name -> the value measured on the real objects, used at that level instead of
    #: base + k x step (or the context value); its names are the axis' parameter or its context parameters
    measured: dict[int, dict[str, float]] | None = None
    #: relative tolerance of the atomic-step check: a level's change may differ from one step by this
    #: fraction of the step (0 to 0.5); it matters where values are measured
    step_tolerance: float = Field(default=1e-6, ge=0, le=0.5)
    #: the range of level k, min..max
    levels: LevelRange
    #: the in-distribution levels (usually [0]; BlockEnv [0, 1, 2]), inside levels and without a gap (the
    #: nesting check): a level's distance is counted in steps from the nearest of them
    in_distribution: list[int] = Field(min_length=1)
    #: vanilla: the policy's training support is known; black_box: it is not, and the report adds the
    #: monotonicity check (whether success falls away from the in-distribution levels)
    regime: Literal["vanilla", "black_box"]
    language_instruction: str | None = Field(
        default=None, min_length=1, description="what the policy is told; null: the world's own task instruction"
    )
    #: physical axes: what the person at the cell is told to build, a template ({k}, {abs_k}, {steps},
    #: {value}, {step}, {unit}, {base}, parameter names) or level -> template with a `default`; null: none
    operator_instruction: str | dict[str, str] | None = None
    #: default trial order of the axis' campaigns: interleaved (each round shuffles every level and policy)
    #: or sequential (each level's trials before the next, nearest tau_0 first: one physical setup per level)
    order: Literal["interleaved", "sequential"] = "interleaved"
    #: success rate below which a level counts as broken (a campaign's own break_threshold overrides it)
    break_threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0, lt=1)

    _slug = field_validator("name")(_check_slug)

    @field_validator("worlds")
    @classmethod
    def _worlds(cls, v: list[str]) -> list[str]:
        for w in v:
            if not SLUG.match(w):
                raise ValueError(f"world names are lower-case identifiers, got {w!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> AxisSpec:
        if (self.parameter is None) == (self.compose is None):
            raise ValueError(
                "parameter: an axis needs exactly one of 'parameter' (a single axis) or 'compose' (a composition)"
            )
        if self.compose is not None and len(self.compose) < 2:
            raise ValueError("compose: needs at least two axes")
        for k in self.in_distribution:
            if not self.levels.min <= k <= self.levels.max:
                raise ValueError(f"in_distribution: level {k} lies outside levels {self.levels.min}..{self.levels.max}")
        if self.measured:
            known = {self.parameter.name} if self.parameter else set()
            known |= {c.name for c in self.context}
            for k, values in self.measured.items():
                if not self.levels.min <= k <= self.levels.max:
                    raise ValueError(f"measured: level {k} lies outside levels {self.levels.min}..{self.levels.max}")
                unknown = set(values) - known
                if unknown:
                    raise ValueError(f"measured: level {k} names unknown parameter(s) {sorted(unknown)}")
        if isinstance(self.operator_instruction, dict):
            for key in self.operator_instruction:
                if key != "default" and not re.fullmatch(r"-?\d+", str(key)):
                    raise ValueError(f"operator_instruction: keys are levels or 'default', got {key!r}")
        return self
