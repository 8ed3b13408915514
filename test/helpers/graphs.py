"""Bring a graph profile up with `indgen launch` as a separate process, for the end-to-end
tests, and read what it printed."""

from __future__ import annotations

import subprocess
import sys

import pytest


def launch(profile: str, *assignments: str, env=None) -> subprocess.Popen:
    """`indgen launch`, stopped (and with it its graph) if this test process dies first."""
    from indgen_core.launcher import _die_with_parent

    return subprocess.Popen([sys.executable, "-m", "indgen_core.cli", "launch", profile, *assignments],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=_die_with_parent)  # noqa: PLW1509


def finish(proc: subprocess.Popen, timeout: float = 120, expect: int | None = 0) -> str:
    """The launch's output once it exits (failing the test, with the output, when it does not
    exit within `timeout` or exits with another status than `expect`)."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the launcher stops its graph
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"the graph did not finish within {timeout} s:\n{out[-8000:]}")
    if expect is not None:
        assert proc.returncode == expect, out[-6000:]
    return out
