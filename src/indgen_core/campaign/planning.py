"""Planning a campaign: an axis, a world, one or more policies, N trials per level.

Planning runs the protocol checks of Definition 4 on the levels the campaign will run,
refuses uncertified levels unless the user overrides explicitly (the override and its reason
are written into the results), and writes the whole plan into the store in one transaction.
Every trial's setup is then rebuilt from the store alone, so a resumed campaign runs exactly
the setups it planned even if the axis file changed since.
"""

from __future__ import annotations

import dataclasses
import time

from indgen_core import paths
from indgen_core.axes import conditions
from indgen_core.axes.progression import Axis, AxisLibrary, library
from indgen_core.campaign import blind as blind_mod
from indgen_core.campaign import plan as plan_mod
from indgen_core.campaign.config import CERTIFY, EVALUATE, CampaignConfig, identity_in, identity_words
from indgen_core.campaign.snapshot import AxisSnapshot
from indgen_core.configfile import ConfigError
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_core.store import CampaignRecord, ResultsStore


def campaign_levels(config: CampaignConfig, axis: Axis, source: str = "config") -> list[int]:
    """The levels the campaign runs (its `levels`, or every level of the axis), sorted."""
    ks = config.levels if config.levels is not None else list(axis.level_range())
    bad = [k for k in ks if k not in axis.level_range()]
    if bad:
        raise ConfigError(
            source,
            f"levels {bad} are outside the axis' range {axis.spec.levels.min}..{axis.spec.levels.max}",
            field="levels",
        )
    return sorted(set(ks))


def config_threshold(config: CampaignConfig, axis: Axis) -> float:
    """The break threshold the campaign will use: its own, else the axis'."""
    return config.break_threshold or axis.spec.break_threshold


def new_campaign_id(name: str) -> str:
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{int(time.time() * 1e6) % 1_000_000:06d}"


def plan_campaign(
    store: ResultsStore,
    config: CampaignConfig,
    campaign_id: str | None = None,
    allow_uncertified: bool = False,
    override_reason: str = "",
    axes: AxisLibrary | None = None,
    source: str = "config",
) -> CampaignRecord:
    """Check the progression, check feasibility certificates, write the plan; returns the record."""
    if campaign_id:
        paths.check_id(campaign_id)
    axes = axes or library()
    axis = axes.get(config.axis)
    if config.world not in axis.spec.worlds:
        raise ConfigError(
            source, f"axis '{axis.name}' is defined for worlds {axis.spec.worlds}, not '{config.world}'", field="world"
        )
    levels = axis.levels(campaign_levels(config, axis, source))
    report = conditions.check_progression(axis, levels)
    structural = report.violations()
    if structural:
        first = structural[0]
        raise conditions.ProtocolViolation(
            f"axis '{axis.name}' fails the {first.check.replace('_', ' ')} check of Definition 4: {first.detail}"
            + (f" (and {len(structural) - 1} more)" if len(structural) > 1 else "")
        )

    certified: dict[int, str | None] = {}
    if config.purpose == EVALUATE:
        for lv in levels:
            certified[lv.k] = None
            for world in (config.world, *config.certified_by):
                cert = store.certificate(conditions.certificate_key(world, axis.name, lv, config.world_options))
                if cert:
                    where = "" if world == config.world else f" in world {world}"
                    certified[lv.k] = (
                        f"certified by {cert['policy']}{where} ({cert['successes']}/{cert['n']} in "
                        f"campaign {cert['campaign_id']})"
                    )
                    break
        report.findings += conditions.check_feasibility(levels, certified)
        missing = [k for k, c in certified.items() if c is None]
        if missing and not allow_uncertified:
            raise conditions.ProtocolViolation(
                f"levels {missing} of axis '{axis.name}' in world '{config.world}' have no feasibility certificate "
                f"in {store.path}: run the oracle first (a campaign with purpose: certify) or pass "
                "--allow-uncertified with --reason, which is recorded with the results"
            )
        if missing and not override_reason.strip():
            raise IndGenError("--allow-uncertified needs --reason: say why scoring uncertified levels is acceptable")
    override = config.purpose == EVALUATE and any(c is None for c in certified.values())

    campaign_id = paths.check_id(campaign_id) if campaign_id else new_campaign_id(config.name)
    if config.blind:
        word = identity_in(campaign_id, identity_words(config.policies, config.endpoints))
        if word:
            raise IndGenError(
                f"a blind campaign's id must not contain '{word}', part of a policy's name or server address: "
                "the console and every list show it"
            )
    distance = {lv.k: lv.distance for lv in levels}
    order = config.order or axis.spec.order
    labels = blind_mod.assign_labels(config.policies, config.seed) if config.blind else {}
    trials = plan_mod.make_plan(
        config.policies,
        [lv.k for lv in levels],
        config.trials_per_level,
        config.seed,
        order,
        distance,
        config.seeds,
        labels,
    )
    now = time.time()
    record = CampaignRecord(
        id=campaign_id,
        name=config.name,
        axis=axis.name,
        world=config.world,
        purpose=config.purpose,
        group_name=config.group,
        order_mode=order,
        seed=config.seed,
        config=config,
        blind_labels=labels,  # the store keeps the mapping; nothing a person sees does
        axis_snapshot=AxisSnapshot.of(axis, levels),
        protocol={"findings": [dataclasses.asdict(f) for f in report.findings], "summary": report.summary()},
        override_uncertified=override,
        override_reason=override_reason.strip() if override else "",
        status="planned",
        created_at=now,
        updated_at=now,
    )
    store.create_campaign(record, trials)
    return record


def setup_for(record: CampaignRecord, trial: plan_mod.PlannedTrial, blind_view: bool = False) -> TaskSetup:
    """The trial's setup. `blind_view`: for a node graph, where people see the setup, a blind
    campaign's policy is named by its letter (the policy node routes letters to servers); an
    executor in this process makes the policy by its name."""
    level = record.axis_snapshot.levels[trial.level]
    policy = blind_mod.labels(record).get(trial.policy, trial.policy) if blind_view else trial.policy
    return TaskSetup(
        campaign_id=record.id,
        trial_id=trial.trial_id,
        world=record.world,
        axis=record.axis,
        level=trial.level,
        in_distribution=level.in_distribution,
        parameters=level.parameters,
        trial_index=trial.trial_index,
        seed=trial.seed,
        policy=policy,
        language_instruction=level.language_instruction or "",
        operator_instruction=level.operator_instruction,
        max_steps=record.config.max_steps,
        options=dict(record.config.world_options),
    )


def adaptive_rule(record: CampaignRecord) -> plan_mod.AdaptiveRule | plan_mod.BreakSearchRule | None:
    cfg = record.config.adaptive
    if cfg is None or not cfg.enabled:
        return None
    if cfg.search == "break":
        return plan_mod.BreakSearchRule(threshold=break_threshold(record))
    return plan_mod.AdaptiveRule(threshold=break_threshold(record), min_trials=cfg.min_trials)


def break_threshold(record: CampaignRecord) -> float:
    """The break threshold the campaign uses: its own, else its axis'."""
    return record.config.break_threshold or record.axis_snapshot.break_threshold


def certify_after(store: ResultsStore, record: CampaignRecord, result: TrialResult | None = None) -> int:
    """The certificates after a result (`result`: a final one; None: after a relabel or at the
    end of a run): only a certify campaign's success, or a change of labels, can add one. The
    one place every way of running refreshes them."""
    if record.purpose != CERTIFY or (result is not None and result.outcome is not Outcome.SUCCESS):
        return 0
    return refresh_certificates(store, record)


def refresh_certificates(store: ResultsStore, record: CampaignRecord) -> int:
    """For a certify campaign: record each level with at least one oracle success as certified.
    Feasibility is an existence claim, so one success proves it; n and successes are kept."""
    if record.purpose != CERTIFY:
        return 0
    written = 0
    for (policy, k), c in store.counts(record.id).items():
        if c.successes == 0:
            continue
        level = record.axis_snapshot.levels[k]
        key = conditions.certificate_key(record.world, record.axis, level, record.config.world_options)
        store.add_certificate(
            key,
            record.world,
            record.axis,
            k,
            [dataclasses.asdict(p) for p in level.parameters],
            record.config.world_options,
            policy,
            c.scored,
            c.successes,
            record.id,
        )
        written += 1
    return written
