"""The report's rows: one plain dict per level, per comparison and per level with the twin beside it,
and the one-line break and guarantee texts. The Markdown, the terminal tables and the JSON
summary are all built from these, so the three outputs cannot disagree on a number."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from indgen_core.report.analysis import CampaignSummary, PolicyCurve


def percent(value: float, threshold: float) -> str:
    """A rate or interval bound as a percentage, whole unless rounding would put it on the
    other side of the threshold (19.79% is not "20%" when 20% is where a level breaks)."""
    for digits in range(0, 4):
        text = f"{value:.{digits}%}"
        shown = float(text.rstrip("%")) / 100
        if (shown < threshold) == (value < threshold):
            return text
    return text


def interval_text(bounds: Sequence[float], threshold: float) -> str:
    low, high = bounds
    return f"[{percent(low, threshold)}, {percent(high, threshold)}]"


def _fmt_params(summary: CampaignSummary, k: int) -> str:
    level = summary.record.axis_snapshot.levels[k]
    moved = set(summary.record.axis_snapshot.moved)
    return ", ".join(f"{p.name}={p.value:g} {p.unit}" for p in level.parameters if p.name in moved or not moved)


def level_rows(summary: CampaignSummary, curve: PolicyCurve) -> list[dict[str, Any]]:
    rows = []
    for lv in curve.levels:
        low, high = lv.interval
        tags = []
        if lv.in_distribution:
            tags.append("ID")
        if lv.level in curve.breaks.point.values():
            tags.append("BREAK")
        rows.append(
            {
                "policy": curve.policy,
                "k": lv.level,
                "parameters": _fmt_params(summary, lv.level),
                "n": lv.n,
                "successes": lv.successes,
                "invalid": lv.invalid,
                "rate": lv.rate,
                "ci_low": low,
                "ci_high": high,
                "verdict": lv.verdict,
                "tags": " ".join(tags),
            }
        )
    return rows


def _break_text(curve: PolicyCurve) -> str:
    """The paper's point estimate (Table 1 uses it): the first level below the threshold."""
    parts = []
    for side in sorted(curve.breaks.point, reverse=True):
        name = {1: "k>0", -1: "k<0"}.get(side, "")
        point, cons, k_star = curve.breaks.point[side], curve.breaks.conservative[side], curve.breaks.k_star[side]
        text = f"breaks at k={point}" if point is not None else "no break"
        text += f", conservative k={cons}" if cons is not None else ", conservative: none"
        text += f", k*={k_star}" if k_star is not None else ", k*: none (fails in distribution)"
        parts.append(f"{name}: {text}" if len(curve.breaks.point) > 1 else text)
    return "; ".join(parts) or "no levels outside the in-distribution set were run"


def guarantee_text(curve: PolicyCurve) -> str:
    """The claims with a stated error, per side."""
    parts = []
    for side, g in sorted(curve.guarantee.items(), reverse=True):
        name = {1: "k>0", -1: "k<0"}.get(side, "")
        parts.append(f"{name}: {g.describe()}" if len(curve.guarantee) > 1 else g.describe())
    return "; ".join(parts) or "no level outside the in-distribution set was run"


def search_text(curve: PolicyCurve) -> str:
    """The break set of a campaign run by the break search, and the trials that found it."""
    parts = []
    for side, found in sorted(curve.search.items(), reverse=True):
        name = {1: "k>0: ", -1: "k<0: "}.get(side, "") if len(curve.search) > 1 else ""
        trials = ", ".join(f"k={k} {lv.n}" for k, lv in zip(found.chain, found.search.levels, strict=True) if lv.n)
        parts.append(f"{name}{found.describe()}; trials where the search put them: {trials or 'none yet'}")
    return "; ".join(parts)


def search_json(curve: PolicyCurve) -> dict[str, Any]:
    return {
        str(side): {
            "levels": found.levels,
            "decided": found.found.decided,
            "contradicted": found.found.contradicted,
            "confidence": 1 - found.found.alpha,
            "trials": {str(k): lv.n for k, lv in zip(found.chain, found.search.levels, strict=True)},
        }
        for side, found in curve.search.items()
    }


def comparison_rows(comparisons) -> list[dict[str, Any]]:
    return [
        {
            "level": c.level,
            "a": c.a,
            "b": c.b,
            "difference": c.difference,
            "ci": list(c.interval),
            "p_value": c.p_value,
            "p_holm": c.p_adjusted,
            "better": c.better,
            "method": c.method,
            "pairs": c.pairs,
            "a_only": c.a_only,
            "b_only": c.b_only,
            "dropped": c.dropped,
        }
        for c in comparisons
    ]


def summary_json(summaries: Sequence[CampaignSummary]) -> dict[str, Any]:
    out = []
    for s in summaries:
        out.append(
            {
                "campaign_id": s.record.id,
                "name": s.record.name,
                "axis": s.record.axis,
                "world": s.record.world,
                "purpose": s.record.purpose,
                "regime": s.record.axis_snapshot.regime,
                "in_distribution": s.in_distribution,
                "break_threshold": s.threshold,
                "protocol": s.record.protocol.get("summary", {}),
                "override_uncertified": s.record.override_uncertified,
                "override_reason": s.record.override_reason,
                "policies": [
                    {
                        "policy": c.policy,
                        "levels": level_rows(s, c),
                        "break_point": {str(k): v for k, v in c.breaks.point.items()},
                        "break_conservative": {str(k): v for k, v in c.breaks.conservative.items()},
                        "k_star": {str(k): v for k, v in c.breaks.k_star.items()},
                        "monotonicity": None
                        if c.monotonicity is None
                        else {
                            "monotone": c.monotonicity.monotone,
                            "strict": c.monotonicity.strictly_monotone,
                            "kendall_tau": _num(c.monotonicity.tau),
                            "p_value": _num(c.monotonicity.p_value),
                            "reversals": [vars(r) | {"significant": r.significant} for r in c.monotonicity.reversals],
                        },
                        "pending": c.pending,
                        "skipped": c.skipped,
                        "aborted_attempts": c.aborted_attempts,
                        "guarantee": {
                            str(side): {
                                "held_through": g.held_through,
                                "broken_at": g.broken_at,
                                "next_level": g.next_level,
                                "alpha_each": g.alpha_each,
                            }
                            for side, g in c.guarantee.items()
                        },
                        "break_search": search_json(c),
                    }
                    for c in s.curves
                ],
                "interval": s.interval_kind,
                "comparisons": comparison_rows(s.comparisons),
                "registered_analysis": {"plan": s.registered_plan, "comparisons": comparison_rows(s.registered)}
                if s.registered_plan
                else None,
                "blind": s.record.config.blind,
                "twin": {"campaign_id": s.twin_id, "note": s.twin_note, "levels": twin_rows(s)} if s.twin_id else None,
                "invalid_trials": s.invalid,
                "operator": [{"policy": p, "level": k, **c} for (p, k), c in sorted(s.operator.items())],
                "robot_stops": [{"policy": p, "level": k, **c} for (p, k), c in sorted(s.robot_stops.items())],
            }
        )
    return {"campaigns": out}


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def twin_rows(summary: CampaignSummary) -> list[dict[str, Any]]:
    return [
        {
            "policy": p,
            "k": t.level,
            "real_n": t.real_n,
            "real_successes": t.real_successes,
            "real_only_ci": list(t.real_only),
            "twin_n": t.twin_n,
            "twin_successes": t.twin_successes,
            "pairs": t.pairs,
            "agreement": t.agreement,
            "estimate": t.estimate,
            "twin_ppi_ci": list(t.interval),
            "width_ratio": _num(t.width_ratio),
        }
        for p, t in summary.twin
    ]
