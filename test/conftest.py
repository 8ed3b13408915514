"""Shared fixtures. Every test runs in its own ROS 2 domain on loopback, so tests never
see each other or the network, and a child process a test starts inherits the same."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))  # test helpers: the `helpers` package, imported by name

# Under pytest-xdist several workers share the cores: one math thread each (torch, BLAS, and
# the processes a test starts inherit it), or three workers' thread pools thrash two cores.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# Every node a test starts holds its endpoints to its module's ENDPOINTS declaration (the
# reference page is generated from them): an undeclared topic, service or action ends the node
# with one sentence (indgen_core.ros.base.check_endpoints).
os.environ.setdefault("INDGEN_CHECK_ENDPOINTS", "1")

# The FR3 and Robotiq models for tests and CI (the product finds its own: assets.py).
_MENAGERIE = REPO.parent / "shared" / "menagerie"
if _MENAGERIE.is_dir():
    os.environ.setdefault("MENAGERIE_ROOT", str(_MENAGERIE))

# ROS domain ids 1..100 (Linux allows 0..101): each pytest-xdist worker (up to 7) owns its own
# block, so two tests running at once never share a domain; within a block ids cycle (a test's
# graph is gone before its id comes round again: no_process_left_behind), starting at an offset
# from the run's id so a developer's run and CI's on one machine are unlikely to meet.
_WORKERS_MAX = 8
_BLOCK = 100 // _WORKERS_MAX


def _worker_index() -> int:
    """xdist's workers gw0..gw6 own blocks 0..6; a run without xdist owns the last block, so it
    can run beside a parallel one (scripts/run-tests.sh runs the realtime cases so)."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... (absent without xdist)
    if not name[2:].isdigit():
        return _WORKERS_MAX - 1
    return int(name[2:]) % (_WORKERS_MAX - 1)


_domains = itertools.count(int(os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid())), 16 if
                               "PYTEST_XDIST_TESTRUNUID" in os.environ else 10) % _BLOCK)


def domain_id() -> int:
    return 1 + _worker_index() * _BLOCK + next(_domains) % _BLOCK


@pytest.fixture(autouse=True)
def ros_isolation(monkeypatch):
    domain = domain_id()
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.delenv("ROS_STATIC_PEERS", raising=False)
    return domain


@pytest.fixture
def more_domains():
    """Fresh domain ids of this worker's block, for a test that runs several graphs at once (one
    domain each: graphs on one domain would hear each other)."""
    return domain_id


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


@pytest.fixture(scope="session")
def vision_checkpoint(tmp_path_factory) -> Path:
    """A small camera-policy checkpoint from the real command (two demonstrations, one epoch),
    made once per run: the pytest-xdist workers share the run's base folder, and the first that
    asks makes it while the others wait on the lock (it costs half a minute of CPU)."""
    pytest.importorskip("torch")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # every worker's folder sits in the run's own
    out = root / "vision" / "v.pt"
    out.parent.mkdir(exist_ok=True)
    with open(out.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "twin", "train-bc", "--vision", "--demos",
                                   "2", "--rounds", "0", "--epochs", "1", "--views", "3", "--out", str(out)],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            assert f"checkpoint: {out}" in proc.stdout and "on the builtin FR3" in proc.stdout
    return out


#: the test modules that take longest on a worker (per-test wall times of the parallel group,
#: measured 2026-12-04), longest first. scripts/run-tests.sh passes `--no-loadscope-reorder`, so
#: that a worker takes the next module in this collection order when it runs short of work
#: (xdist's default orders modules by their number of tests, which started the long graph
#: modules last and left a worker idle for almost three minutes at the end): the long ones start
#: first and the many short ones fill in beside them.
LONGEST_FIRST = ["test_cluster", "test_libero", "test_fuzz_graph", "test_twin_graph", "test_ros_native",
                 "test_blockenv_models", "test_libero_graph", "test_twin", "test_graph_e2e", "test_graph_finishes",
                 "test_docs", "test_twin_vision", "test_dataset_export", "test_cli_doctor", "test_fr3_safety",
                 "test_security", "test_campaign_cli", "test_results_index", "test_compare_cli"]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest keep their order


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With TEST_CPU_LOG=FILE, one line per test: its id, wall seconds and CPU seconds (this
    process and every child it waited for, set-up and teardown included). On two cores the
    suite's floor is its CPU, not its schedule: this says which cases spend it
    (docs/development.md, "Where the suite's time goes")."""
    path = os.environ.get("TEST_CPU_LOG")
    if not path:
        yield
        return
    wall, cpu = time.monotonic(), _cpu_seconds()
    yield
    with open(path, "a") as out:  # one short write per line: workers append side by side
        out.write(f"{item.nodeid}\t{time.monotonic() - wall:.2f}\t{_cpu_seconds() - cpu:.2f}\n")
