"""The paper's conditions on a difficulty progression (Definition 4, Assumptions 4.1-4.2),
checked on the concrete levels a campaign is about to run.

- single axis: between consecutive levels exactly the axis' own parameter changes (one
  parameter per component for a composition); everything the axis holds fixed stays fixed;
- atomic step: that change equals the declared step (within the axis' tolerance);
- nesting: the levels form an unbroken chain outward from the in-distribution level(s), and
  every parameter moves strictly further from its in-distribution value at each step;
- feasibility: every level carries a certificate, an oracle's success recorded in the results
  store, before a policy is scored on it (Assumption 4.2).
In the black-box regime the ordering is validated post hoc (stats.monotonicity, in reports).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from indgen_core.axes.progression import Axis, Level
from indgen_core.errors import IndGenError

SINGLE_AXIS, ATOMIC_STEP, NESTING, FEASIBILITY = "single_axis", "atomic_step", "nesting", "feasibility"


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str
    level: int | None = None


@dataclass
class ProtocolReport:
    axis: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    def violations(self, check: str | None = None) -> list[Finding]:
        return [f for f in self.findings if not f.ok and (check is None or f.check == check)]

    def passed(self, check: str) -> bool:
        return not self.violations(check)

    def summary(self) -> dict[str, bool]:
        return {
            c: self.passed(c)
            for c in (SINGLE_AXIS, ATOMIC_STEP, NESTING, FEASIBILITY)
            if any(f.check == c for f in self.findings)
        }


class ProtocolViolation(IndGenError):
    """A campaign that would break Definition 4 and was not explicitly allowed to."""


def _component_levels(axis: Axis, k: int) -> dict[str, int]:
    """For every moved parameter, the level of the single axis that moves it at composed level k."""
    if not axis.is_composed:
        return {axis.parameter.name: k}
    out = {}
    for comp, mode in axis.components:
        kk = abs(k) if mode == "abs" else k
        out.update(dict.fromkeys(comp.moved_parameters, kk))
    return out


def check_progression(axis: Axis, levels: Sequence[Level] | None = None) -> ProtocolReport:
    """Single-axis, atomic-step and nesting checks on `levels` (default: all levels of the axis)."""
    levels = sorted(levels if levels is not None else axis.levels(), key=lambda lv: lv.k)
    report = ProtocolReport(axis.name)
    steps = axis.steps()
    tolerance = axis.spec.step_tolerance
    moved = set(axis.moved_parameters)
    ks = [lv.k for lv in levels]

    # nesting 1: an unbroken chain of levels that contains an in-distribution level
    ids = set(axis.spec.in_distribution)
    if ks and (ks != list(range(ks[0], ks[-1] + 1))):
        missing = sorted(set(range(ks[0], ks[-1] + 1)) - set(ks))
        report.findings.append(
            Finding(NESTING, False, f"levels skip {missing}: each level must be one atomic step from the previous one")
        )
    if ks and not ids & set(ks):
        report.findings.append(
            Finding(
                NESTING,
                False,
                f"no in-distribution level {sorted(ids)} among {ks}: a progression starts in distribution",
            )
        )
    if ids and sorted(ids) != list(range(min(ids), max(ids) + 1)):
        report.findings.append(Finding(NESTING, False, f"in-distribution levels {sorted(ids)} have a gap"))

    for prev, cur in itertools.pairwise(levels):
        a, b = prev.as_dict(), cur.as_dict()
        changed = {
            n
            for n in a.keys() | b.keys()
            if abs(a.get(n, float("nan")) - b.get(n, float("nan"))) > 1e-12 or (n in a) != (n in b)
        }
        ka, kb = _component_levels(axis, prev.k), _component_levels(axis, cur.k)
        expected = {n for n in moved if ka[n] != kb[n]}
        where = f"tau_{prev.k} -> tau_{cur.k}"
        if changed == expected:
            report.findings.append(Finding(SINGLE_AXIS, True, f"{where}: only {sorted(changed)} changes", cur.k))
        else:
            extra, unchanged = sorted(changed - expected), sorted(expected - changed)
            parts = [f"{extra} also change" if extra else "", f"{unchanged} do not change" if unchanged else ""]
            report.findings.append(Finding(SINGLE_AXIS, False, f"{where}: " + "; ".join(p for p in parts if p), cur.k))
        for name in sorted(expected & changed):
            want = steps[name] * (kb[name] - ka[name])
            got = b[name] - a[name]
            ok = abs(got - want) <= max(tolerance * abs(want), 1e-9)
            report.findings.append(
                Finding(
                    ATOMIC_STEP,
                    ok,
                    f"{where}: {name} changes by {got:+.6g}" + ("" if ok else f", expected one step of {want:+.6g}"),
                    cur.k,
                )
            )

    # nesting 2: each moved parameter moves strictly further from its in-distribution value
    by_k = {lv.k: lv for lv in levels}
    for name in sorted(moved):
        for lv in levels:
            if lv.side == 0:
                continue
            inner_k = lv.k - lv.side
            if inner_k not in by_k:
                continue
            anchor = by_k[min((k for k in by_k if k in ids), key=lambda k: abs(k - lv.k), default=inner_k)]
            d_out = abs(lv.value(name) - anchor.value(name))
            d_in = abs(by_k[inner_k].value(name) - anchor.value(name))
            if _component_levels(axis, lv.k)[name] == _component_levels(axis, inner_k)[name]:
                continue
            ok = d_out > d_in + 1e-12
            report.findings.append(
                Finding(
                    NESTING,
                    ok,
                    f"tau_{lv.k}: {name} is {d_out:.6g} from tau_{anchor.k}"
                    + ("" if ok else f", not further than tau_{inner_k} ({d_in:.6g})"),
                    lv.k,
                )
            )
    return report


def certificate_key(world: str, axis: str, level: Level, options: Mapping | None = None) -> str:
    """What a feasibility certificate certifies: this world, this axis level with exactly these
    parameter values, and these world options (a LIBERO task, ...)."""
    payload = {
        "world": world,
        "axis": axis,
        "k": level.k,
        "parameters": [[p.name, round(p.value, 9), p.unit] for p in level.parameters],
        "options": dict(sorted((options or {}).items())),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def check_feasibility(levels: Sequence[Level], certified: Mapping[int, str | None]) -> list[Finding]:
    """One finding per level: certified (with what) or not."""
    out = []
    for lv in levels:
        cert = certified.get(lv.k)
        out.append(
            Finding(
                FEASIBILITY,
                cert is not None,
                f"tau_{lv.k}: " + (cert if cert else "no feasibility certificate (run the oracle first)"),
                lv.k,
            )
        )
    return out
