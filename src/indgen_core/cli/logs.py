"""The `indgen` command's logging: the packages' INFO messages (training progress and the like)
as plain lines on stdout, as `print` wrote them. Only the CLI calls this; library modules log
through `logging.getLogger(__name__)` and never configure logging themselves."""

from __future__ import annotations

import logging
import sys

PACKAGES = ("indgen_core", "indgen_sim", "indgen_robot")


class _StdoutLines(logging.StreamHandler):
    """The message alone, on whatever sys.stdout is when it is written (like print)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, _) -> None:
        pass


def configure_logging(level: int = logging.INFO) -> None:
    """Send the packages' messages at `level` and above to stdout (once: a second call adds no handler)."""
    for name in PACKAGES:
        logger = logging.getLogger(name)
        if not any(isinstance(h, _StdoutLines) for h in logger.handlers):
            logger.addHandler(_StdoutLines())
        logger.setLevel(level)
