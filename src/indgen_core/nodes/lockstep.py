"""The world side of a lock-step exchange: after publishing a tick's observation the world
waits for the commands that answer exactly that tick. Commands arrive on subscription
callbacks (another thread); one that answers another tick, or a part that already arrived, is
counted as stale and dropped, never applied. While it waits, the world can be asked for more of
the same tick (the camera images of a tick rendered on request): such an ask is served on the
waiting thread, the one that owns the simulation and its renderer. Used by every world's topic
adapter."""

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
        self._asks: list[Any] = []
        self.stale = 0

    def expect(self, key: Hashable) -> None:
        """The next answer must carry `key` (set before the observation goes out)."""
        with self._cond:
            self._key, self._got, self._asks = key, {}, []

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

    def wake(self) -> None:
        """Something the waiting thread's `should_abort` reads has changed (the policy node
        reported itself lost): it checks now, not at its next poll."""
        with self._cond:
            self._cond.notify_all()

    def ask(self, key: Hashable, value: Any) -> bool:
        """Something more of the expected tick is asked for; True when it is for that tick (the
        waiting thread serves it), False when it is for another (ignored)."""
        with self._cond:
            if key != self._key:
                return False
            self._asks.append(value)
            self._cond.notify_all()
            return True

    def wait(
        self,
        timeout: float,
        should_abort: Callable[[], str | None],
        what: str,
        serve: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """Every part of the expected answer; PolicyUnavailable when `should_abort` gives a
        reason or nothing complete comes within `timeout` seconds. Asks for the tick that come
        in meanwhile are handed to `serve` (on this thread), or dropped without one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._got) < len(self.parts):
                if self._asks:
                    value = self._asks.pop(0)
                    if serve is not None:
                        self._cond.release()
                        try:
                            serve(value)
                        finally:
                            self._cond.acquire()
                    continue
                reason = should_abort()
                if reason:
                    raise PolicyUnavailable(reason)
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [p for p in self.parts if p not in self._got]
                    raise PolicyUnavailable(f"no {' and '.join(missing)} command for {what} within {timeout:g} s")
                self._cond.wait(min(left, 0.05))
            got, self._key, self._got, self._asks = self._got, None, {}, []
        return got
