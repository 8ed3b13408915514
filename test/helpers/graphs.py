"""Bring a graph profile up with `indgen launch` as a separate process, for the end-to-end
tests, and read what it printed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.procs import LoggedProcess
from indgen_core.waiting import wait_until


def launch(profile: str, *assignments: str, env=None, pipe: bool = False) -> subprocess.Popen:
    """`indgen launch`, stopped (and with it its graph) if this test process dies first. Its
    output goes to a file (`proc.output()`), or with `pipe` to `proc.stdout` for a caller that
    reads every line as it comes."""
    from indgen_core.nodes.launcher import _die_with_parent

    if pipe:
        return subprocess.Popen([sys.executable, "-m", "indgen_core.cli", "launch", profile, *assignments],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                preexec_fn=_die_with_parent)  # noqa: PLW1509
    return LoggedProcess([sys.executable, "-m", "indgen_core.cli", "launch", profile, *assignments], env=env,
                         preexec_fn=_die_with_parent)


def finish(proc: subprocess.Popen, timeout: float = 120, expect: int | None = 0, watch=None) -> str:
    """The launch's output once it exits (failing the test, with the output, when it does not
    exit within `timeout` or exits with another status than `expect`). `watch`, called about
    once a second while the graph runs (it may spin a node meanwhile), returns why the graph can
    no longer finish (a stand-in that reflexed and waits for a recovery nobody makes), or None:
    the test then fails at once with that reason, not at its timeout."""
    why = None

    def ended() -> bool:
        nonlocal why
        if proc.poll() is not None:
            return True
        if watch is not None:
            why = watch()
        return False

    wait_until(ended, timeout, poll=0.2 if watch is None else 0, stop=lambda: why is not None)
    if proc.poll() is None:
        _stop(proc)
        out = _output(proc)
        pytest.fail(f"{why or f'the graph did not finish within {timeout} s'}:\n{out[-8000:]}")
    out = _output(proc)
    if expect is not None:
        assert proc.returncode == expect, out[-6000:]
    return out


def fail(proc: subprocess.Popen, why: str) -> None:
    """Fail the test with `why` and the tail of the graph's output (stopping the graph first),
    so a failure on a busy CI machine can be read from its log alone."""
    if proc.poll() is None:
        _stop(proc)
    pytest.fail(f"{why}:\n{_output(proc)[-8000:]}")


def _stop(proc) -> None:
    proc.terminate()  # the launcher stops its graph
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _output(proc) -> str:
    """What a launch printed (a piped one's lines belong to the caller that reads them)."""
    return proc.output() if isinstance(proc, LoggedProcess) else ""
