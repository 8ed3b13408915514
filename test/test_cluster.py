"""Campaigns on Dask: a scheduler and two worker processes on 127.0.0.1, started as a user
would start them on several machines (`dask scheduler`, `dask worker`), and `--workers N`
(a LocalCluster on loopback). Every trial committed exactly once, the outcomes of a
sequential run; a worker killed mid-trial, the driver killed and resumed, and the scheduler
going away, each with nothing lost or doubled."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from helpers import servers, toy_setup
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until

pytestmark = [pytest.mark.slow]

DASK_ENV = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
            "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}


def _bin(name: str) -> str:
    return os.path.join(os.path.dirname(sys.executable), name)


class Cluster:
    """`dask scheduler` and `dask worker` processes on loopback, as on real machines."""

    def __init__(self, env, workers: int = 2):
        self.env = dict(env, **DASK_ENV)
        for _ in range(3):
            # a free port can be taken (by another test's Dask worker) before the scheduler binds
            # it, which then exits and leaves the address to that worker: wait for the scheduler
            # file, written once this scheduler listens, and take a new port if it died first
            self.port = servers.free_port()
            self.address = f"tcp://127.0.0.1:{self.port}"
            ready = Path(tempfile.mkdtemp()) / "scheduler.json"
            self.scheduler = subprocess.Popen([_bin("dask"), "scheduler", "--host", "127.0.0.1", "--port",
                                               str(self.port), "--no-dashboard", "--scheduler-file", str(ready)],
                                              env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if wait_until(lambda r=ready: r.exists() or self.scheduler.poll() is not None, 60) and ready.exists():
                break
            self.scheduler.kill()
            self.scheduler.wait()
        else:
            raise AssertionError("no Dask scheduler came up on a free port in three tries")
        self.workers = [self._worker() for _ in range(workers)]
        self.wait(workers)

    def _worker(self) -> subprocess.Popen:
        return subprocess.Popen([_bin("dask"), "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                                 "--host", "127.0.0.1", "--no-dashboard"], env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def wait(self, n: int, timeout: float = 60.0) -> None:
        from distributed import Client

        with Client(self.address, timeout=timeout) as client:
            client.wait_for_workers(n, timeout=timeout)

    def close(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc.poll() is None:
                proc.terminate()
        for proc in [*self.workers, self.scheduler]:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


def indgen(*args: str, env=None, expect: int | None = 0, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    if expect is not None:
        assert proc.returncode == expect, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _rows(db, cid):
    """trial -> (outcome, steps); how many results the store holds (one per trial: never
    doubled); trial -> attempts (aborted ones included)."""
    with ResultsStore(db) as store:
        rows = store.rows(cid)
        committed = store._db.execute("SELECT COUNT(*) FROM results WHERE campaign_id=?", (cid,)).fetchone()[0]
        return ({r.trial_id: (r.outcome, r.steps) for r in rows}, committed,
                {r.trial_id: store.attempt_count(cid, r.trial_id) for r in rows})


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy campaign certified and run once sequentially; each test runs it again under
    its own campaign id in the same store."""
    tmp_path = tmp_path_factory.mktemp("toy")
    with pytest.MonkeyPatch.context() as monkeypatch:
        env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path), TOY_STEP_DELAY="0.05")
    campaign = toy_setup.campaign_yaml(tmp_path, levels=[0, 1, 2, 3])
    db = tmp_path / "r.sqlite"
    indgen("campaign", "run", str(toy_setup.campaign_yaml(tmp_path, "toy_cert", purpose="certify",
                                                          trials_per_level=6, seed=3, levels=[0, 1, 2, 3, 4])),
           "--id", "cert", "--db", str(db), env=env)
    indgen("campaign", "run", str(campaign), "--id", "seq", "--db", str(db), env=env)
    seq, _, _ = _rows(db, "seq")
    return {"env": env, "campaign": campaign, "db": db, "seq": seq, "tmp": tmp_path}


def test_blockenv_and_twin_campaigns_on_a_two_worker_cluster_equal_a_sequential_run(tmp_path, repo):
    db = tmp_path / "r.sqlite"
    # the built-in FR3 (no MENAGERIE_ROOT): an in-process twin renders its cameras every tick, and
    # the menagerie meshes take ten times longer to render
    env = {k: v for k, v in os.environ.items() if k != "MENAGERIE_ROOT"}
    twin = tmp_path / "twin.yaml"
    twin.write_text(yaml.safe_dump({"name": "tw", "axis": "stack", "world": "droid_twin",
                                    "policies": ["droid_twin_oracle"], "levels": [0, 1], "trials_per_level": 1,
                                    "seed": 4, "purpose": "certify"}))  # two trials: one a worker
    blockenv = repo / "config" / "campaigns" / "blockenv_oracle.yaml"
    for cfg, cid in ((blockenv, "b-seq"), (twin, "t-seq")):
        indgen("campaign", "run", str(cfg), "--id", cid, "--db", str(db), env=env)
    cluster = Cluster(env)
    try:
        out = indgen("doctor", "--cluster", cluster.address, "--campaign", str(twin), env=env).stdout
        assert "2 workers" in out and "same IndGen" in out and "problem" not in out
        lacking = tmp_path / "lacking.yaml"  # a campaign whose world and policy no worker has
        lacking.write_text(twin.read_text().replace("droid_twin_oracle", "no_such_policy").replace(
            "world: droid_twin", "world: no_such_world"))
        missing = indgen("doctor", "--cluster", cluster.address, "--campaign", str(lacking), env=env, expect=1).stdout
        assert "lacks the world(s) no_such_world" in missing and "lacks the policy(ies) no_such_policy" in missing
        for cfg, cid in ((blockenv, "b-dask"), (twin, "t-dask")):
            indgen("campaign", "run", str(cfg), "--id", cid, "--db", str(db), "--cluster", cluster.address, env=env)
    finally:
        cluster.close()
    for name in ("b", "t"):
        seq, _, _ = _rows(db, f"{name}-seq")
        got, committed, attempts = _rows(db, f"{name}-dask")
        assert got == seq and committed == len(seq) and set(attempts.values()) == {1}


def test_a_worker_killed_mid_trial_costs_one_retry(toy):
    marker = toy["tmp"] / "crashed"
    env = dict(toy["env"], TOY_CRASH_ONCE=str(marker))  # the worker that reaches k=2, trial 1 dies there
    cluster = Cluster(env)
    try:
        out = indgen("campaign", "run", str(toy["campaign"]), "--id", "dask", "--db", str(toy["db"]),
                     "--cluster", cluster.address, env=env)
    finally:
        cluster.close()
    assert marker.exists() and "ran 16 trials" in out.stdout
    got, committed, attempts = _rows(toy["db"], "dask")
    assert got == toy["seq"] and committed == 16
    assert sorted(attempts.values()) == [1] * 15 + [2]  # the killed attempt is in the store as aborted


def test_workers_n_is_a_local_cluster_with_the_same_guarantees(toy):
    marker = toy["tmp"] / "crashed-local"
    env = dict(toy["env"], TOY_CRASH_ONCE=str(marker))
    out = indgen("campaign", "run", str(toy["campaign"]), "--id", "local", "--db", str(toy["db"]), "--workers", "2",
                 env=env)
    assert marker.exists() and "ran 16 trials" in out.stdout
    got, committed, attempts = _rows(toy["db"], "local")
    assert got == toy["seq"] and committed == 16 and sorted(attempts.values()) == [1] * 15 + [2]


def test_a_blind_ab_on_workers_stops_once_decided(toy):
    """`analysis.stop_when_decided` on a cluster: one trial per worker in flight, and the queue
    skipped, with a reason that names no policy, once the registered comparison is decided."""
    cfg = toy_setup.campaign_yaml(toy["tmp"], "ab_workers", policies=["skilled", "clumsy"], blind=True, levels=[0],
                                  trials_per_level=40, analysis={"compare": ["skilled", "clumsy"],
                                                                 "stop_when_decided": True})
    indgen("campaign", "run", str(cfg), "--id", "ab-w", "--db", str(toy["db"]), "--workers", "2", env=toy["env"])
    with sqlite3.connect(toy["db"]) as db:
        rows = db.execute("SELECT status, skip_reason FROM trials WHERE campaign_id='ab-w'").fetchall()
    skipped = {reason for status, reason in rows if status == "skipped"}
    assert len(skipped) == 1 and next(iter(skipped)).startswith("the registered comparison is decided"), rows
    assert sum(status == "skipped" for status, _ in rows) > 20
    assert not any(p in reason for reason in skipped for p in ("skilled", "clumsy"))


def test_a_policy_the_workers_cannot_build_or_run_stops_the_campaign_in_one_sentence(toy):
    """Found by hand: with an unreadable checkpoint, `--workers 2` printed "ran 0 trials,
    skipped 0, 5 pending" and exited 0, the reason lost on the workers (in process the same
    campaign is refused in one sentence). Now the workers' refusal stops the run with that
    sentence and nothing committed, as in process; a policy that crashes on every trial stops
    it after five aborted attempts in a row, as in process."""
    refused = "toy.pt is not a readable toy checkpoint (EOFError)"
    env = dict(toy["env"], TOY_POLICY_REFUSED=refused)
    for cid, where in (("refused-here", []), ("refused", ["--workers", "2"])):
        proc = indgen("campaign", "run", str(toy["campaign"]), "--id", cid, "--db", str(toy["db"]), *where, env=env,
                      expect=2)
        assert [line for line in proc.stderr.splitlines() if line.startswith("indgen:")] == [
            f"indgen: error: {refused}"], proc.stderr
        with ResultsStore(toy["db"]) as store:
            assert store.attempts(cid) == []
    proc = indgen("campaign", "run", str(toy["campaign"]), "--id", "crashing", "--db", str(toy["db"]), "--workers",
                  "2", env=dict(toy["env"], TOY_INFER_CRASH="1"), expect=2)
    assert "stopped after 5 aborted attempts in a row (worker error: RuntimeError: toy policy crashed)" in proc.stderr
    with ResultsStore(toy["db"]) as store:
        assert [a.outcome for a in store.attempts("crashing")] == [Outcome.ABORTED] * 5
        assert store.campaign("crashing").status == "waiting"


def _run_until(cmd, env, db, cid, done_at: int) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def reached() -> bool:
        with ResultsStore(db) as store:
            return store.has_campaign(cid) and sum(r.status == "done" for r in store.rows(cid)) >= done_at

    # a driver that has already exited never counts as having got there
    if wait_until(lambda: proc.poll() is None and reached(), 120, poll=0.05, stop=lambda: proc.poll() is not None):
        return proc
    raise AssertionError(f"the campaign did not reach {done_at} results: {proc.communicate()}")


def _start(toy, cid: str, cluster: Cluster, done_at: int) -> subprocess.Popen:
    """`indgen campaign run` on the cluster, returned once `done_at` results are committed."""
    cmd = [sys.executable, "-m", "indgen_core.cli", "campaign", "run", str(toy["campaign"]), "--id", cid,
           "--db", str(toy["db"]), "--cluster", cluster.address]
    return _run_until(cmd, toy["env"], toy["db"], cid, done_at)


def _resume_and_compare(toy, cid: str) -> None:
    """`resume --cluster` on a fresh cluster finishes the campaign as a sequential run did."""
    cluster = Cluster(toy["env"])
    try:
        indgen("campaign", "resume", cid, "--db", str(toy["db"]), "--cluster", cluster.address, env=toy["env"])
    finally:
        cluster.close()
    got, committed, _ = _rows(toy["db"], cid)
    assert got == toy["seq"] and committed == 16


def test_the_driver_killed_and_resumed(toy):
    cluster = Cluster(toy["env"])
    try:
        proc = _start(toy, "drv", cluster, 5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        cluster.close()
    _resume_and_compare(toy, "drv")


def test_a_scheduler_that_goes_away_stops_the_campaign_in_one_sentence(toy):
    cluster = Cluster(toy["env"])
    try:
        proc = _start(toy, "gone", cluster, 3)
        cluster.scheduler.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        cluster.close()
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("indgen:")]
    assert len(lines) == 1 and "Dask scheduler" in lines[0], err
    with ResultsStore(toy["db"]) as store:
        assert sum(r.status == "done" for r in store.rows("gone")) >= 3  # every committed result kept
    _resume_and_compare(toy, "gone")  # a new scheduler: resume finishes it


def test_no_scheduler_there(toy):
    port = servers.free_port()
    proc = indgen("campaign", "run", str(toy["campaign"]), "--db", str(toy["db"]), "--cluster",
                  f"tcp://127.0.0.1:{port}", env=toy["env"], expect=2)
    assert proc.stderr.strip().count("\n") == 0 and "no Dask scheduler answers" in proc.stderr
    proc = indgen("doctor", "--cluster", f"tcp://127.0.0.1:{port}", env=toy["env"], expect=None)
    assert proc.returncode != 0 and "no Dask scheduler answers" in proc.stdout + proc.stderr
