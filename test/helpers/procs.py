"""Child processes of a test whose output goes to a file, never to an unread pipe.

A graph or a server that logs more than a pipe holds (64 KiB: a fuzzed graph logs every
dropped message kind) blocks in its next write while the test is busy elsewhere, and a node
blocked in a log call answers no service: the test then fails for a reason of its own making.
A file never fills; `output()` reads what the process printed so far."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


class LoggedProcess(subprocess.Popen):
    def __init__(self, argv, **kwargs):
        self.log_path = Path(tempfile.mkstemp(prefix="indgen-test-", suffix=".log")[1])
        with self.log_path.open("w") as log:
            super().__init__(argv, stdout=log, stderr=subprocess.STDOUT, text=True, **kwargs)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> str:
    """Stop a node as its launcher would (SIGINT, then a kill after `timeout`); what it printed."""
    import signal

    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.output() if isinstance(proc, LoggedProcess) else ""
