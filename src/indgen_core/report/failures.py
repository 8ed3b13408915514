"""Why trials failed, per level: the failure reasons the world or the person gave, counted,
with a trial of each to look at (its id finds its frames: `indgen bag video --trial ID`). A
rate says how often a policy failed; a reviewer also asks how."""

from __future__ import annotations

import re
from collections import Counter

from indgen_core.campaign import blind
from indgen_core.records import Outcome
from indgen_core.report.analysis import CampaignSummary
from indgen_core.store import ResultsStore

#: reasons shown per level (the rest counted as "other")
SHOWN = 3


def _kind(reason: str) -> str:
    """A reason without its numbers, so that "object 3.1 cm off" and "object 2.7 cm off" count
    as one kind."""
    return re.sub(r"-?\d+(\.\d+)?", "N", (reason or "no reason given").strip())[:160]


def failure_lines(store: ResultsStore, summary: CampaignSummary) -> list[str]:
    names = blind.shown_names(store, summary.record)
    by_level: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for row in store.rows(summary.record.id):
        if row.outcome is Outcome.FAILURE:
            key = (names.get(row.policy, row.policy), row.level)
            by_level.setdefault(key, []).append((_kind(row.reason or ""), row.trial_id))
    if not by_level:
        return []
    lines = [
        "### Why trials failed, per level",
        "",
        "(the reasons the world's check or the person gave, numbers folded; one trial of each to look at)",
        "",
        "| policy | k | failures | reason | trials | e.g. |",
        "|---|---|---|---|---|---|",
    ]
    for (policy, level), failures in sorted(by_level.items()):
        counts = Counter(kind for kind, _ in failures)
        example = dict(reversed(failures))  # kind -> its first trial
        shown = counts.most_common(SHOWN)
        for i, (kind, count) in enumerate(shown):
            head = f"| {policy} | {level} | {len(failures)} " if i == 0 else "| | | "
            lines.append(f"{head}| {kind.replace('|', '/')} | {count} | `{example[kind]}` |")
        rest = len(failures) - sum(c for _, c in shown)
        if rest:
            lines.append(f"| | | | other reasons | {rest} | |")
    lines.append("")
    return lines
