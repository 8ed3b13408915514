"""The world side of a lock-step exchange: after publishing a tick's observation the world
waits for the commands that answer exactly that tick. Commands arrive on subscription
callbacks (another thread); one that answers another tick, or a part that already arrived, is
counted as stale and dropped, never applied. Used by every world's topic adapter."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from indgen_core.episode import PolicyUnavailable


class AnswerSlot:
    def __init__(self, parts: Sequence[str] = ("action",)):
        self.parts = tuple(parts)
        self._cond = threading.Condition()
        self._key: Hashable | None = None
        self._got: dict[str, Any] = {}
        self.stale = 0

    def expect(self, key: Hashable) -> None:
        """The next answer must carry `key` (set before the observation goes out)."""
        with self._cond:
            self._key, self._got = key, {}

    def offer(self, key: Hashable, value: Any, part: str | None = None) -> bool:
        """A command arrived; True when it was taken as (part of) the expected answer."""
        part = part or self.parts[0]
        with self._cond:
            if key != self._key or part in self._got:
                self.stale += 1
                return False
            self._got[part] = value
            self._cond.notify_all()
            return True

    def wait(self, timeout: float, should_abort: Callable[[], str | None], what: str) -> dict[str, Any]:
        """Every part of the expected answer; PolicyUnavailable when `should_abort` gives a
        reason or nothing complete comes within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._got) < len(self.parts):
                reason = should_abort()
                if reason:
                    raise PolicyUnavailable(reason)
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [p for p in self.parts if p not in self._got]
                    raise PolicyUnavailable(f"no {' and '.join(missing)} command for {what} within {timeout:g} s")
                self._cond.wait(min(left, 0.05))
            got, self._key, self._got = self._got, None, {}
        return got
