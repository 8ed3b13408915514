"""A campaign's configuration: the YAML schema (config/campaigns/*.yaml), validated once when
the file is loaded and again when the store hands the campaign back, so that every module reads
typed attributes, never a dict."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from indgen_core import paths
from indgen_core.axes.progression import SLUG
from indgen_core.configfile import load_model
from indgen_core.stats.sequential import DEFAULT_ALPHA

# -- a blind campaign's names: what would give a policy away ------------------------------------
#: word parts shorter than this say nothing of a policy (and would match anything)
MIN_WORD = 3


def identity_words(policies: Sequence[str], endpoints: Mapping[str, str] | None = None) -> dict[str, str]:
    """word -> the policy it may give away: the parts of each policy's name and of its server's
    host name (split at anything not a letter or digit, lower case), and the whole host:port.
    A part every policy's name shares ("droid_twin_oracle" against "droid_twin_bc") tells no
    policy from another and is left out."""

    def parts(text: str) -> set[str]:
        return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) >= MIN_WORD}

    own = {p: parts(p) for p in policies}
    shared = set.intersection(*own.values()) if len(own) > 1 else set()
    words = {w: p for p, ws in own.items() for w in ws - shared}
    for p, uri in (endpoints or {}).items():
        address = uri.split("://", 1)[-1].split("/", 1)[0].lower()
        host = address.rsplit(":", 1)[0]
        words[address] = p
        for w in parts(host):
            if not w.isdigit():  # the octets of an IP address are no word
                words.setdefault(w, p)
    return {w: p for w, p in words.items() if w not in shared}


def identity_in(text: str, words: Mapping[str, str]) -> str | None:
    """The first identity word found in `text` (case-insensitive, anywhere inside its words)."""
    low = text.lower()
    return next((w for w in sorted(words, key=len, reverse=True) if w in low), None)


#: validation context of a configuration the store hands back
STORED: Final = "stored"

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
    alpha: float = Field(
        default=DEFAULT_ALPHA, gt=0, lt=0.5, description="family-wise error over levels and pairs (Holm)"
    )
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
    def _blind_and_analysis(self, info: ValidationInfo) -> CampaignConfig:
        if (info.context or {}).get(STORED):
            return self  # rules for planning a campaign, checked when it was planned
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
            word = identity_in(text, identity_words(self.policies, self.endpoints))
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


def stored_config(raw: Mapping[str, Any]) -> CampaignConfig:
    """A campaign's configuration as the store keeps it, validated into the schema again. A store
    written by an older IndGen may hold keys this schema no longer has: nothing reads them, so
    they are left out. Its types are checked again; the rules for planning a campaign (a blind
    one's names, a registered analysis' policies) were checked when it was planned."""
    known = {k: v for k, v in raw.items() if k in CampaignConfig.model_fields}
    return CampaignConfig.model_validate(known, context={STORED: True})
