"""Fully populated sample messages: every field set to a distinctive, deterministic value,
so that a message received intact compares equal to the one both sides build."""

from __future__ import annotations

import importlib

from rosidl_parser import definition as d

_INT_RANGES = {
    "int8": 100, "uint8": 200, "int16": 30000, "uint16": 60000, "int32": 2_000_000_000,
    "uint32": 4_000_000_000, "int64": 9_000_000_000_000, "uint64": 18_000_000_000_000_000_000,
}


def _basic(typename: str, salt: int):
    if typename in _INT_RANGES:
        value = (salt * 7919 + 13) % _INT_RANGES[typename]
        return -value if typename.startswith("int") and salt % 2 else value
    if typename in ("float", "double"):
        return float(salt) + 0.25
    if typename == "boolean":
        return salt % 2 == 1
    if typename in ("octet",):
        return bytes([salt % 256])
    if typename in ("char",):
        return chr(65 + salt % 26)
    raise TypeError(typename)


def _class(t: d.NamespacedType):
    module = importlib.import_module(".".join(t.namespaces))
    return getattr(module, t.name)


def _value(t, salt: int, name: str):
    if isinstance(t, d.BasicType):
        return _basic(t.typename, salt)
    if isinstance(t, d.AbstractString):
        return f"{name}-{salt}-ünï"
    if isinstance(t, d.NamespacedType):
        return fill(_class(t)(), salt)
    if isinstance(t, d.AbstractSequence | d.Array):
        size = t.size if isinstance(t, d.Array) else 3
        values = [_value(t.value_type, salt + i + 1, name) for i in range(size)]
        return values
    raise TypeError(t)


def fill(msg, salt: int = 1):
    """Set every field of `msg` (recursively) and return it."""
    for i, (field, t) in enumerate(zip(msg.get_fields_and_field_types(), type(msg).SLOT_TYPES, strict=True)):
        if field in {"sec", "nanosec"}:  # builtin_interfaces time: keep it a valid time
            setattr(msg, field, (salt * 31 + i) % 1_000_000_000)
            continue
        value = _value(t, salt + i, field)
        if isinstance(t, d.AbstractSequence | d.Array) and isinstance(t.value_type, d.BasicType) \
                and t.value_type.typename in ("uint8", "octet"):
            value = bytes(v if isinstance(v, int) else v[0] for v in value)
        setattr(msg, field, value)
    return msg


def interface_classes():
    """Every message type of indgen_msgs, by name."""
    import indgen_msgs.msg as m

    names = [n for n in dir(m) if not n.startswith("_") and hasattr(getattr(m, n), "SLOT_TYPES")]
    return {n: getattr(m, n) for n in sorted(names)}
