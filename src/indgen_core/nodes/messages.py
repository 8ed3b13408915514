"""Reading IndGen's messages as plain records, and their signatures, without ROS.

Everything here reads fields by name, so it takes either a live rclpy message or one a bag's
own definitions decoded (bags/decode.py): the progression manager signs a result it built with
rclpy, and `indgen bag rescore` checks that signature on a laptop with neither rclpy nor
indgen_msgs installed. Building messages (records -> msg) needs the generated classes and
stays in ros/convert.py."""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable

from indgen_core import records
from indgen_core.axes import progression
from indgen_core.campaign import auth

#: a message's fields and their rosidl types ({"partial_score": "float", ...}); rclpy messages
#: answer it themselves, a bag's decoded messages through their decoder
FieldKinds = Callable[[object], "dict[str, str] | None"]


class MalformedMessage(ValueError):
    """A message whose fields cannot be what they claim (unknown enum value, bad JSON)."""


def seconds(d) -> float:
    """A Duration, or a Time stamp (seconds on the wall clock: ages against time.time())."""
    return d.sec + d.nanosec * 1e-9


def nanoseconds(stamp) -> int:
    """A builtin_interfaces Time (or Duration) as integer nanoseconds: exact, for ordering."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


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


def setup_from_msg(m) -> records.TaskSetup:
    if not all(math.isfinite(p.value) for p in m.parameters):
        raise MalformedMessage("a task setup's parameter values must be finite")
    return records.TaskSetup(
        campaign_id=m.campaign_id,
        trial_id=m.trial_id,
        world=m.world,
        axis=m.axis,
        level=int(m.level),
        in_distribution=bool(m.in_distribution),
        parameters=tuple(progression.ParameterValue(p.name, float(p.value), p.unit) for p in m.parameters),
        trial_index=int(m.trial_index),
        seed=int(m.seed),
        policy=m.policy,
        language_instruction=m.language_instruction,
        operator_instruction=m.operator_instruction,
        max_steps=int(m.max_steps),
        options=json_object(m.options_json, "options_json"),
    )


def result_from_msg(m) -> records.TrialResult:
    if not math.isfinite(m.partial_score) or not math.isfinite(m.wall_time_s):
        raise MalformedMessage("partial_score and wall_time_s must be finite")
    return records.TrialResult(
        trial_id=m.trial_id,
        outcome=_enum(records.Outcome, m.outcome, "outcome"),
        reason=m.reason,
        partial_score=float(m.partial_score),
        steps=int(m.steps),
        duration_s=seconds(m.duration),
        wall_time_s=float(m.wall_time_s),
        source=_enum(records.Source, m.source, "source"),
        artifacts=tuple(m.artifacts),
        details=json_object(m.details_json, "details_json"),
    )


_SEQUENCE = re.compile(r"sequence<([^,>]+)(?:, ?\d+)?>")
_ARRAY = re.compile(r"(.+)\[\d+\]")


def rclpy_kinds(msg) -> dict[str, str] | None:
    """An rclpy message's own field types; None for a value that is not a message."""
    return msg.get_fields_and_field_types() if hasattr(msg, "get_fields_and_field_types") else None


def _canonical(value, kind: str, kinds: FieldKinds):
    """A JSON-able form of a field that is the same on both ends of the wire and whoever decoded
    it: float32 fields as their 4 bytes (a sender's Python float is rounded on the wire), doubles
    as 8, octets as hex, numbers as Python numbers (a bag decoder gives numpy ones)."""
    inner = _SEQUENCE.fullmatch(kind) or _ARRAY.fullmatch(kind)
    if inner:
        if isinstance(value, bytes | bytearray):
            return bytes(value).hex()
        return [_canonical(v, inner.group(1), kinds) for v in value]
    if kind == "float":
        return struct.pack("<f", float(value)).hex()
    if kind == "double":
        return struct.pack("<d", float(value)).hex()
    if kind in ("byte", "octet"):
        return bytes(value).hex() if isinstance(value, bytes | bytearray) else bytes([int(value)]).hex()
    fields = kinds(value)
    if fields is not None:
        return {name: _canonical(getattr(value, name), t, kinds) for name, t in fields.items()}
    return value.item() if hasattr(value, "item") and not isinstance(value, str) else value


def canonical_bytes(msg, skip: str = "signature", kinds: FieldKinds = rclpy_kinds) -> bytes:
    """The message's fields (all but `skip`) as canonical JSON. Not its CDR bytes: those
    carry uninitialised alignment padding, so the same message serialises differently."""
    kinds_of_msg = kinds(msg)
    assert kinds_of_msg is not None, f"{type(msg).__name__} is not a message"
    fields = {name: _canonical(getattr(msg, name), t, kinds) for name, t in kinds_of_msg.items() if name != skip}
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()


def sign(msg, key: bytes):
    """Set msg.signature to the HMAC of its other fields (auth.py)."""
    msg.signature = auth.sign(key, canonical_bytes(msg))
    return msg


def signed_by(msg, key: bytes | None, kinds: FieldKinds = rclpy_kinds) -> bool:
    """Whether msg carries a valid signature for `key`."""
    return key is not None and auth.verify(key, canonical_bytes(msg, kinds=kinds), msg.signature)


#: the scorer's answer to a result or relabel (/indgen/result_committed)
COMMITTED, REPEATED, REFUSED = "committed", "repeated", "refused"
_ANSWER_FIELDS = ("campaign_id", "trial_id", "key", "status", "reason")


def commit_answer(campaign_id: str, trial_id: str, key: str, status: str, reason: str = "") -> str:
    """The answer's JSON: `key` is the attempt's signature (a relabel's id for a relabel), so
    that a sender knows which of its messages was answered."""
    return json.dumps(dict(zip(_ANSWER_FIELDS, (campaign_id, trial_id, key, status, reason), strict=True)))


def read_commit_answer(text: str) -> dict[str, str] | None:
    """An answer as sent, or None for anything else (the topic is open to every node)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("status") not in (COMMITTED, REPEATED, REFUSED):
        return None
    if not all(isinstance(data.get(f, ""), str) for f in _ANSWER_FIELDS):
        return None
    return {f: str(data.get(f, ""))[:2000] for f in _ANSWER_FIELDS}
