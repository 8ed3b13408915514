"""Plain records <-> indgen_msgs. The only module besides the nodes that imports messages."""

from __future__ import annotations

import json
import math
import re
import struct

from builtin_interfaces.msg import Duration

from indgen_core import auth, axes, records, stats
from indgen_msgs.msg import EpisodeResult, LevelScore, ParameterValue, TaskSetup


def duration(seconds: float) -> Duration:
    sec = math.floor(seconds)
    return Duration(sec=sec, nanosec=round((seconds - sec) * 1e9) % 1_000_000_000)


def seconds(d: Duration) -> float:
    """A Duration, or a Time stamp (seconds on the wall clock: ages against time.time())."""
    return d.sec + d.nanosec * 1e-9


def nanoseconds(stamp) -> int:
    """A builtin_interfaces Time (or Duration) as integer nanoseconds: exact, for ordering."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


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
    if not all(math.isfinite(p.value) for p in m.parameters):
        raise MalformedMessage("a task setup's parameter values must be finite")
    return records.TaskSetup(
        campaign_id=m.campaign_id, trial_id=m.trial_id, world=m.world, axis=m.axis, level=m.level,
        in_distribution=m.in_distribution,
        parameters=tuple(axes.ParameterValue(p.name, p.value, p.unit) for p in m.parameters),
        trial_index=m.trial_index, seed=m.seed, policy=m.policy, language_instruction=m.language_instruction,
        operator_instruction=m.operator_instruction, max_steps=m.max_steps,
        options=json_object(m.options_json, "options_json"),
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


class MalformedMessage(ValueError):
    """A message whose fields cannot be what they claim (unknown enum value, bad JSON)."""


def _enum(cls, value: int, field: str):
    try:
        return cls(value)
    except ValueError:
        raise MalformedMessage(f"{field} {value} is not one of {[int(v) for v in cls]}") from None


def json_object(text: str, field: str) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise MalformedMessage(f"{field} is not valid JSON") from None
    if not isinstance(value, dict):
        raise MalformedMessage(f"{field} must be a JSON object")
    return value


def result_from_msg(m: EpisodeResult) -> records.TrialResult:
    if not math.isfinite(m.partial_score) or not math.isfinite(m.wall_time_s):
        raise MalformedMessage("partial_score and wall_time_s must be finite")
    return records.TrialResult(
        trial_id=m.trial_id, outcome=_enum(records.Outcome, m.outcome, "outcome"), reason=m.reason,
        partial_score=m.partial_score, steps=m.steps, duration_s=seconds(m.duration), wall_time_s=m.wall_time_s,
        source=_enum(records.Source, m.source, "source"), artifacts=tuple(m.artifacts),
        details=json_object(m.details_json, "details_json"),
    )


_SEQUENCE = re.compile(r"sequence<([^,>]+)(?:, ?\d+)?>")
_ARRAY = re.compile(r"(.+)\[\d+\]")


def _canonical(value, kind: str):
    """A JSON-able form of a field that is the same on both ends of the wire: float32 fields
    as their 4 bytes (a sender's Python float is rounded on the wire), doubles as 8."""
    inner = _SEQUENCE.fullmatch(kind) or _ARRAY.fullmatch(kind)
    if inner:
        if isinstance(value, bytes | bytearray):
            return bytes(value).hex()
        return [_canonical(v, inner.group(1)) for v in value]
    if kind == "float":
        return struct.pack("<f", value).hex()
    if kind == "double":
        return struct.pack("<d", value).hex()
    if kind in ("byte", "octet") and isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if hasattr(value, "get_fields_and_field_types"):
        return {name: _canonical(getattr(value, name), t) for name, t in value.get_fields_and_field_types().items()}
    return value


def canonical_bytes(msg, skip: str = "signature") -> bytes:
    """The message's fields (all but `skip`) as canonical JSON. Not its CDR bytes: those
    carry uninitialised alignment padding, so the same message serialises differently."""
    fields = {name: _canonical(getattr(msg, name), t) for name, t in msg.get_fields_and_field_types().items()
              if name != skip}
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()


def sign(msg, key: bytes):
    """Set msg.signature to the HMAC of its other fields (auth.py)."""
    msg.signature = auth.sign(key, canonical_bytes(msg))
    return msg


def signed_by(msg, key: bytes | None) -> bool:
    """Whether msg carries a valid signature for `key`."""
    return key is not None and auth.verify(key, canonical_bytes(msg), msg.signature)


VERDICTS = {stats.UNDECIDED: LevelScore.VERDICT_UNDECIDED, stats.HELD: LevelScore.VERDICT_HELD,
            stats.BROKEN: LevelScore.VERDICT_BROKEN}


def level_score_msg(campaign_id: str, axis: str, policy: str, s: stats.LevelStat, stamp=None,
                    hidden: bool = False) -> LevelScore:
    """`hidden`: a blind campaign still running; only the count of trials goes out."""
    if hidden:
        msg = LevelScore(campaign_id=campaign_id, axis=axis, policy=policy, level=s.level,
                         in_distribution=s.in_distribution, n=s.n, invalid=s.invalid, ci_low=0.0, ci_high=1.0,
                         confidence=s.confidence, interval_kind=s.interval_kind, break_threshold=s.threshold,
                         verdict=VERDICTS[stats.UNDECIDED], rates_hidden=True)
    else:
        low, high = s.interval
        msg = LevelScore(campaign_id=campaign_id, axis=axis, policy=policy, level=s.level,
                         in_distribution=s.in_distribution, n=s.n, successes=s.successes, invalid=s.invalid,
                         rate=s.rate, ci_low=low, ci_high=high, confidence=s.confidence,
                         interval_kind=s.interval_kind, break_threshold=s.threshold, verdict=VERDICTS[s.verdict])
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


def deserialize(data: bytes, msgtype: str):
    """A message from its CDR bytes (as a bag stores them)."""
    from rclpy.serialization import deserialize_message

    return deserialize_message(data, message_class(msgtype))
