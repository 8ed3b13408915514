"""The report in Markdown: its provenance; per campaign its settings and Definition 4 checks,
one table of levels per policy with the words it uses defined under it, then the comparisons,
the twin's help, the success checks, why trials failed, the operator's labels, the robot's
stops and the invalid setups; then the level images in a row and one video per level. The
HTML page is this text rendered (html_page.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from indgen_core.report.analysis import CampaignSummary
from indgen_core.report.rows import (
    _break_text,
    guarantee_text,
    interval_text,
    level_rows,
    percent,
    search_text,
    twin_rows,
)

#: every word a level table prints, defined where it is printed (docs/statistics.md has more)
WORDS = (
    "Words: **held** / **broken**: the trials show the level's rate at or above / below the threshold, "
    "each claim with at most 2.5% error; **undecided**: they show neither yet. **BREAK** marks the point "
    "estimate: the first level whose observed rate is below the threshold (the paper's Table 1), which "
    "may be undecided. **conservative**: the first level shown broken with the stated error. **k\\***: the "
    "last level through which every level is shown held. **ID**: in distribution (tau_0's set)."
)


def markdown(
    summaries: Sequence[CampaignSummary],
    plot_names: Sequence[str],
    images: dict[int, str],
    videos: dict[int, str] | None = None,
    provenance: Sequence[str] = (),
    failures: dict[str, list[str]] | None = None,
) -> str:
    first = summaries[0].record
    lines = [f"# IndGen report: axis `{first.axis}` in `{first.world}`", ""]
    for name in plot_names:
        lines += [f"![success per level]({name})", ""]
    lines += list(provenance)
    for s in summaries:
        r = s.record
        lines += [
            f"## Campaign `{r.id}`",
            "",
            f"- purpose: {r.purpose}; regime: {s.record.axis_snapshot.regime}; "
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
                *([f"Break search: {search_text(c)}.", ""] if c.search else []),
                "| k | parameters | n | successes | rate | 95% interval | verdict | marks |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for row in level_rows(s, c):
                lines.append(
                    f"| {row['k']} | {row['parameters']} | {row['n']} | {row['successes']} | "
                    f"{percent(row['rate'], s.threshold)} | "
                    f"{interval_text((row['ci_low'], row['ci_high']), s.threshold)} | {row['verdict']} | "
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
        if s.curves:
            lines += [WORDS, ""]
        if len(s.curves) > 1:
            lines += side_by_side(s)
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
        lines += (failures or {}).get(r.id, [])
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
    if images:  # in a row: one table row of images, the levels side by side
        levels = sorted(images)
        lines += ["## One image per level", ""]
        lines += ["| " + " | ".join(f"k={k}" for k in levels) + " |", "|" + "---|" * len(levels)]
        lines += ["| " + " | ".join(f"![k={k}]({images[k]})" for k in levels) + " |", ""]
    if videos:
        lines += ["## One video per level", "", "(from the campaign's bag: `indgen bag video`)", ""]
        lines += [f"- k={k}: [{Path(path).name}]({path})" for k, path in sorted(videos.items())]
    return "\n".join(lines) + "\n"


def side_by_side(summary: CampaignSummary) -> list[str]:
    """Every policy's rate per level in one table, and, for two policies, their difference as
    the comparison measured it (paired by seed where the seeds match)."""
    s = summary
    rows = {c.policy: {row["k"]: row for row in level_rows(s, c)} for c in s.curves}
    levels = sorted({k for by_k in rows.values() for k in by_k})
    pair = {c.level: c for c in s.comparisons} if len(s.curves) == 2 else {}
    head = ["k", "parameters", *(f"`{c.policy}`" for c in s.curves)]
    if pair:
        head += ["first - second (95% interval)", "Holm p"]
    lines = ["### Side by side", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in levels:
        cells = [str(k), next(by_k[k]["parameters"] for by_k in rows.values() if k in by_k)]
        for c in s.curves:
            row = rows[c.policy].get(k)
            cells.append(
                f"{percent(row['rate'], s.threshold)} ({row['successes']}/{row['n']}) {row['verdict']}" if row else "-"
            )
        cmp = pair.get(k)
        if cmp is not None:  # first policy minus second, whichever way the comparison ran
            sign = 1 if cmp.a == s.curves[0].policy else -1
            low, high = sorted(sign * v for v in cmp.interval)
            cells += [
                f"{100 * sign * cmp.difference:+.0f}% [{100 * low:+.0f}%, {100 * high:+.0f}%]",
                f"{cmp.p_adjusted:.3g}",
            ]
        elif pair:
            cells += ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def twin_markdown(summary: CampaignSummary) -> list[str]:
    """The twin beside the real-only intervals (ppi.py): agreement, estimate, PPI interval."""
    lines = [f"### The twin beside the robot: campaign `{summary.twin_id}`", ""]
    if summary.twin_note:
        return [*lines, f"Not used: {summary.twin_note}.", ""]
    lines += [
        "The twin's rate over all its trials plus the real-minus-twin difference over the paired trials (the "
        "real trials' seeds, which the twin ran too), with exact bounds on both joined by the union bound: 95% "
        "at every n. It is shown beside the real-only interval, not instead of it: at 10-40 pairs it is rarely "
        "narrower (width ratio below 1); the twin's agreement and estimate are what it adds there.",
        "",
        "| policy | k | real | real-only 95% (exact) | twin | pairs | agreement | estimate | prediction-powered 95% "
        "| width ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in twin_rows(summary):
        th = summary.threshold
        lines.append(
            f"| {row['policy']} | {row['k']} | {row['real_successes']}/{row['real_n']} | "
            f"{interval_text(row['real_only_ci'], th)} "
            f"| {row['twin_successes']}/{row['twin_n']} | {row['pairs']} | {row['agreement']:.0%} | "
            f"{percent(row['estimate'], th)} | {interval_text(row['twin_ppi_ci'], th)} | {row['width_ratio']:.2f} |"
        )
    return [*lines, ""]


def comparison_markdown(comparisons, title: str = "") -> list[str]:
    """Paired levels (same planned seeds: exact McNemar, Tango's interval) show their pairs;
    unpaired ones (Boschloo, Newcombe's interval) their trials."""
    conf = f"{1 - comparisons[0].alpha:.0%}"
    head = [] if title else ["### Policy comparisons (p adjusted by Holm over every level and pair)", ""]
    lines = [
        *head,
        f"| k | policy 1 | policy 2 | method | pairs (only 1, only 2) or trials | 1 - 2 | {conf} CI | p | Holm p | "
        "better |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        dropped = f", {c.dropped} dropped (a side not scored)" if c.dropped else ""
        method, pairs = (
            ("paired", f"{c.pairs} ({c.a_only}, {c.b_only}){dropped}")
            if c.pairs
            else ("unpaired", f"{c.n_a} / {c.n_b} trials")
        )
        lines.append(
            f"| {c.level} | {c.a} | {c.b} | {method} | {pairs} | {c.difference:+.0%} | "
            f"[{c.interval[0]:+.0%}, {c.interval[1]:+.0%}] | {c.p_value:.3g} | {c.p_adjusted:.3g} | "
            f"{c.better or '-'} |"
        )
    return [*lines, ""]
