"""kill -9 anywhere in the graph: each process of a running campaign (progression manager,
sim bridge, scorer, policy node, policy server, recorder) is killed with SIGKILL at random points,
several times, and brought back (the launcher respawns the others; the progression manager,
whose death ends the launch, is relaunched: the campaign resumes from the store). The final
per-trial results equal an uninterrupted run: none lost, none counted twice.

BlockEnv with the random-legal-grasp control: its step counts vary with each trial's seed,
so a trial that ran with the wrong setup, or twice, would show. The twin with its oracle:
physics in lock-step, every tick through the graph."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from helpers import graphs, servers
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.realtime]

VICTIMS = ["policy_server", "sim_bridge", "scorer", "policy_node", "progression_manager", "recorder"]
_PID = re.compile(r"^\[launch\] (?:started|restarted) (\w+) \(pid (\d+)\)")


class Graph:
    """One campaign's graph, relaunched whenever its launch ends before the campaign is done;
    tracks the current pid of every process from the launcher's own lines."""

    def __init__(self, profile: str, assignments: list[str], db, campaign_id: str, env):
        self.profile, self.assignments, self.db, self.campaign_id, self.env = profile, assignments, db, campaign_id, env
        self.pids: dict[str, int] = {}
        self.log: list[str] = []
        self.launches = 0
        self.proc = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self.launches += 1
        self.proc = graphs.launch(self.profile, *self.assignments, env=self.env, pipe=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            m = _PID.match(line)
            with self._lock:
                self.log.append(line)
                if m:
                    self.pids[m.group(1)] = int(m.group(2))

    def done(self) -> int:
        with ResultsStore(self.db) as store:
            if not store.has_campaign(self.campaign_id):
                return 0
            return sum(r.status == "done" for r in store.rows(self.campaign_id))

    def pid(self, name: str) -> int | None:
        with self._lock:
            return self.pids.get(name)


def _kill_through(graph: Graph, total: int, kills: list[str], rng: random.Random, timeout: float,
                  max_delay: float) -> list[str]:
    """Kill each victim in turn at a random moment, once the campaign has moved on since the
    last kill; relaunch the graph when its launch ended. Returns what was killed, when."""
    done_log = []
    last_done = -1

    def finished() -> bool:
        """One round of the scenario; True once the campaign is done and its launch ended."""
        nonlocal last_done
        if graph.proc.poll() is not None:
            if graph.done() >= total:
                return True
            graph.start()  # the progression manager died: `indgen launch` ends; launch again (resume)
            time.sleep(1.0)  # the relaunched graph gets a second before the next kill can come
            return False
        done = graph.done()
        if kills and done > last_done and done < total:
            time.sleep(rng.uniform(0.0, max_delay))  # a random moment of the running trial
            victim = kills[0]
            pid = graph.pid(victim)
            if pid is None:
                return False  # not up (again) yet
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return False
            kills.pop(0)
            done_log.append(f"{victim} at {graph.done()}/{total}")
            last_done = graph.done()
            with graph._lock:
                graph.pids.pop(victim, None)
        return False

    wait_until(finished, timeout, poll=0.05)
    return done_log


def _run_with_kills(graph: Graph, total: int, victims: list[str], seed: int, max_delay: float) -> list[str]:
    graph.start()
    try:
        kills = _kill_through(graph, total, victims, random.Random(seed), timeout=900, max_delay=max_delay)
        graphs.finish(graph.proc, timeout=600)
    finally:
        if graph.proc.poll() is None:
            graph.proc.kill()
    return kills


def _results(db, campaign_id):
    with ResultsStore(db) as store:
        rows = store.rows(campaign_id)
        n = store._db.execute("SELECT COUNT(*) FROM results WHERE campaign_id=?", (campaign_id,)).fetchone()[0]
        return {r.trial_id: (r.outcome, r.steps) for r in rows}, n


def _interrupted(graph: Graph) -> list[str]:
    """The graph's own lines saying a kill interrupted a running trial (the sim bridge's or the
    manager's). The store's count of aborted attempts is not that measure: an abort reaches it
    only through a scorer that is up at that moment, and the scorer is one of the victims."""
    with graph._lock:
        return re.findall(r": aborted after \d+ steps|trial aborted \(", "".join(graph.log))


def test_kill9_of_every_process_of_a_blockenv_campaign(tmp_path, repo):
    db = tmp_path / "r.sqlite"
    campaign = tmp_path / "rl.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rl", "axis": "blockenv_depth", "world": "blockenv",
                                        "policies": ["blockenv_random_legal"], "levels": [0, 1, 2, 3, 4],
                                        "trials_per_level": 30, "seed": 11}))
    cli = [sys.executable, "-m", "indgen_core.cli", "campaign", "run"]
    for args in ([str(repo / "config" / "campaigns" / "blockenv_oracle.yaml"), "--id", "cert"],
                 [str(campaign), "--id", "reference"]):
        ran = subprocess.run([*cli, *args, "--db", str(db)], capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, ran.stderr
    reference, _ = _results(db, "reference")
    assert len({s for _, s in reference.values()}) > 3  # step counts vary with the seed

    port = servers.free_port()
    graph = Graph("blockenv_axis", [f"db:={db}", f"report_dir:={tmp_path / 'rep'}", f"port:={port}",
                                    f"server_uri:=ws://127.0.0.1:{port}", f"campaign:={campaign}",
                                    "campaign_id:=killed", "policy:=blockenv_random_legal", "action_timeout_s:=3.0"],
                  db, "killed", dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "art")))
    kills = _run_with_kills(graph, len(reference), VICTIMS * 2, seed=5, max_delay=0.15)
    assert len(kills) == 12, kills
    got, n = _results(db, "killed")
    assert got == reference
    assert n == len(reference)  # none counted twice
    text = "".join(graph.log)
    assert _interrupted(graph), "no kill interrupted a running trial"
    assert graph.launches >= 3  # the manager came back twice
    with ResultsStore(db) as store:  # every attempt a killed manager started is in the store
        assert store.unfinished_starts("killed") == []
    # the launcher respawned every kind of process it owns (a kill that lands while a killed
    # manager's launch is shutting down is not respawned by that launch, the relaunch starts
    # it: so a count of respawn lines would depend on timing, which process came back does not)
    respawned = set(re.findall(r"\] (\w+) died with status -?\d+; restarting it in", text))
    assert respawned >= set(VICTIMS) - {"progression_manager"}, respawned
    # the bags of the killed recorders open up to their last chunk; together with the others
    # they judge every recorded episode as it was judged live
    bags = sorted(p for p in (tmp_path / "art" / "bags").iterdir() if p.is_dir())
    assert len(bags) >= 3
    rescored = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bag", "rescore", *map(str, bags),
                               "--campaign", "killed", "--db", str(db), "--json", str(tmp_path / "rs.json")],
                              capture_output=True, text=True, timeout=600)
    assert rescored.returncode == 0, rescored.stdout[-3000:] + rescored.stderr[-3000:]
    assert "recorder was killed" in rescored.stderr
    figures = json.loads((tmp_path / "rs.json").read_text())
    # (BlockEnv runs ~25 episodes a second: a recorder down for 2 s misses ~50 of them)
    assert figures["disagree"] == [] and figures["agree"] == figures["compared"] >= 20


def test_kill9_of_every_process_of_a_twin_campaign(tmp_path):
    from indgen_core.campaign.planning import setup_for
    from indgen_core.episode import run_episode
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.oracle import TwinOracle
    from indgen_sim.twin.world import DroidTwinWorld

    db = tmp_path / "r.sqlite"
    campaign = tmp_path / "tw.yaml"
    campaign.write_text(yaml.safe_dump({"name": "tw", "axis": "stack", "world": "droid_twin",
                                        "policies": ["droid_twin_oracle"], "levels": [0, 1], "trials_per_level": 4,
                                        "seed": 4, "purpose": "certify"}))
    port = servers.free_port()
    graph = Graph("stack_axis", [f"db:={db}", f"report_dir:={tmp_path / 'rep'}", f"port:={port}",
                                 f"server_uri:=ws://127.0.0.1:{port}", f"campaign:={campaign}", "campaign_id:=tw",
                                 "builtin_fr3:=true", "level_images:=false", "action_timeout_s:=3.0"],
                  db, "tw", dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "art")))
    kills = _run_with_kills(graph, 8, list(VICTIMS), seed=9, max_delay=1.0)
    assert len(kills) == 6, kills
    got, n = _results(db, "tw")
    assert n == 8 and _interrupted(graph), "no kill interrupted a running trial"
    with ResultsStore(db) as store:
        record, trials = store.campaign("tw"), store.planned_trials("tw")
    with DroidTwinWorld(cameras=False, builtin=True) as world:
        policy = TwinOracle()
        for trial in trials:
            local = run_episode(world, policy.infer, DroidSpec(), setup_for(record, trial))
            assert got[trial.trial_id] == (local.outcome, local.steps), trial.trial_id
