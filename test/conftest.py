"""Shared fixtures. Every test runs in its own ROS 2 domain on loopback, so tests never
see each other or the network, and a child process a test starts inherits the same."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent / "helpers"))

# The FR3 and Robotiq models for tests and CI (the product finds its own: assets.py).
_MENAGERIE = REPO.parent / "shared" / "menagerie"
if _MENAGERIE.is_dir():
    os.environ.setdefault("MENAGERIE_ROOT", str(_MENAGERIE))

# Domain ids 1..100: distinct per test in this run, offset by the pid so two runs on one
# machine (a developer and CI) are unlikely to share one.
_domains = itertools.count(os.getpid() % 100)


@pytest.fixture(autouse=True)
def ros_isolation(monkeypatch):
    domain = 1 + next(_domains) % 100
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.delenv("ROS_STATIC_PEERS", raising=False)
    return domain


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Kill what a test started and left running. A test stopped by its timeout (or by an
    assertion before it stopped its graph) would otherwise leave a whole graph, with a physics
    thread and cameras, eating the CPU of every later test, and alive in a domain id a test
    100 later reuses: one slow test would turn into many failed ones."""
    import psutil

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    left = [p for p in me.children(recursive=True) if p.pid not in before and not _lives_with_pytest(p)]
    alive = []
    for p in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
                p.terminate()
    _, still = psutil.wait_procs(alive, timeout=10)
    for p in still:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    if alive:
        names = ", ".join(f"{p.pid}" for p in alive)
        sys.stderr.write(f"\nconftest: killed {len(alive)} process(es) the test left running: {names}\n")


def _lives_with_pytest(proc) -> bool:
    """multiprocessing's helpers (resource tracker, fork server) serve the test process for
    its whole life, started by whichever test first needed them."""
    try:
        return any("multiprocessing" in part for part in proc.cmdline())
    except Exception:
        return True


@pytest.fixture
def ros_context(ros_isolation):
    """An initialised rclpy context bound to this test's domain."""
    rclpy = pytest.importorskip("rclpy")
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_isolation)
    yield context
    context.try_shutdown()


@pytest.fixture
def repo() -> Path:
    return REPO
