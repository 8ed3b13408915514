"""Where the progression manager's campaign comes from: the one the store already holds under
campaign_id (a resume), or a new plan from a campaign file, with the node's axis, levels, trials
and world_options parameters laid over the file's, so that one campaign file serves every task
and axis of a world. Plain code: the node passes its parameters and its logger."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from indgen_core import paths
from indgen_core.campaign.config import load_campaign_config
from indgen_core.campaign.planning import plan_campaign
from indgen_core.errors import IndGenError
from indgen_core.lists import parse_int_list
from indgen_core.store import ResultsStore


class CampaignParameters(Protocol):
    """The progression manager's parameters this module reads (its `Parameters` has them)."""

    @property
    def campaign(self) -> str: ...
    @property
    def campaign_id(self) -> str: ...
    @property
    def allow_uncertified(self) -> bool: ...
    @property
    def override_reason(self) -> str: ...
    @property
    def axis(self) -> str: ...
    @property
    def levels(self) -> str: ...
    @property
    def trials(self) -> int: ...
    @property
    def world_options(self) -> str: ...


def plan_or_resume(store: ResultsStore, p: CampaignParameters, log):
    cid = paths.check_id(p.campaign_id) if p.campaign_id else ""
    if cid and store.has_campaign(cid):
        log.info(f"resuming campaign {cid} from {store.path}")
        return store.campaign(cid)
    if not p.campaign:
        raise IndGenError("set the 'campaign' parameter to a campaign YAML (or 'campaign_id' to one in the store)")
    path = campaign_path(p.campaign)
    config = override(load_campaign_config(path), p)
    record = plan_campaign(
        store,
        config,
        campaign_id=cid or None,
        allow_uncertified=p.allow_uncertified,
        override_reason=p.override_reason,
        source=str(path),
    )
    log.info(f"planned campaign {record.id}: {len(store.planned_trials(record.id))} trials in {store.path}")
    return record


def campaign_path(text: str) -> Path:
    """A campaign file as the `campaign` parameter names it: a path, else one under config/ (a
    profile default such as campaigns/blockenv_oracle.yaml)."""
    path = Path(text)
    if not path.is_file() and (paths.config_dir() / path).is_file():
        return paths.config_dir() / path
    return path


def names_a_blind_campaign(text: str) -> bool:
    """Whether the campaign file `text` plans a blind campaign. A file that does not load says
    no here: the progression manager refuses it with its own sentence."""
    if not text:
        return False
    try:
        return bool(load_campaign_config(campaign_path(text)).blind)
    except (IndGenError, OSError, ValueError):
        return False


def override(config, p: CampaignParameters):
    changes: dict[str, Any] = {}
    if p.axis:
        changes["axis"] = p.axis
    if str(p.levels).strip().strip("[]").strip():
        try:
            changes["levels"] = parse_int_list(p.levels)
        except ValueError as exc:
            raise IndGenError(f"levels {p.levels!r}: {exc}") from None
    if p.trials:
        changes["trials_per_level"] = int(p.trials)
    if str(p.world_options).strip():
        import yaml

        extra = yaml.safe_load(str(p.world_options))
        if not isinstance(extra, dict):
            raise IndGenError(f"world_options must be a YAML mapping such as '{{task: 3}}', got {p.world_options!r}")
        changes["world_options"] = {**config.world_options, **extra}
    return config.model_validate({**config.model_dump(), **changes}) if changes else config
