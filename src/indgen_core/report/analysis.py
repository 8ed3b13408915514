"""From stored results to the numbers a report shows: per policy and level, the success
rate with its interval (exact for a fixed n reported once, the confidence sequence for a
sequential or unfinished campaign: `level_stats.py`), the break level as the paper estimates it and
the claims with a guarantee, monotonicity (black-box axes), paired comparisons of the
policies (comparisons.py), and the trials that were invalid or aborted."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from indgen_core.campaign import blind
from indgen_core.campaign import plan as plan_mod
from indgen_core.campaign import planning as campaign_mod
from indgen_core.campaign.config import AnalysisPlan
from indgen_core.campaign.runner import completed_outcomes, level_places
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome
from indgen_core.stats import comparisons as comparisons_mod
from indgen_core.stats import level_stats, ppi
from indgen_core.stats.sequential import DEFAULT_ALPHA
from indgen_core.store import CampaignRecord, ResultsStore


@dataclass
class PolicyCurve:
    campaign_id: str
    policy: str
    levels: list[level_stats.LevelStat]
    breaks: level_stats.BreakReport
    monotonicity: level_stats.Monotonicity | None
    pending: int = 0
    skipped: int = 0
    aborted_attempts: int = 0
    #: per side, "held through k*" and "broken at k" with their stated error (level_stats.guarantee)
    guarantee: dict[int, level_stats.SideGuarantee] = field(default_factory=dict)
    #: per side, the break set of a campaign run by the break search (plan.BreakSearchRule)
    search: dict[int, plan_mod.SideSearch] = field(default_factory=dict)

    def level(self, k: int) -> level_stats.LevelStat | None:
        return next((s for s in self.levels if s.level == k), None)


@dataclass
class CampaignSummary:
    record: CampaignRecord
    curves: list[PolicyCurve]
    comparisons: list[comparisons_mod.Comparison] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    threshold: float = level_stats.DEFAULT_THRESHOLD
    #: (policy, level) -> {check: times true} over scored results, for the yes/no checks a
    #: world reports in its details (LIBERO: libero_success beside IndGen's strict_success)
    checks: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: (policy, level) -> what the person did (store.operator_counts), for campaigns with labels
    operator: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: (policy, level) -> episodes the robot's own safety stopped during the policy's motion
    #: (a reflex: ended and labelled, not re-run), by the outcome they were labelled with
    robot_stops: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: the comparison the campaign file registered before the trials ran, and what it was
    registered: list[comparisons_mod.Comparison] = field(default_factory=list)
    registered_plan: str = ""
    #: the twin campaign, and per policy and level the twin's agreement, estimate and prediction-powered
    #: interval beside the real-only one
    twin_id: str = ""
    twin: list[tuple[str, ppi.TwinBeside]] = field(default_factory=list)
    twin_note: str = ""  # why the campaign file's twin_campaign could not be used

    @property
    def anytime(self) -> bool:
        """The levels' n was not fixed in advance and looked at once: a sequential campaign, or
        one not finished yet (its numbers are looked at while trials come in)."""
        return bool(self.curves) and any(lv.anytime for c in self.curves for lv in c.levels)

    @property
    def interval_kind(self) -> str:
        return level_stats.SEQUENCE if self.anytime else level_stats.EXACT

    @property
    def black_box(self) -> bool:
        return self.record.axis_snapshot.regime == "black_box"

    @property
    def in_distribution(self) -> list[int]:
        return list(self.record.axis_snapshot.in_distribution)


def summarize(
    store: ResultsStore,
    campaign_id: str,
    confidence: float = level_stats.DEFAULT_CONFIDENCE,
    live: bool = False,
    twin: str | None = None,
) -> CampaignSummary:
    """The campaign's numbers. `live`: for a view looked at while trials still come in (the
    scorer's LevelScore, the console), always the confidence sequence. `twin`: a twin campaign
    of the same policies, axis and levels that ran these trials' seeds (default: the campaign
    file's `twin_campaign`), for the twin beside the robot (ppi.py)."""
    record = store.campaign(campaign_id)
    names = blind.shown_names(store, record)  # a blinded campaign's policies are letters here on
    threshold = campaign_mod.break_threshold(record)
    rule = campaign_mod.adaptive_rule(record)
    anytime = live or rule is not None or record.status != "done"
    counts = store.counts(campaign_id)
    outcomes = completed_outcomes(store, campaign_id) if rule is not None else {}
    prefix = {key: (len(v), sum(v)) for key, v in outcomes.items()} if rule is not None else None
    snapshot_levels = record.axis_snapshot.levels
    curves = []
    for policy in names:  # a blinded campaign's in letter order
        levels = []
        pending = skipped = aborted = 0
        for k, lv in sorted(snapshot_levels.items()):
            c = counts.get((policy, k))
            if c is None:
                continue
            pending += c.pending
            skipped += c.skipped
            aborted += c.aborted
            n, successes = prefix[(policy, k)] if prefix is not None else (c.scored, c.successes)
            levels.append(
                level_stats.LevelStat(
                    level=k,
                    n=n,
                    successes=successes,
                    invalid=c.invalid,
                    in_distribution=lv.in_distribution,
                    distance=lv.distance,
                    side=lv.side,
                    confidence=confidence,
                    threshold=threshold,
                    anytime=anytime,
                )
            )
        mono = level_stats.monotonicity(levels) if record.axis_snapshot.regime == "black_box" else None
        curves.append(
            PolicyCurve(
                campaign_id,
                names[policy],
                levels,
                level_stats.break_levels(levels, threshold),
                mono,
                pending,
                skipped,
                aborted,
                level_stats.guarantee(levels, threshold, confidence),
                plan_mod.side_searches(policy, outcomes, level_places(record), threshold, confidence)
                if isinstance(rule, plan_mod.BreakSearchRule)
                else {},
            )
        )
    rows = store.rows(campaign_id)
    comparisons = compare_policies(rows, list(names), confidence, names)
    invalid = [
        {"trial_id": r.trial_id, "policy": names[r.policy], "level": r.level, "reason": r.reason}
        for r in rows
        if r.outcome is Outcome.INVALID
    ]
    checks: dict[tuple[str, int], dict[str, int]] = {}
    robot_stops: dict[tuple[str, int], dict[str, int]] = {}
    for name, level, outcome, details in store.result_details(campaign_id):
        policy = names[name]
        if details.get("robot_stop"):
            entry = robot_stops.setdefault((policy, level), {"stops": 0})
            entry["stops"] += 1
            entry[outcome.word] = entry.get(outcome.word, 0) + 1
        flags = {k: v for k, v in details.items() if isinstance(v, bool)}
        if flags and outcome.scored:
            entry = checks.setdefault((policy, level), {"n": 0})
            entry["n"] += 1
            for flag, v in flags.items():
                entry[flag] = entry.get(flag, 0) + int(v)
    operator = {(names[p], k): c for (p, k), c in store.operator_counts(campaign_id).items()}
    if not any(c["labelled"] or c["skipped"] or c["redone"] for c in operator.values()):
        operator = {}
    registered, note = registered_comparisons(rows, record, names)
    beside: list = []
    twin_note = ""
    if twin:  # asked for by name: a twin that does not fit is an error
        beside = twin_besides(store, campaign_id, twin, confidence)
    elif record.config.twin_campaign and not blind.blinded(store, record):
        twin = record.config.twin_campaign
        try:
            beside = twin_besides(store, campaign_id, twin, confidence)
        except IndGenError as exc:  # named in the campaign file: the report says why it is not used
            twin_note = str(exc)
    return CampaignSummary(
        record,
        curves,
        comparisons,
        invalid,
        threshold,
        checks,
        operator,
        robot_stops,
        registered,
        note,
        twin or "",
        beside,
        twin_note,
    )


def twin_besides(
    store: ResultsStore, campaign_id: str, twin_id: str, confidence: float = level_stats.DEFAULT_CONFIDENCE
) -> list[tuple[str, ppi.TwinBeside]]:
    """Per policy and level, the real-only interval and the twin beside it (ppi.py). The twin
    campaign must be on the same axis and levels, run the same policy, and have run every seed
    the real campaign ran (the same campaign seed and at least as many trials per level)."""
    if twin_id == campaign_id:
        raise IndGenError(f"campaign {campaign_id} cannot be its own twin")
    real, twin = store.campaign(campaign_id), store.campaign(twin_id)
    arms_of(store, [campaign_id, twin_id])  # one axis, the same levels and tasks
    shared = [p for p in real.policies if p in twin.policies]
    if not shared:
        raise IndGenError(
            f"campaign {campaign_id} ({', '.join(real.policies)}) and its twin {twin_id} "
            f"({', '.join(twin.policies)}) share no policy; the twin runs the same policy"
        )
    real_rows, twin_rows = store.rows(campaign_id), store.rows(twin_id)
    out = []
    for policy in shared:
        r, t = arm(real_rows, campaign_id, policy), arm(twin_rows, twin_id, policy)
        for k in sorted(set(r.outcomes) & set(t.outcomes)):
            out.append((policy, ppi.twin_beside(k, r.outcomes[k], t.outcomes[k], confidence)))
    return out


def registered_comparisons(
    rows, record: CampaignRecord, names: dict[str, str]
) -> tuple[list[comparisons_mod.Comparison], str]:
    """The campaign file's pre-registered comparison, run exactly as registered: (results, a
    sentence saying what was registered, or why it could not run)."""
    plan = record.config.analysis
    if plan is None:
        return [], ""
    what = (
        f"{' vs '.join(names[p] for p in plan.compare)}, alpha {plan.alpha:g} (Holm over levels and "
        f"pairs), {plan.pairing}" + (f", levels {plan.levels}" if plan.levels else ", every level")
    )
    keep = set(plan.levels) if plan.levels else None
    arms = []
    for policy in plan.compare:
        a = arm(rows, record.id, policy, names[policy])
        if keep is not None:
            a = Arm(a.label, a.campaign_id, a.policy, {k: v for k, v in a.outcomes.items() if k in keep})
        arms.append(a)
    sequential = sequential_design(record)
    if sequential:
        what += " (anytime-valid: the sequential rule chose the levels' sizes)"
    try:
        return compare_arms(arms, plan.alpha, plan.pairing, sequential=sequential), what
    except IndGenError as exc:
        return [], f"{what}: not run, {exc}"


AUTO, PAIRED_ONLY, UNPAIRED_ONLY = "auto", "paired", "unpaired"


@dataclass(frozen=True)
class Arm:
    """One policy's scored trials in one campaign: what a comparison compares."""

    label: str
    campaign_id: str
    policy: str
    outcomes: dict[int, dict[int, bool]]  # level -> planned seed -> success
    #: level -> every seed planned for the policy there, scored or not
    planned: dict[int, frozenset[int]] = field(default_factory=dict)


def arm(rows, campaign_id: str, policy: str, label: str | None = None) -> Arm:
    outcomes: dict[int, dict[int, bool]] = {}
    planned: dict[int, set[int]] = {}
    for r in rows:
        if r.policy != policy:
            continue
        planned.setdefault(r.level, set()).add(r.seed)
        if r.outcome is not None and r.outcome.scored:
            outcomes.setdefault(r.level, {})[r.seed] = r.outcome is Outcome.SUCCESS
    return Arm(label or policy, campaign_id, policy, outcomes, {k: frozenset(v) for k, v in planned.items()})


def compare_arms(
    arms, alpha: float = DEFAULT_ALPHA, pairing: str = AUTO, sequential: bool = False
) -> list[comparisons_mod.Comparison]:
    """Every pair of arms at every level both scored, Holm-adjusted over all of them at the
    family-wise error `alpha` (each interval at 1 - alpha). Trials
    with the same planned seed are pairs (the same setup): with `pairing` AUTO a level is
    compared paired when both arms ran the same seeds there, unpaired otherwise; PAIRED_ONLY
    refuses a level whose seeds differ, UNPAIRED_ONLY ignores the pairing. `sequential` (a
    level's size chosen by its results: the sequential rule, an A/B stopped once decided): the
    anytime-valid paired comparison over the seeds both ran, at every level."""
    if sequential and pairing == UNPAIRED_ONLY:
        raise IndGenError(
            "a campaign run with the sequential rule is compared paired, by an anytime-valid test (a fixed-size "
            "unpaired test on levels the rule stopped early says 'better' too often); drop --unpaired"
        )
    out = []
    for a, b in itertools.combinations(arms, 2):
        for k in sorted(set(a.outcomes) & set(b.outcomes)):
            oa, ob = a.outcomes[k], b.outcomes[k]
            if sequential:
                out.append(comparisons_mod.sequential_paired(a.label, b.label, k, oa, ob, alpha))
                continue
            # the same planned seeds are pairs even where a trial was not scored (an invalid
            # label): that pair drops out and the rest are compared
            same = set(oa) == set(ob) or (k in a.planned and a.planned.get(k) == b.planned.get(k))
            dropped = len(set(oa) ^ set(ob)) if same else 0
            if pairing == PAIRED_ONLY and not same:
                only = len(set(oa) ^ set(ob))
                raise IndGenError(
                    f"{a.label} and {b.label} did not run the same seeds at k={k} ({only} trial(s) "
                    "without a partner), so their trials are not pairs; compare them without --paired"
                )
            if same and pairing != UNPAIRED_ONLY:
                compared = comparisons_mod.paired(a.label, b.label, k, oa, ob, alpha)
                out.append(dataclasses.replace(compared, dropped=dropped))
            else:
                out.append(
                    comparisons_mod.unpaired(
                        a.label, b.label, k, sum(oa.values()), len(oa), sum(ob.values()), len(ob), alpha
                    )
                )
    return comparisons_mod.holm(out)


def compare_policies(
    rows, policies, confidence: float = level_stats.DEFAULT_CONFIDENCE, labels: dict[str, str] | None = None
) -> list[comparisons_mod.Comparison]:
    """The policies of one campaign against each other (they share the plan's seeds)."""
    rows = list(rows)
    labels = labels or {}
    return compare_arms([arm(rows, "", p, labels.get(p)) for p in policies], 1 - confidence)


def shown_labels(store: ResultsStore, campaign_ids) -> dict[tuple[str, str], str]:
    """(campaign, policy) -> its letter, for the blinded campaigns among them."""
    out = {}
    for cid in campaign_ids:
        record = store.campaign(cid)
        for policy, name in blind.shown_names(store, record).items():
            if name != policy:
                out[(cid, policy)] = f"{cid}:{name}" if len(campaign_ids) > 1 else name
    return out


def refuse_hidden(store: ResultsStore, campaign_ids) -> None:
    """A blinded campaign whose trials still run shows no rate anywhere (blind.py)."""
    for cid in campaign_ids:
        if blind.rates_hidden(store, store.campaign(cid)):
            raise IndGenError(
                f"campaign {cid} is blind and not done: its rates stay hidden until it is done or "
                f"a person unblinds it (`indgen campaign unblind {cid} --by NAME`)"
            )


def sequential_design(record: CampaignRecord) -> bool:
    """Whether the campaign's sizes were chosen by its results (the sequential rule, or an A/B
    that stops once decided): its comparisons are then the anytime-valid paired test; a
    fixed-size test (McNemar, Boschloo) on levels the rule stopped early says "better" too
    often (two equal policies: 7.5-13.6% of campaigns at a nominal 5%, by the cap)."""
    plan = record.config.analysis
    return campaign_mod.adaptive_rule(record) is not None or (plan is not None and plan.stop_when_decided)


def decided_reason(store: ResultsStore, record: CampaignRecord) -> str | None:
    """Why the campaign need not run on: its registered comparison asks to stop once decided
    (`analysis.stop_when_decided`) and the anytime-valid paired test, Holm-adjusted over the
    registered levels, has decided at every one of them. It names no policy and no rate: a
    blind campaign stays blind until someone unblinds it."""
    plan = record.config.analysis
    if plan is None or not plan.stop_when_decided:
        return None
    rows = store.rows(record.id)
    wanted = set(plan.levels or {t.level for t in store.planned_trials(record.id)})
    arms = [arm(rows, record.id, policy) for policy in plan.compare]
    arms = [Arm(a.label, a.campaign_id, a.policy, {k: v for k, v in a.outcomes.items() if k in wanted}) for a in arms]
    try:
        comparisons = compare_arms(arms, plan.alpha, "paired", sequential=True)
    except IndGenError:
        return None
    decided = {c.level for c in comparisons if c.p_adjusted <= c.alpha}
    if wanted and decided >= wanted:
        return (
            f"the registered comparison is decided at every level (anytime-valid, alpha {plan.alpha:g}); the "
            "remaining trials are not needed (the unblinding, or indgen compare, shows the result)"
        )
    return None


def registered_analysis(record: CampaignRecord) -> AnalysisPlan | None:
    """The comparison the campaign file registered before its trials ran."""
    return record.config.analysis


def arms_of(store: ResultsStore, campaign_ids, labels: dict[tuple[str, str], str] | None = None) -> list[Arm]:
    """Every policy of the campaigns, checked to be comparable: one axis, and the levels they
    share with the same parameters (an axis file edited between two campaigns makes its levels
    other tasks). Compared at the levels both ran (compare_arms): the campaigns of a
    `blockenv table1` group run different levels per policy. Named by policy, or
    campaign:policy where a policy appears twice."""
    records = [store.campaign(cid) for cid in campaign_ids]
    first = records[0]
    for r in records[1:]:
        if r.axis != first.axis:
            raise IndGenError(
                f"campaigns {first.id} (axis {first.axis}) and {r.id} (axis {r.axis}) are on different "
                "axes; a comparison needs one axis"
            )
        ka, kb = sorted(first.axis_snapshot.levels), sorted(r.axis_snapshot.levels)
        shared = sorted(set(ka) & set(kb))
        if not shared:
            raise IndGenError(f"campaigns {first.id} and {r.id} share no level ({ka} and {kb}); nothing to compare")
        for k in shared:
            if first.axis_snapshot.levels[k].parameters != r.axis_snapshot.levels[k].parameters:
                raise IndGenError(
                    f"level k={k} of axis {first.axis} is not the same task in {first.id} and {r.id} "
                    "(the axis file changed between them)"
                )
    pairs = [(r, p) for r in records for p in r.policies]
    names = [p for _, p in pairs]
    if len(pairs) < 2:
        raise IndGenError(f"a comparison needs at least two policies; {first.id} ran only {first.policies[0]}")
    labels = labels or {}
    out = []
    for r, p in pairs:
        label = labels.get((r.id, p)) or (p if names.count(p) == 1 else f"{r.id}:{p}")
        out.append(arm(store.rows(r.id), r.id, p, label))
    return out
