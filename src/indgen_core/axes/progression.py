"""Axes and their progressions (paper section 4).

An axis is one semantics-preserving parameter of a task, moved in atomic steps: level
tau_0 is in distribution, tau_k is k steps further out (k < 0 on the other side of a
two-sided axis). Axes are data: one YAML file each under config/axes/. A composed axis
moves two or more axes together, one atomic step of each per level (for example the pick
translation x visual distractors composition of the paper's Figure 3).

Values normally follow `base + k * step`. A physical axis may instead list what was
measured per level (`measured:`), which is why the protocol checks of Definition 4
(protocol.py) look at the values, not at the formula.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from indgen_core import paths
from indgen_core.axes.spec import SLUG, AxisSpec, Parameter
from indgen_core.configfile import ConfigError, load_model, read_yaml_mapping
from indgen_core.errors import IndGenError

# SLUG is the schema's (axis_spec.py) and named here too: campaign names follow the same rule
__all__ = ["SLUG", "Axis", "AxisLibrary", "Level", "ParameterValue", "UnknownAxisError", "library", "load_axis"]


class UnknownAxisError(IndGenError):
    """An axis name that is not in the library."""


@dataclass(frozen=True)
class ParameterValue:
    name: str
    value: float
    unit: str


@dataclass(frozen=True)
class Level:
    """Level tau_k of an axis: its parameter values and what to tell policy and operator."""

    axis: str
    k: int
    parameters: tuple[ParameterValue, ...]
    in_distribution: bool
    distance: int  # atomic steps from the nearest in-distribution level
    side: int  # +1 / -1 away from the in-distribution levels, 0 inside them
    language_instruction: str | None  # None: the world's own task instruction
    operator_instruction: str = ""

    @property
    def label(self) -> str:
        return f"tau_{self.k}"

    def value(self, name: str) -> float:
        for p in self.parameters:
            if p.name == name:
                return p.value
        raise KeyError(f"level {self.k} of axis '{self.axis}' has no parameter '{name}'")

    def as_dict(self) -> dict[str, float]:
        return {p.name: p.value for p in self.parameters}


@dataclass
class Axis:
    """A validated axis, resolved against the library it was loaded from."""

    spec: AxisSpec
    path: Path
    components: list[tuple[Axis, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def is_composed(self) -> bool:
        return bool(self.components)

    @property
    def physical(self) -> bool:
        return self.spec.operator_instruction is not None

    @property
    def parameter(self) -> Parameter:
        """The parameter a single (not composed) axis moves."""
        p = self.spec.parameter
        assert p is not None, f"axis '{self.name}' is a composition: it has no single parameter"
        return p

    @property
    def moved_parameters(self) -> list[str]:
        if self.is_composed:
            return [name for comp, _ in self.components for name in comp.moved_parameters]
        return [self.parameter.name]

    def steps(self) -> dict[str, float]:
        """The declared atomic step of every moved parameter."""
        if self.is_composed:
            out: dict[str, float] = {}
            for comp, _ in self.components:
                out.update(comp.steps())
            return out
        return {self.parameter.name: self.parameter.step}

    def level_range(self) -> range:
        return range(self.spec.levels.min, self.spec.levels.max + 1)

    def distance(self, k: int) -> tuple[int, int]:
        ids = self.spec.in_distribution
        nearest = min(ids, key=lambda i: (abs(k - i), i))
        return abs(k - nearest), (k > nearest) - (k < nearest)

    def _values(self, k: int) -> list[ParameterValue]:
        if self.is_composed:
            values: list[ParameterValue] = []
            for comp, mode in self.components:
                values.extend(comp._values(abs(k) if mode == "abs" else k))
            return values
        p = self.parameter
        measured = (self.spec.measured or {}).get(k, {})
        values = [ParameterValue(p.name, round(measured.get(p.name, p.base + k * p.step), 10), p.unit)]
        values += [ParameterValue(c.name, measured.get(c.name, c.value), c.unit) for c in self.spec.context]
        return values

    def level(self, k: int) -> Level:
        if k not in self.level_range():
            raise ConfigError(
                self.path, f"level {k} is outside {self.spec.levels.min}..{self.spec.levels.max}", field="levels"
            )
        distance, side = self.distance(k)
        params = tuple(self._values(k))
        return Level(
            axis=self.name,
            k=k,
            parameters=params,
            in_distribution=k in self.spec.in_distribution,
            distance=distance,
            side=side,
            language_instruction=self.spec.language_instruction,
            operator_instruction=self.render_operator_instruction(k, params),
        )

    def levels(self, ks: Iterable[int] | None = None) -> list[Level]:
        return [self.level(k) for k in (self.level_range() if ks is None else ks)]

    def render_operator_instruction(self, k: int, params: tuple[ParameterValue, ...] | None = None) -> str:
        template = self.spec.operator_instruction
        if template is None:
            return ""
        if isinstance(template, dict):
            template = template.get(str(k), template.get("default", ""))
        params = params if params is not None else tuple(self._values(k))
        return template.format_map(self._template_fields(k, params))

    def _template_fields(self, k: int, params: tuple[ParameterValue, ...]) -> dict:
        distance, _ = self.distance(k)
        fields: dict[str, object] = {"k": k, "steps": distance, "abs_k": abs(k)}
        fields.update({p.name: p.value for p in params})
        if not self.is_composed:
            p = self.parameter
            fields.update(value=params[0].value, unit=p.unit, step=abs(p.step), base=p.base)
        return fields


class AxisLibrary:
    """All axes known to IndGen: config/axes/*.yaml plus any files named explicitly."""

    def __init__(self, directories: Iterable[Path] | None = None):
        self.directories = list(directories) if directories is not None else [paths.config_dir() / "axes"]
        self._specs: dict[str, tuple[AxisSpec, Path]] = {}
        self._axes: dict[str, Axis] = {}
        for directory in self.directories:
            for path in sorted(Path(directory).glob("*.yaml")):
                self.add_file(path)

    def add_file(self, path: Path, replace: bool = False) -> AxisSpec:
        """Add an axis file; with `replace` it takes the place of a known axis of the same name
        (`indgen axes check` on an edited copy of a shipped axis)."""
        path = Path(path)
        spec = load_model(path, AxisSpec, data=read_yaml_mapping(path))
        if path.stem != spec.name:
            raise ConfigError(
                path, f"axis name '{spec.name}' must match the file name '{path.stem}.yaml'", field="name"
            )
        previous = self._specs.get(spec.name)
        if previous and previous[1].resolve() != path.resolve() and not replace:
            raise ConfigError(path, f"axis '{spec.name}' is already defined in {previous[1]}", field="name")
        self._specs[spec.name] = (spec, path)
        self._axes.pop(spec.name, None)
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def get(self, name: str) -> Axis:
        if name in self._axes:
            return self._axes[name]
        if name not in self._specs:
            guess = difflib.get_close_matches(name, self._specs, n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else f"; known axes: {', '.join(self.names())}"
            raise UnknownAxisError(f"unknown axis '{name}'{hint}")
        return self._resolve(name, stack=())

    def all(self) -> list[Axis]:
        return [self.get(n) for n in self.names()]

    def _resolve(self, name: str, stack: tuple[str, ...]) -> Axis:
        spec, path = self._specs[name]
        axis = Axis(spec, path)
        if spec.compose:
            for i, comp in enumerate(spec.compose):
                where = f"compose[{i}].axis"
                if comp.axis in stack or comp.axis == name:
                    raise ConfigError(path, f"composition refers back to '{comp.axis}' (a cycle)", field=where)
                if comp.axis not in self._specs:
                    raise ConfigError(
                        path, f"unknown axis '{comp.axis}'; known axes: {', '.join(self.names())}", field=where
                    )
                inner = self._resolve(comp.axis, (*stack, name))
                if inner.is_composed:
                    raise ConfigError(path, f"'{comp.axis}' is itself a composition; compose single axes", field=where)
                axis.components.append((inner, comp.level))
            moved = axis.moved_parameters
            if len(set(moved)) != len(moved):
                raise ConfigError(path, f"the composed axes move the same parameter twice ({moved})", field="compose")
            for k in axis.level_range():
                for inner, mode in axis.components:
                    kk = abs(k) if mode == "abs" else k
                    if kk not in inner.level_range():
                        raise ConfigError(
                            path,
                            f"level {k} needs level {kk} of '{inner.name}', which only has "
                            f"{inner.spec.levels.min}..{inner.spec.levels.max}",
                            field="levels",
                        )
        self._check_template(axis)
        self._axes[name] = axis
        return axis

    @staticmethod
    def _check_template(axis: Axis) -> None:
        template = axis.spec.operator_instruction
        if template is None:
            return
        texts = template.items() if isinstance(template, dict) else [("", template)]
        for key, text in texts:
            where = "operator_instruction" + (f".{key}" if key else "")
            try:
                names = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
            except ValueError as exc:
                raise ConfigError(axis.path, f"is not a valid template ({exc})", field=where) from None
            known = set(axis._template_fields(0, tuple(axis._values(axis.spec.in_distribution[0]))))
            for name in names:
                base = re.split(r"[.\[]", name, maxsplit=1)[0]
                if base not in known:
                    raise ConfigError(
                        axis.path,
                        f"unknown placeholder {{{name}}}; known: {', '.join('{' + n + '}' for n in sorted(known))}",
                        field=where,
                    )
        try:
            for k in axis.level_range():
                axis.render_operator_instruction(k)
        except (ValueError, IndexError, KeyError) as exc:
            raise ConfigError(axis.path, f"cannot be rendered ({exc})", field="operator_instruction") from None


_default_library: AxisLibrary | None = None


def library() -> AxisLibrary:
    """The library of the installed config/axes (loaded once)."""
    global _default_library
    if _default_library is None:
        _default_library = AxisLibrary()
    return _default_library


def load_axis(name_or_path: str | Path, lib: AxisLibrary | None = None) -> Axis:
    """An axis by name, or from a YAML file path (resolved against the library for compositions)."""
    lib = lib or library()
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or candidate.is_file():
        spec = lib.add_file(candidate)
        return lib.get(spec.name)
    return lib.get(str(name_or_path))
