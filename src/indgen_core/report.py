"""Reports: a table on the terminal, and Markdown, self-contained HTML, PNG plots and a JSON
summary on disk, for one campaign or several shown together (one line per policy)."""

from __future__ import annotations

import base64
import html
import json
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indgen_core import plots
from indgen_core.analysis import CampaignSummary, PolicyCurve, summarize
from indgen_core.campaign import level_from_snapshot
from indgen_core.store import ResultsStore


@dataclass
class ReportFiles:
    directory: Path
    markdown: Path
    html: Path
    json: Path
    plots: list[Path]


def _fmt_params(summary: CampaignSummary, k: int) -> str:
    level = level_from_snapshot(summary.record.axis_snapshot, k)
    moved = set(summary.record.axis_snapshot.get("moved", []))
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
                "regime": s.record.axis_snapshot.get("regime"),
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
                    }
                    for c in s.curves
                ],
                "interval": s.interval_kind,
                "comparisons": comparison_rows(s.comparisons),
                "registered_analysis": {"plan": s.registered_plan, "comparisons": comparison_rows(s.registered)}
                if s.registered_plan
                else None,
                "blind": bool(s.record.config.get("blind")),
                "twin": {"campaign_id": s.twin_id, "note": s.twin_note, "levels": twin_rows(s)} if s.twin_id else None,
                "invalid_trials": s.invalid,
                "operator": [{"policy": p, "level": k, **c} for (p, k), c in sorted(s.operator.items())],
                "robot_stops": [{"policy": p, "level": k, **c} for (p, k), c in sorted(s.robot_stops.items())],
            }
        )
    return {"campaigns": out}


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def markdown(
    summaries: Sequence[CampaignSummary],
    plot_names: Sequence[str],
    images: dict[int, str],
    videos: dict[int, str] | None = None,
) -> str:
    first = summaries[0].record
    lines = [f"# IndGen report: axis `{first.axis}` in `{first.world}`", ""]
    for name in plot_names:
        lines += [f"![success per level]({name})", ""]
    for s in summaries:
        r = s.record
        lines += [
            f"## Campaign `{r.id}`",
            "",
            f"- purpose: {r.purpose}; regime: {s.record.axis_snapshot.get('regime')}; "
            f"in distribution: k={s.in_distribution}; break threshold: {s.threshold:.0%}",
            f"- order: {r.order_mode}; seed: {r.seed}; status: {r.status}",
        ]
        checks = r.protocol.get("summary", {})
        if checks:
            lines.append(
                "- Definition 4: "
                + ", ".join(f"{k.replace('_', ' ')} {'ok' if v else 'FAILED'}" for k, v in checks.items())
            )
        if r.override_uncertified:
            lines.append(f"- **uncertified levels scored by explicit override**: {r.override_reason}")
        lines.append("")
        lines += [
            f"Intervals: 95% {s.interval_kind}. Verdicts: held / broken when the trials show the rate at or "
            f"above / below {s.threshold:.0%}, each claim at 2.5%.",
            "",
        ]
        for c in s.curves:
            lines += [
                f"### Policy `{c.policy}`: {_break_text(c)} (point estimate)",
                "",
                f"With a stated error: {guarantee_text(c)}.",
                "",
                "| k | parameters | n | successes | rate | 95% interval | verdict | |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for row in level_rows(s, c):
                lines.append(
                    f"| {row['k']} | {row['parameters']} | {row['n']} | {row['successes']} | "
                    f"{row['rate']:.0%} | [{row['ci_low']:.0%}, {row['ci_high']:.0%}] | {row['verdict']} | "
                    f"{row['tags']} |"
                )
            lines.append("")
            if c.monotonicity is not None:
                lines += [f"Monotonicity (black-box check, Appendix B): {c.monotonicity.describe()}", ""]
            if c.pending or c.skipped or c.aborted_attempts:
                lines += [
                    f"Pending trials: {c.pending}; skipped by the adaptive rule: {c.skipped}; "
                    f"aborted attempts (re-run): {c.aborted_attempts}",
                    "",
                ]
        if s.registered_plan:
            lines += [
                f"### Pre-registered analysis: {s.registered_plan}",
                "",
                "(registered in the campaign file before any trial ran; the table below it is exploratory)",
                "",
            ]
            if s.registered:
                lines += comparison_markdown(s.registered, "registered")
        if s.comparisons:
            lines += comparison_markdown(s.comparisons)
        if s.twin or s.twin_note:
            lines += twin_markdown(s)
        if s.checks:
            names = sorted({k for entry in s.checks.values() for k in entry if k != "n"})
            lines += [
                "### Success checks per level (how often each held)",
                "",
                "| policy | k | n | " + " | ".join(names) + " |",
                "|---|---|---|" + "---|" * len(names),
            ]
            for (policy, level), entry in sorted(s.checks.items()):
                lines.append(
                    f"| {policy} | {level} | {entry['n']} | " + " | ".join(str(entry.get(k, 0)) for k in names) + " |"
                )
            lines.append("")
        if s.operator:
            kinds = ("labelled", "relabelled", "redone", "skipped", "invalid", "disagreements")
            lines += [
                "### The operator's labels per level",
                "",
                "(relabelled: the newest label counts, the old ones are in the store's history; redone: "
                "attempts kept as superseded; disagreements: labels that differ from the simulator's own "
                "check, in rehearsal)",
                "",
                "| policy | k | " + " | ".join(kinds) + " |",
                "|---|---|" + "---|" * len(kinds),
            ]
            for (policy, level), entry in sorted(s.operator.items()):
                lines.append(f"| {policy} | {level} | " + " | ".join(str(entry[n]) for n in kinds) + " |")
            lines.append("")
        if s.robot_stops:
            lines += [
                "### Robot stops per level",
                "",
                "(the robot's own safety stopped the policy's motion, a reflex: the episode ended and was "
                "labelled by the person, counted as labelled, never re-run)",
                "",
                "| policy | k | stops | labelled failure | labelled success | other |",
                "|---|---|---|---|---|---|",
            ]
            for (policy, level), entry in sorted(s.robot_stops.items()):
                other = entry["stops"] - entry.get("failure", 0) - entry.get("success", 0)
                lines.append(
                    f"| {policy} | {level} | {entry['stops']} | {entry.get('failure', 0)} | "
                    f"{entry.get('success', 0)} | {other} |"
                )
            lines.append("")
        if s.invalid:
            lines += ["### Invalid setups (not scored)", ""]
            lines += [f"- k={i['level']} ({i['trial_id']}): {i['reason']}" for i in s.invalid]
            lines.append("")
    if images:
        lines += ["## One image per level", ""]
        lines += [f"**k={k}**\n\n![k={k}]({name})\n" for k, name in sorted(images.items())]
    if videos:
        lines += ["## One video per level", "", "(from the campaign's bag: `indgen bag video`)", ""]
        lines += [f"- k={k}: [{Path(path).name}]({path})" for k, path in sorted(videos.items())]
    return "\n".join(lines) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:nth-child(2){text-align:left}img{max-width:100%}.levels img{width:220px;margin:4px}
code{background:#f3f3f3;padding:1px 4px}"""


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
            "twin_sharpened_ci": list(t.interval),
            "width_ratio": _num(t.width_ratio),
        }
        for p, t in summary.twin
    ]


def twin_markdown(summary: CampaignSummary) -> list[str]:
    """The twin-sharpened intervals beside the real-only ones (ppi.py)."""
    lines = [f"### With the twin's help: campaign `{summary.twin_id}` (prediction-powered)", ""]
    if summary.twin_note:
        return [*lines, f"Not used: {summary.twin_note}.", ""]
    lines += [
        "The twin's rate over all its trials plus the real-minus-twin difference over the paired trials (the "
        "real trials' seeds, which the twin ran too), with exact bounds on both joined by the union bound: 95% "
        "at every n. Width ratio below 1: the twin narrowed the interval.",
        "",
        "| policy | k | real | real-only 95% (exact) | twin | pairs | agreement | estimate | with the twin 95% "
        "| width ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in twin_rows(summary):
        lo, hi = row["real_only_ci"]
        tlo, thi = row["twin_sharpened_ci"]
        lines.append(
            f"| {row['policy']} | {row['k']} | {row['real_successes']}/{row['real_n']} | [{lo:.0%}, {hi:.0%}] "
            f"| {row['twin_successes']}/{row['twin_n']} | {row['pairs']} | {row['agreement']:.0%} | "
            f"{row['estimate']:.0%} | [{tlo:.0%}, {thi:.0%}] | {row['width_ratio']:.2f} |"
        )
    return [*lines, ""]


def comparison_markdown(comparisons, title: str = "") -> list[str]:
    """Paired levels (same planned seeds: exact McNemar, Tango's interval) show their pairs;
    unpaired ones (Boschloo, Newcombe's interval) their trials."""
    conf = f"{1 - comparisons[0].alpha:.0%}"
    head = [] if title else ["### Policy comparisons (p adjusted by Holm over every level and pair)", ""]
    lines = [
        *head,
        f"| k | A | B | method | pairs (A only, B only) or trials | A - B | {conf} CI | p | Holm p | better |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        method, pairs = (
            ("paired", f"{c.pairs} ({c.a_only}, {c.b_only})") if c.pairs else ("unpaired", f"{c.n_a} / {c.n_b} trials")
        )
        lines.append(
            f"| {c.level} | {c.a} | {c.b} | {method} | {pairs} | {c.difference:+.0%} | "
            f"[{c.interval[0]:+.0%}, {c.interval[1]:+.0%}] | {c.p_value:.3g} | {c.p_adjusted:.3g} | "
            f"{c.better or '-'} |"
        )
    return [*lines, ""]


def _md_to_html(md: str, files: dict[str, Path]) -> str:
    """Just enough Markdown for our own reports (headings, lists, tables, images, code)."""
    out: list[str] = []
    table: list[str] = []

    def flush():
        if table:
            rows = [r for r in table if not set(r.replace("|", "").strip()) <= {"-"}]
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            out.append(
                "<table>"
                + "".join(
                    "<tr>"
                    + "".join(f"<{'th' if i == 0 else 'td'}>{_inline(c)}</{'th' if i == 0 else 'td'}>" for c in row)
                    + "</tr>"
                    for i, row in enumerate(cells)
                )
                + "</table>"
            )
            table.clear()

    def _inline(text: str) -> str:
        import re

        text = html.escape(text)
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", text)

    for line in md.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("!["):
            name = line[line.index("(") + 1 : line.rindex(")")]
            data = base64.b64encode(files[name].read_bytes()).decode()
            out.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{data}">')
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("- "):
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)


def write_report(
    store: ResultsStore, campaign_ids: Sequence[str], out_dir: Path, twin: str | None = None
) -> ReportFiles:
    summaries = [summarize(store, cid, twin=twin) for cid in campaign_ids]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = plots.success_curves(summaries, out_dir / "success_per_level.png")
    files = {plot.name: plot}
    images: dict[int, str] = {}
    for s in summaries:
        for art in store.artifacts(s.record.id, kind="level_image"):
            src = Path(art["path"])
            if art["level"] is not None and src.is_file() and art["level"] not in images:
                # copied next to the report, so that the folder is complete on its own
                local = out_dir / f"level_k{art['level']}{src.suffix}"
                if src.resolve() != local.resolve():
                    shutil.copyfile(src, local)
                images[art["level"]] = local.name
                files[local.name] = local
    videos: dict[int, str] = {}
    for s in summaries:
        for art in store.artifacts(s.record.id, kind="video"):
            path = Path(art["path"])
            if art["level"] is not None and path.is_file() and art["level"] not in videos:
                # linked where it is (videos are large): relative to the report when they can be
                videos[art["level"]] = os.path.relpath(path.resolve(), out_dir.resolve())
    md = markdown(summaries, [plot.name], images, videos)
    md_path = out_dir / "report.md"
    md_path.write_text(md)
    html_path = out_dir / "report.html"
    html_path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>IndGen report</title>"
        f"<style>{_CSS}</style></head><body>{_md_to_html(md, files)}</body></html>"
    )
    json_path = out_dir / "summary.json"
    json_path.write_text(json.dumps(summary_json(summaries), indent=2, default=str))
    for s in summaries:
        store.add_artifact(s.record.id, "report", str(html_path))
    return ReportFiles(out_dir, md_path, html_path, json_path, [plot])


def print_table(summaries: Sequence[CampaignSummary], console=None) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    # a log or a pipe gets the full table, not the 80 columns rich assumes there
    console = console or Console(width=None if sys.stdout.isatty() else 120)
    for s in summaries:
        for c in s.curves:
            table = Table(
                title=f"{s.record.id}: {c.policy} on '{s.record.axis}' ({s.record.world}) - {_break_text(c)}",
                caption=f"with a stated error: {guarantee_text(c)}; intervals: 95% {s.interval_kind}",
            )
            for col in ("k", "parameters", "n", "succ.", "rate", "95% interval", "verdict", ""):
                table.add_column(col, justify="left" if col == "parameters" else "right")
            for row in level_rows(s, c):
                style = "bold red" if "BREAK" in row["tags"] else ("dim" if row["n"] == 0 else "")
                table.add_row(
                    str(row["k"]),
                    row["parameters"],
                    str(row["n"]),
                    str(row["successes"]),
                    f"{row['rate']:.0%}",
                    f"[{row['ci_low']:.0%}, {row['ci_high']:.0%}]",
                    row["verdict"],
                    row["tags"],
                    style=style,
                )
            console.print(table)
            if c.monotonicity is not None:
                console.print(f"  monotonicity (black-box): {c.monotonicity.describe()}")
        if s.twin:
            table = Table(
                title=f"{s.record.id} with the twin's help (campaign {s.twin_id}, prediction-powered)",
                caption="exact bounds on the twin's rate and the real-minus-twin difference, joined: 95% "
                "at every n; width ratio below 1: the twin narrowed the interval",
            )
            for col in (
                "policy",
                "k",
                "real",
                "real-only 95%",
                "twin",
                "agreement",
                "estimate",
                "with the twin 95%",
                "width ratio",
            ):
                table.add_column(col, justify="right")
            for row in twin_rows(s):
                table.add_row(
                    row["policy"],
                    str(row["k"]),
                    f"{row['real_successes']}/{row['real_n']}",
                    "[{:.0%}, {:.0%}]".format(*row["real_only_ci"]),
                    f"{row['twin_successes']}/{row['twin_n']}",
                    f"{row['agreement']:.0%}",
                    f"{row['estimate']:.0%}",
                    "[{:.0%}, {:.0%}]".format(*row["twin_sharpened_ci"]),
                    f"{row['width_ratio']:.2f}",
                )
            console.print(table)
        elif s.twin_note:
            console.print(f"  twin campaign {s.twin_id} not used: {s.twin_note}")
        if s.record.override_uncertified:
            console.print(f"  [yellow]uncertified levels scored by override:[/] {s.record.override_reason}")
        if s.invalid:
            console.print(f"  invalid setups (not scored): {len(s.invalid)}")
        if s.operator:
            totals = {k: sum(c[k] for c in s.operator.values()) for k in next(iter(s.operator.values()))}
            console.print("  operator: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
