"""From stored results to the numbers a report shows: per policy and level, the success
rate with its Wilson interval, break levels, k*, monotonicity (black-box axes), pairwise
policy comparisons, and the trials that were invalid or aborted."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from indgen_core import campaign as campaign_mod
from indgen_core import stats
from indgen_core.store import CampaignRecord, ResultsStore


@dataclass
class PolicyCurve:
    campaign_id: str
    policy: str
    levels: list[stats.LevelStat]
    breaks: stats.BreakReport
    monotonicity: stats.Monotonicity | None
    pending: int = 0
    skipped: int = 0
    aborted_attempts: int = 0

    @property
    def label(self) -> str:
        return self.policy

    def level(self, k: int) -> stats.LevelStat | None:
        return next((s for s in self.levels if s.level == k), None)


@dataclass
class CampaignSummary:
    record: CampaignRecord
    curves: list[PolicyCurve]
    comparisons: list[tuple[str, str, stats.Comparison]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    threshold: float = stats.DEFAULT_THRESHOLD
    #: (policy, level) -> {check: times true} over scored results, for the yes/no checks a
    #: world reports in its details (LIBERO: libero_success beside IndGen's strict_success)
    checks: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: (policy, level) -> what the person did (store.operator_counts), for campaigns with labels
    operator: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: (policy, level) -> episodes the robot's own safety stopped during the policy's motion
    #: (a reflex: ended and labelled, not re-run), by the outcome they were labelled with
    robot_stops: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)

    @property
    def black_box(self) -> bool:
        return self.record.axis_snapshot.get("regime") == "black_box"

    @property
    def in_distribution(self) -> list[int]:
        return list(self.record.axis_snapshot.get("in_distribution", [0]))


def summarize(store: ResultsStore, campaign_id: str, confidence: float = stats.DEFAULT_CONFIDENCE) -> CampaignSummary:
    record = store.campaign(campaign_id)
    threshold = campaign_mod.break_threshold(record)
    counts = store.counts(campaign_id)
    snapshot_levels = record.axis_snapshot["levels"]
    curves = []
    for policy in record.policies:
        levels = []
        pending = skipped = aborted = 0
        for k_text, lv in sorted(snapshot_levels.items(), key=lambda kv: int(kv[0])):
            k = int(k_text)
            c = counts.get((policy, k))
            if c is None:
                continue
            pending += c["pending"]
            skipped += c["skipped"]
            aborted += c["aborted"]
            levels.append(stats.LevelStat(
                level=k, n=c["success"] + c["failure"] + c["timeout"], successes=c["success"], invalid=c["invalid"],
                in_distribution=lv["in_distribution"], distance=lv["distance"], side=lv["side"],
                confidence=confidence, threshold=threshold))
        mono = stats.monotonicity(levels) if record.axis_snapshot.get("regime") == "black_box" else None
        curves.append(PolicyCurve(campaign_id, policy, levels, stats.break_levels(levels, threshold), mono,
                                  pending, skipped, aborted))
    comparisons = []
    for a, b in itertools.combinations(curves, 2):
        for sa in a.levels:
            sb = b.level(sa.level)
            if sb is not None and sa.n and sb.n:
                comparisons.append((a.policy, b.policy,
                                    stats.compare(sa.successes, sa.n, sb.successes, sb.n, sa.level, confidence)))
    invalid = [{"trial_id": r.trial_id, "policy": r.policy, "level": r.level, "reason": r.reason}
               for r in store.rows(campaign_id) if r.outcome == "invalid"]
    checks: dict[tuple[str, int], dict[str, int]] = {}
    robot_stops: dict[tuple[str, int], dict[str, int]] = {}
    for policy, level, outcome, details in store.result_details(campaign_id):
        if details.get("robot_stop"):
            entry = robot_stops.setdefault((policy, level), {"stops": 0})
            entry["stops"] += 1
            entry[outcome] = entry.get(outcome, 0) + 1
        flags = {k: v for k, v in details.items() if isinstance(v, bool)}
        if flags and outcome in ("success", "failure", "timeout"):
            entry = checks.setdefault((policy, level), {"n": 0})
            entry["n"] += 1
            for k, v in flags.items():
                entry[k] = entry.get(k, 0) + int(v)
    operator = store.operator_counts(campaign_id)
    if not any(c["labelled"] or c["skipped"] or c["redone"] for c in operator.values()):
        operator = {}
    return CampaignSummary(record, curves, comparisons, invalid, threshold, checks, operator, robot_stops)
