"""Plain records <-> indgen_msgs. The only module besides the nodes that imports messages."""

from __future__ import annotations

import json
import math

from builtin_interfaces.msg import Duration

from indgen_core import axes, records, stats
from indgen_msgs.msg import EpisodeResult, LevelScore, ParameterValue, TaskSetup


def duration(seconds: float) -> Duration:
    sec = math.floor(seconds)
    return Duration(sec=sec, nanosec=round((seconds - sec) * 1e9) % 1_000_000_000)


def seconds(d: Duration) -> float:
    return d.sec + d.nanosec * 1e-9


def setup_to_msg(s: records.TaskSetup, stamp=None) -> TaskSetup:
    msg = TaskSetup(
        campaign_id=s.campaign_id, trial_id=s.trial_id, world=s.world, axis=s.axis, level=s.level,
        in_distribution=s.in_distribution,
        parameters=[ParameterValue(name=p.name, value=float(p.value), unit=p.unit) for p in s.parameters],
        trial_index=s.trial_index, seed=int(s.seed), policy=s.policy, language_instruction=s.language_instruction,
        operator_instruction=s.operator_instruction, max_steps=int(s.max_steps),
        options_json=json.dumps(s.options, sort_keys=True) if s.options else "",
    )
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def setup_from_msg(m: TaskSetup) -> records.TaskSetup:
    return records.TaskSetup(
        campaign_id=m.campaign_id, trial_id=m.trial_id, world=m.world, axis=m.axis, level=m.level,
        in_distribution=m.in_distribution,
        parameters=tuple(axes.ParameterValue(p.name, p.value, p.unit) for p in m.parameters),
        trial_index=m.trial_index, seed=m.seed, policy=m.policy, language_instruction=m.language_instruction,
        operator_instruction=m.operator_instruction, max_steps=m.max_steps,
        options=json.loads(m.options_json) if m.options_json else {},
    )


def result_to_msg(r: records.TrialResult, setup: records.TaskSetup, stamp=None) -> EpisodeResult:
    msg = EpisodeResult(
        campaign_id=setup.campaign_id, trial_id=r.trial_id, world=setup.world, axis=setup.axis, policy=setup.policy,
        level=setup.level, trial_index=setup.trial_index, seed=int(setup.seed), outcome=int(r.outcome),
        reason=r.reason, partial_score=float(r.partial_score), steps=int(r.steps), duration=duration(r.duration_s),
        wall_time_s=float(r.wall_time_s), source=int(r.source), artifacts=list(r.artifacts),
        details_json=json.dumps(r.details, sort_keys=True, default=str) if r.details else "",
    )
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def result_from_msg(m: EpisodeResult) -> records.TrialResult:
    return records.TrialResult(
        trial_id=m.trial_id, outcome=records.Outcome(m.outcome), reason=m.reason, partial_score=m.partial_score,
        steps=m.steps, duration_s=seconds(m.duration), wall_time_s=m.wall_time_s, source=records.Source(m.source),
        artifacts=tuple(m.artifacts), details=json.loads(m.details_json) if m.details_json else {},
    )


VERDICTS = {stats.UNDECIDED: LevelScore.VERDICT_UNDECIDED, stats.HELD: LevelScore.VERDICT_HELD,
            stats.BROKEN: LevelScore.VERDICT_BROKEN}


def level_score_msg(campaign_id: str, axis: str, policy: str, s: stats.LevelStat, stamp=None) -> LevelScore:
    low, high = s.interval
    msg = LevelScore(campaign_id=campaign_id, axis=axis, policy=policy, level=s.level,
                     in_distribution=s.in_distribution, n=s.n, successes=s.successes, invalid=s.invalid, rate=s.rate,
                     ci_low=low, ci_high=high, confidence=s.confidence, break_threshold=s.threshold,
                     verdict=VERDICTS[s.verdict])
    if stamp is not None:
        msg.header.stamp = stamp
    return msg
