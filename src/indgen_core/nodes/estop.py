"""The soft e-stop topic's rule, the same in every world node (the sim bridge and the FR3
runner): a world node reads /indgen/estop from any publisher's QoS (a pedal node's transient
local, a script's volatile, a best-effort button: `ros.base.subscribe_any`), so the same
message can arrive twice and a latched one late. Engaging always holds at once; a release
counts only when it was sent after the newest engage (by its source timestamp), so a stale
release can never undo a newer engage."""

from __future__ import annotations

from typing import Any


class EstopTopic:
    def __init__(self) -> None:
        self._engaged_at = 0  # the source timestamp (ns) of the newest engage

    def accept(self, engaged: bool, info: Any) -> bool | None:
        """The e-stop state this message asks for, or None when it is to be ignored."""
        stamp = int(info.get("source_timestamp", 0)) if isinstance(info, dict) else 0
        if engaged:
            self._engaged_at = max(self._engaged_at, stamp)
            return True
        if stamp > self._engaged_at:
            self._engaged_at = stamp
            return False
        return None
