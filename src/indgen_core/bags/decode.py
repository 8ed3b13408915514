"""The one decoder for messages in a bag: built from the definitions the bag itself stores.

Every rosbag2 MCAP file carries each type's full .msg text (with its dependencies) as the
channel's schema. rosbags (pure Python) turns that text into a typestore that decodes CDR, so a
bag opens where neither rclpy nor indgen_msgs is installed (an analyst's laptop), and a bag
recorded by an older IndGen decodes as it was written, not as today's .msg files say.

Decoded messages answer attribute access like rclpy's; `kinds` gives their fields' rosidl type
names, so messages.canonical_bytes (and a result's signature) comes out byte for byte as the
progression manager computed it on its rclpy message."""

from __future__ import annotations

from typing import Any

from indgen_core.errors import require

_BASE_KINDS = {"float32": "float", "float64": "double", "byte": "octet", "char": "uint8", "bool": "boolean"}


class BagDecoder:
    """Decodes a bag's records with the types its schemas define; one per bag (or set of bags)."""

    def __init__(self):
        typesys = require("rosbags.typesys", "all", "reading bags")
        self._typesys = typesys
        self.store = typesys.get_typestore(typesys.Stores.EMPTY)
        self._known: set[str] = set()
        self._kinds: dict[str, dict[str, str]] = {}

    def learn(self, msgtype: str, definition: str) -> None:
        """Register `msgtype` from its stored definition text (once)."""
        if msgtype in self._known:
            return
        types = self._typesys.get_types_from_msg(definition, msgtype)
        fresh = {name: spec for name, spec in types.items() if name not in self.store.fielddefs}
        self.store.register(fresh)
        self._known.add(msgtype)

    def decode(self, data: bytes, msgtype: str) -> Any:
        return self.store.deserialize_cdr(data, msgtype)

    def kinds(self, value) -> dict[str, str] | None:
        """A decoded message's fields and their rosidl type names; None for a plain value."""
        msgtype = getattr(value, "__msgtype__", None)
        if msgtype is None:
            return None
        if msgtype not in self._kinds:
            _, fields = self.store.fielddefs[msgtype]
            self._kinds[msgtype] = {name: self._kind(node) for name, node in fields}
        return self._kinds[msgtype]

    def _kind(self, node) -> str:
        nodetype, detail = node
        name = getattr(nodetype, "name", str(nodetype))
        if name == "BASE":
            base, bound = detail
            kind = _BASE_KINDS.get(base, base)
            return f"{kind}<{bound}>" if base == "string" and bound else kind
        if name == "NAME":
            return detail
        sub, length = detail
        return f"{self._kind(sub)}[{length}]" if name == "ARRAY" else f"sequence<{self._kind(sub)}>"
