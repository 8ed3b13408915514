"""Bring a graph profile up with `indgen launch` as a separate process, for the end-to-end
tests, and read what it printed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from procs import LoggedProcess


def launch(profile: str, *assignments: str, env=None, pipe: bool = False) -> subprocess.Popen:
    """`indgen launch`, stopped (and with it its graph) if this test process dies first. Its
    output goes to a file (`proc.output()`), or with `pipe` to `proc.stdout` for a caller that
    reads every line as it comes."""
    from indgen_core.launcher import _die_with_parent

    if pipe:
        return subprocess.Popen([sys.executable, "-m", "indgen_core.cli", "launch", profile, *assignments],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                preexec_fn=_die_with_parent)  # noqa: PLW1509
    return LoggedProcess([sys.executable, "-m", "indgen_core.cli", "launch", profile, *assignments], env=env,
                         preexec_fn=_die_with_parent)


def finish(proc: subprocess.Popen, timeout: float = 120, expect: int | None = 0) -> str:
    """The launch's output once it exits (failing the test, with the output, when it does not
    exit within `timeout` or exits with another status than `expect`)."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the launcher stops its graph
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out = _output(proc)
        pytest.fail(f"the graph did not finish within {timeout} s:\n{out[-8000:]}")
    out = _output(proc)
    if expect is not None:
        assert proc.returncode == expect, out[-6000:]
    return out


def _output(proc) -> str:
    """What a launch printed (a piped one's lines belong to the caller that reads them)."""
    return proc.output() if isinstance(proc, LoggedProcess) else ""
