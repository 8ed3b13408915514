"""Campaigns: an axis, a world, one or more policies, N trials per level.

Planning runs the protocol checks of Definition 4 on the levels the campaign will run,
refuses uncertified levels unless the user overrides explicitly (the override and its reason
are written into the results), and writes the whole plan into the store in one transaction.
Every trial's setup is then rebuilt from the store alone, so a resumed campaign runs exactly
the setups it planned even if the axis file changed since.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from indgen_core import blind as blind_mod
from indgen_core import paths, protocol, stats
from indgen_core import plan as plan_mod
from indgen_core.axes import SLUG, Axis, AxisLibrary, Level, ParameterValue, library
from indgen_core.configfile import ConfigError, load_model
from indgen_core.errors import IndGenError
from indgen_core.records import TaskSetup, scored_count
from indgen_core.store import CampaignRecord, ResultsStore

EVALUATE: Final = "evaluate"
CERTIFY: Final = "certify"


class AdaptiveConfig(BaseModel):
    """Trials chosen by their results; trials_per_level is then the most a level may take.
    search "levels": the sequential rule (plan.AdaptiveRule), each level stops once its
    anytime-valid evidence shows it held or broken, levels in plan order. search "break": the
    break search (plan.BreakSearchRule), each trial where it narrows the set of levels the
    break may lie at, under the assumption that success does not rise away from tau_0."""

    model_config = ConfigDict(extra="forbid")
    #: false: every level runs trials_per_level trials, as without this block
    enabled: bool = True
    search: Literal["levels", "break"] = Field(
        default="levels",
        description="levels: decide each level in plan order; break: put each trial where it narrows the set of "
        "levels the break may lie at (assumes success does not rise away from tau_0)",
    )
    #: trials before a level may be decided (the evidence is valid from the first; more only
    #: makes the rule slower)
    min_trials: int = Field(default=1, ge=1)


class AnalysisPlan(BaseModel):
    """A comparison registered before the trials run (a blind A/B's primary analysis):
    `indgen compare ID` and the report run exactly this one and say so."""

    model_config = ConfigDict(extra="forbid")
    compare: list[str] = Field(min_length=2, description="the policies compared, as named in `policies`")
    alpha: float = Field(default=0.05, gt=0, lt=0.5, description="family-wise error over levels and pairs (Holm)")
    #: paired: trials with the same planned seed are compared as pairs (exact McNemar), a level whose seeds
    #: differ is refused; unpaired: Boschloo's test at every level; auto: paired where both ran the same seeds
    pairing: Literal["auto", "paired", "unpaired"] = "paired"
    levels: list[int] | None = Field(default=None, description="default: every level of the campaign")
    stop_when_decided: bool = Field(
        default=False,
        description="stop the campaign once the comparison is decided at every level (the anytime-valid paired "
        "test; a blind campaign says only 'decided' until it is unblinded)",
    )

    @model_validator(mode="after")
    def _paired_to_stop(self):
        if self.stop_when_decided and self.pairing == "unpaired":
            raise ValueError("stop_when_decided needs the paired comparison (pairing: paired)")
        return self


class CampaignConfig(BaseModel):
    """The YAML schema of a campaign (config/campaigns/*.yaml)."""

    model_config = ConfigDict(extra="forbid")

    #: lower-case identifier; a new campaign's id is <name>-<YYYYmmdd>-<HHMMSS>-<microseconds> unless one is given
    name: str
    #: the axis the campaign moves, by name (config/axes/<name>.yaml)
    axis: str
    #: the world the trials run in (a registered world: libero, droid_twin, fr3, ...); one of the axis' worlds
    world: str
    #: the policies to run, each a registered policy or a key of endpoints; each runs the same planned trials
    policies: list[str] = Field(min_length=1)
    #: trials per policy and level (with adaptive: the most a level may take)
    trials_per_level: int = Field(ge=1)
    levels: list[int] | None = Field(default=None, description="default: every level of the axis")
    #: each trial's seed is derived from it, the level and the trial index, so campaigns with the same seed see the
    #: same setups; it also fixes the shuffle of the trial order and a blind campaign's letters
    seed: int = Field(default=0, ge=0)
    seeds: list[int] | None = Field(default=None, description="fixed seeds per trial index instead of derived ones")
    order: Literal["interleaved", "sequential"] | None = Field(default=None, description="default: the axis' order")
    #: evaluate: score the policies, on levels with a feasibility certificate (or `--allow-uncertified` with
    #: `--reason`); certify: run an oracle, and each level it succeeds at at least once is certified in this world
    purpose: Literal["evaluate", "certify"] = EVALUATE
    #: choose each level's number of trials by its results; null: trials_per_level at every level
    adaptive: AdaptiveConfig | None = None
    max_steps: int = Field(default=0, ge=0, description="0: the world's default")
    #: keyword arguments the world is built with (LIBERO: {task: 0}), also in each trial's setup; part of every
    #: feasibility certificate's key
    world_options: dict[str, Any] = {}
    endpoints: dict[str, str] = Field(default={}, description="policy name -> ws://host:port of its policy server")
    certified_by: list[str] = Field(
        default=[],
        description="other worlds whose certificates of the same level count "
        "(the real FR3's levels certified in its twin)",
    )
    #: a label that gathers campaigns (`indgen report --group`, `indgen compare --group`): 1-128 letters,
    #: digits, '.', '_' or '-'
    group: str = ""
    #: success rate below which a level counts as broken; null: the axis' break_threshold
    break_threshold: float | None = Field(default=None, gt=0, lt=1)
    blind: bool = Field(
        default=False, description="name the policies A, B, ... to the person, hide running rates (blind.py)"
    )
    #: a comparison registered before the trials run: `indgen compare ID` and the report run exactly this one
    analysis: AnalysisPlan | None = None
    twin_campaign: str = Field(
        default="",
        description="id of a twin campaign of the same policy, axis and levels that ran "
        "these seeds: the report adds the twin beside the real-only intervals (ppi.py)",
    )

    @model_validator(mode="after")
    def _blind_and_analysis(self) -> CampaignConfig:
        if self.analysis is not None:
            unknown = [p for p in self.analysis.compare if p not in self.policies]
            if unknown:
                raise ValueError(f"analysis compares {unknown}, which are not among the policies {self.policies}")
            if self.levels is not None and self.analysis.levels is not None:
                outside = sorted(set(self.analysis.levels) - set(self.levels))
                if outside:
                    raise ValueError(f"analysis names levels {outside}, which the campaign does not run")
        if not self.blind:
            return self
        if len(self.policies) < 2:
            raise ValueError("blind: true needs at least two policies to hide among")
        if self.adaptive is not None and self.adaptive.enabled:
            raise ValueError(
                "a blind campaign cannot stop levels early (adaptive): a level that stops shows the "
                "person how it is going; drop one of the two"
            )
        for field_name, text in (("name", self.name), ("group", self.group)):
            word = blind_mod.identity_in(text, blind_mod.identity_words(self.policies, self.endpoints))
            if word:
                raise ValueError(
                    f"a blind campaign's {field_name} must not contain '{word}', part of a policy's name or server "
                    "address: the console and every list show it"
                )
        return self

    @field_validator("name", "world")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not SLUG.match(v):
            raise ValueError(f"must be a lower-case identifier (letters, digits, _), got {v!r}")
        return v

    @field_validator("group")
    @classmethod
    def _group(cls, v: str) -> str:
        if v:
            paths.check_id(v, "group")
        return v

    @field_validator("policies")
    @classmethod
    def _policies(cls, v: list[str]) -> list[str]:
        for p in v:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:\-]*", p) or ".." in p:
                raise ValueError(
                    f"policy names use letters, digits and _ . : - only, starting with a letter or digit, got {p!r}"
                )
        if len(set(v)) != len(v):
            raise ValueError(f"policies are listed twice: {v}")
        return v


def load_campaign_config(path: str | Path) -> CampaignConfig:
    return load_model(path, CampaignConfig)


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


def _axis_snapshot(axis: Axis, levels: list[Level]) -> dict[str, Any]:
    return {
        "name": axis.name,
        "regime": axis.spec.regime,
        "in_distribution": list(axis.spec.in_distribution),
        "break_threshold": axis.spec.break_threshold,
        "physical": axis.physical,
        "moved": axis.moved_parameters,
        "levels": {str(lv.k): dataclasses.asdict(lv) for lv in levels},
    }


def level_from_snapshot(snapshot: dict[str, Any], k: int) -> Level:
    data = dict(snapshot["levels"][str(k)])
    data["parameters"] = tuple(ParameterValue(**p) for p in data["parameters"])
    return Level(**data)


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
    report = protocol.check_progression(axis, levels)
    structural = report.violations()
    if structural:
        first = structural[0]
        raise protocol.ProtocolViolation(
            f"axis '{axis.name}' fails the {first.check.replace('_', ' ')} check of Definition 4: {first.detail}"
            + (f" (and {len(structural) - 1} more)" if len(structural) > 1 else "")
        )

    certified: dict[int, str | None] = {}
    if config.purpose == EVALUATE:
        for lv in levels:
            certified[lv.k] = None
            for world in (config.world, *config.certified_by):
                cert = store.certificate(protocol.certificate_key(world, axis.name, lv, config.world_options))
                if cert:
                    where = "" if world == config.world else f" in world {world}"
                    certified[lv.k] = (
                        f"certified by {cert['policy']}{where} ({cert['successes']}/{cert['n']} in "
                        f"campaign {cert['campaign_id']})"
                    )
                    break
        report.findings += protocol.check_feasibility(levels, certified)
        missing = [k for k, c in certified.items() if c is None]
        if missing and not allow_uncertified:
            raise protocol.ProtocolViolation(
                f"levels {missing} of axis '{axis.name}' in world '{config.world}' have no feasibility certificate "
                f"in {store.path}: run the oracle first (a campaign with purpose: certify) or pass "
                "--allow-uncertified with --reason, which is recorded with the results"
            )
        if missing and not override_reason.strip():
            raise IndGenError("--allow-uncertified needs --reason: say why scoring uncertified levels is acceptable")
    override = config.purpose == EVALUATE and any(c is None for c in certified.values())

    campaign_id = paths.check_id(campaign_id) if campaign_id else new_campaign_id(config.name)
    if config.blind:
        word = blind_mod.identity_in(campaign_id, blind_mod.identity_words(config.policies, config.endpoints))
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
    stored = config.model_dump()
    if labels:
        stored["blind_labels"] = labels  # the store keeps the mapping; nothing a person sees does
    record = CampaignRecord(
        id=campaign_id,
        name=config.name,
        axis=axis.name,
        world=config.world,
        purpose=config.purpose,
        group_name=config.group,
        order_mode=order,
        seed=config.seed,
        config=stored,
        axis_snapshot=_axis_snapshot(axis, levels),
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
    level = level_from_snapshot(record.axis_snapshot, trial.level)
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
        max_steps=int(record.config.get("max_steps", 0)),
        options=dict(record.config.get("world_options", {})),
    )


def adaptive_rule(record: CampaignRecord) -> plan_mod.AdaptiveRule | plan_mod.BreakSearchRule | None:
    cfg = record.config.get("adaptive")
    if not cfg or not cfg.get("enabled", True):
        return None
    if cfg.get("search") == "break":
        return plan_mod.BreakSearchRule(threshold=break_threshold(record))
    return plan_mod.AdaptiveRule(threshold=break_threshold(record), min_trials=cfg.get("min_trials", 1))


def break_threshold(record: CampaignRecord) -> float:
    return record.config.get("break_threshold") or record.axis_snapshot.get("break_threshold", stats.DEFAULT_THRESHOLD)


def refresh_certificates(store: ResultsStore, record: CampaignRecord) -> int:
    """For a certify campaign: record each level with at least one oracle success as certified.
    Feasibility is an existence claim, so one success proves it; n and successes are kept."""
    if record.purpose != CERTIFY:
        return 0
    written = 0
    for (policy, k), c in store.counts(record.id).items():
        scored = scored_count(c)
        if c["success"] == 0:
            continue
        level = level_from_snapshot(record.axis_snapshot, k)
        options = record.config.get("world_options", {})
        key = protocol.certificate_key(record.world, record.axis, level, options)
        store.add_certificate(
            key,
            record.world,
            record.axis,
            k,
            [dataclasses.asdict(p) for p in level.parameters],
            options,
            policy,
            scored,
            c["success"],
            record.id,
        )
        written += 1
    return written
