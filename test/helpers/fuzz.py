"""Random and extreme ROS messages of any type, built from the type's own field description
(`get_fields_and_field_types`), for the tests that publish garbage to a running graph."""

from __future__ import annotations

import contextlib
import importlib
import random
import re

INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "byte": (0, 255), "char": (0, 255), "octet": (0, 255),
    "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}
FLOATS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, -0.0, 0.0, 1e-320, 3.5, -7.25]
STRINGS = ["", "x" * 200_000, "{", "{\"a\": [1, 2", "[1, 2]", "null", "../../etc/passwd", "/abs/path",
           "\u00e9\u4e2d\u6587", "done", "-1", "1e999", "'; DROP TABLE results; --"]
_SEQ = re.compile(r"sequence<(.+?)(?:, ?\d+)?>")
_ARR = re.compile(r"(.+)\[(\d+)\]")


def message_class(type_name: str):
    """'indgen_msgs/msg/TaskSetup', 'std_msgs/Header' or an action's
    'indgen_msgs/action/RunEpisode_FeedbackMessage' -> the class."""
    parts = type_name.split("/")
    pkg, name = parts[0], parts[-1]
    msgs = importlib.import_module(f"{pkg}.msg")
    if hasattr(msgs, name) and not (len(parts) == 3 and parts[1] == "action"):
        return getattr(msgs, name)
    action, _, part = name.partition("_")
    action_cls = getattr(importlib.import_module(f"{pkg}.action"), action)
    return getattr(action_cls, part, None) or getattr(action_cls.Impl, part)


def _scalar(kind: str, rng: random.Random, extreme: bool):
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        value = rng.choice([lo, hi, 0, 1, 99]) if extreme else rng.randint(lo, hi)
        return bytes([value & 0xFF]) if kind == "byte" else value
    if kind in ("float", "double"):
        return rng.choice(FLOATS) if extreme else rng.uniform(-1e6, 1e6)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("string", "wstring") or kind.startswith("string<"):
        return rng.choice(STRINGS) if extreme else "".join(rng.choice("abc/_-.{}:0123") for _ in range(rng.randint(0,
                                                                                                               40)))
    return fuzz(message_class(kind), rng)


def _value(kind: str, rng: random.Random):
    extreme = rng.random() < 0.5
    seq = _SEQ.fullmatch(kind)
    if seq:
        inner = seq.group(1)
        n = rng.choice([0, 1, 2, 7, 8, 100]) if not extreme else rng.choice([0, 3, 100_000 if inner in (
            "uint8", "octet", "byte", "float", "double") else 50])
        if inner in ("uint8", "octet", "byte"):
            return bytes(rng.getrandbits(8) for _ in range(min(n, 64))) * max(n // 64, 1) if n else b""
        return [_scalar(inner, rng, extreme) for _ in range(n)]
    arr = _ARR.fullmatch(kind)
    if arr:
        return [_scalar(arr.group(1), rng, extreme) for _ in range(int(arr.group(2)))]
    return _scalar(kind, rng, extreme)


def fuzz(cls, rng: random.Random):
    """One instance of `cls` with every field random or extreme (a field whose value the type
    refuses keeps its default)."""
    msg = cls()
    for name, kind in cls.get_fields_and_field_types().items():
        with contextlib.suppress(AssertionError, TypeError, ValueError, OverflowError):
            setattr(msg, name, _value(kind, rng))
    return msg
