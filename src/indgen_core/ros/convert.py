"""Plain records -> indgen_msgs (building messages needs the generated classes). Reading them
back, and signatures, work without ROS: indgen_core/nodes/messages.py."""

from __future__ import annotations

import json
import re

from builtin_interfaces.msg import Duration

from indgen_core import records
from indgen_core.stats import level_stats
from indgen_msgs.msg import EpisodeResult, LevelScore, ParameterValue, TaskSetup


def duration(seconds: float) -> Duration:
    """Whole nanoseconds, rounded once: 0.9999999999 s is 1 s, not 0 (rounding the fraction
    alone and wrapping it lost the second)."""
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return Duration(sec=sec, nanosec=nanosec)


def setup_to_msg(s: records.TaskSetup, stamp=None) -> TaskSetup:
    msg = TaskSetup(
        campaign_id=s.campaign_id,
        trial_id=s.trial_id,
        world=s.world,
        axis=s.axis,
        level=s.level,
        in_distribution=s.in_distribution,
        parameters=[ParameterValue(name=p.name, value=float(p.value), unit=p.unit) for p in s.parameters],
        trial_index=s.trial_index,
        seed=int(s.seed),
        policy=s.policy,
        language_instruction=s.language_instruction,
        operator_instruction=s.operator_instruction,
        max_steps=int(s.max_steps),
        options_json=json.dumps(s.options, sort_keys=True) if s.options else "",
    )
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def result_to_msg(r: records.TrialResult, setup: records.TaskSetup, stamp=None) -> EpisodeResult:
    msg = EpisodeResult(
        campaign_id=setup.campaign_id,
        trial_id=r.trial_id,
        world=setup.world,
        axis=setup.axis,
        policy=setup.policy,
        level=setup.level,
        trial_index=setup.trial_index,
        seed=int(setup.seed),
        outcome=int(r.outcome),
        reason=r.reason,
        partial_score=float(r.partial_score),
        steps=int(r.steps),
        duration=duration(r.duration_s),
        wall_time_s=float(r.wall_time_s),
        source=int(r.source),
        artifacts=list(r.artifacts),
        details_json=json.dumps(r.details, sort_keys=True, default=str) if r.details else "",
    )
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


VERDICTS = {
    level_stats.UNDECIDED: LevelScore.VERDICT_UNDECIDED,
    level_stats.HELD: LevelScore.VERDICT_HELD,
    level_stats.BROKEN: LevelScore.VERDICT_BROKEN,
}


def level_score_msg(
    campaign_id: str, axis: str, policy: str, s: level_stats.LevelStat, stamp=None, hidden: bool = False
) -> LevelScore:
    """`hidden`: a blind campaign still running; only the count of trials goes out."""
    msg = LevelScore(
        campaign_id=campaign_id,
        axis=axis,
        policy=policy,
        level=s.level,
        in_distribution=s.in_distribution,
        n=s.n,
        invalid=s.invalid,
        confidence=s.confidence,
        interval_kind=s.interval_kind,
        break_threshold=s.threshold,
        verdict=VERDICTS[level_stats.UNDECIDED if hidden else s.verdict],
        rates_hidden=hidden,
    )
    if hidden:
        msg.ci_low, msg.ci_high = 0.0, 1.0
    else:
        msg.successes, msg.rate = s.successes, s.rate
        msg.ci_low, msg.ci_high = s.interval
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


_MSGTYPE = re.compile(r"([A-Za-z][A-Za-z0-9_]*)/(msg|srv|action)/([A-Z][A-Za-z0-9]*)")


def message_class(msgtype: str):
    """The installed Python class of a ROS type name ("pkg/msg/Name"); LookupError when the
    type is not installed here."""
    import importlib

    match = _MSGTYPE.fullmatch(msgtype)
    if match is None:
        raise LookupError(f"'{msgtype[:120]}' is not a ROS message type name")
    pkg, kind, name = match.groups()
    try:
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError):
        raise LookupError(f"the message type {msgtype} is not installed here") from None
