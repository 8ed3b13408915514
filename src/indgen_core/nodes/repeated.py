"""A warning that repeats says so once, then counts: the first occurrence is logged whole, and
while it goes on, one line per `every_s` gives how many more there were and the worst figure.
A per-second throttle lets one busy warning fill most of a launch terminal, and the lines a
person needs scroll away. Plain code: the node passes its logger's method and a clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RepeatedWarning:
    log: Callable[[str], object]
    every_s: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _count: int = field(default=0, init=False)
    _worst: float = field(default=0.0, init=False)
    _since: float | None = field(default=None, init=False)  # None until the first warning

    def warn(self, text: str, figure: float = 0.0, unit: str = "") -> None:
        """`text` the first time; later, a count (and the worst `figure`) every `every_s`."""
        now = self.clock()
        if self._since is None:
            self._since = now
            figure_text = f" ({figure:.0f} {unit})" if unit else ""
            self.log(f"{text}{figure_text}; repeats are counted, one line per {self.every_s:g} s")
            return
        self._count += 1
        self._worst = max(self._worst, figure)
        if now - self._since >= self.every_s:
            worst = f" (worst {self._worst:.0f} {unit})" if unit else ""
            self.log(f"{self._count} more times in the last {now - self._since:.0f} s{worst}: {text}")
            self._count, self._worst, self._since = 0, 0.0, now
