"""Progress of long jobs: a live bar on a terminal, a line every few seconds in a log."""

from __future__ import annotations

import sys
import time


class ProgressPrinter:
    """`already`: what was done before this run (a resumed campaign); the time left is estimated
    from this run's pace alone (counting the earlier trials as this run's would make a resumed
    run look hundreds of times faster than it is)."""

    def __init__(self, total: int, description: str, stream=None, every_s: float = 5.0, already: int = 0):
        self.total = total
        self.already = already
        self.description = description
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self._last = 0.0
        self._start = time.monotonic()
        self._bar = None
        if getattr(self.stream, "isatty", lambda: False)():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[info]}"),
                transient=False,
            )
            self._task = self._bar.add_task(description, total=total, completed=already, info="")
            self._bar.start()

    def update(self, done: int, info: str = "") -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, info=info)
            return
        now = time.monotonic()
        if now - self._last >= self.every_s or done >= self.total:
            self._last = now
            rate = (done - self.already) / max(now - self._start, 1e-9)
            eta = (self.total - done) / rate if rate > 0 else float("inf")
            eta_text = f", ~{eta:.0f} s left" if eta != float("inf") else ""
            print(f"{self.description}: {done}/{self.total}{eta_text} {info}".rstrip(), file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> ProgressPrinter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
