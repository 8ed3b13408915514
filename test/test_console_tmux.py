"""`indgen console` in a real terminal (tmux: send-keys, capture-pane) against the real graph
with the stand-in hardware: a two-level campaign with, on the way, one wrong key, one redo, one
relabel, one skip, one e-stop and one console restart in the middle of a prompt. Afterwards the
store holds exactly the expected final labels and the history of the changes, and the report
shows the counts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from helpers import graphs, servers
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore
from indgen_core.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.realtime]
rclpy = pytest.importorskip("rclpy")
if shutil.which("tmux") is None:
    pytest.fail("tmux is needed for the console's terminal test (scripts/ensure-system-deps.sh installs it)")


class Terminal:
    """One tmux session running a command; the screen as text."""

    def __init__(self, name: str, command: str, env: dict, graph=None):
        self.name = name
        self.graph = graph  # the launched graph, whose log a failed wait shows
        exports = " ".join(f"{k}={v}" for k, v in env.items())
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "110", "-y", "48",
                        f"env {exports} {command}"], check=True)

    def screen(self) -> str:
        out = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return out.stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(0.15)  # a person's pace: one key at a time, as the console reads them

    def wait_for(self, *texts: str, timeout: float = 90.0) -> str:
        screen = ""

        def shown() -> bool:
            nonlocal screen
            screen = self.screen()
            return all(t in screen for t in texts)

        if wait_until(shown, timeout, poll=0.2):
            return screen
        log = self.graph.output()[-6000:] if self.graph is not None else ""
        raise AssertionError(f"{texts} never on the console's screen; it shows:\n{screen}\n"
                             f"the graph's log ends:\n{log}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def unwrapped(screen: str) -> str:
    """The screen's text with its line wrapping undone."""
    return " ".join(screen.split())


def launch_cell(tmp_path, db, campaign, campaign_id: str, port: int, *extra: str):
    """The real-robot graph against the stand-in (built-in FR3, small camera rate), as a person
    would launch it, with its own policy server on `port` (unless `start_policy_server:=false`)."""
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "art"))
    env.pop("MENAGERIE_ROOT", None)
    return graphs.launch("stack_axis", "sim:=false", "robot:=mock", "builtin_fr3:=true", "camera_hz:=2",
                         "bag_exclude:=/zed", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}", f"db:={db}",
                         f"report_dir:={tmp_path / 'reports'}", f"campaign:={campaign}",
                         f"campaign_id:={campaign_id}", *extra, env=env)


def console_environment(domain: int) -> dict:
    return {"ROS_DOMAIN_ID": str(domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
            "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


def scene_builder(node):
    """The person's hands, between the prompt and "scene ready": the stand-in's build service."""
    from std_srvs.srv import Trigger

    from helpers.ros_helpers import spin_until

    build = node.create_client(Trigger, "/indgen/sim/stand_in/build_scene")

    def built() -> bool:
        if build.service_is_ready():
            future = build.call_async(Trigger.Request())
            if spin_until(node, future.done, 5) and future.result().success:
                return True
        spin_until(node, lambda: False, 0.2)  # the node spins (discovery) before it asks again
        return False

    def build_scene():
        if not wait_until(built, 20, poll=0):
            raise AssertionError("the stand-in never built the scene")

    return build_scene


def scene_built_by_command(domain: int):
    """The person's hands as the docs give them for a rehearsal against the stand-in: `indgen
    stand-in build-scene` in a second terminal, before Enter in the console."""
    import subprocess

    def build_scene():
        proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "stand-in", "build-scene", "--timeout", "20"],
                              env={**os.environ, **console_environment(domain)}, capture_output=True, text=True,
                              timeout=90)
        assert proc.returncode == 0 and proc.stdout.startswith("scene of "), proc.stdout + proc.stderr

    return build_scene


class AtTheCell:
    """The person's part between the console's prompts: build the scene, start the trial, and
    when the system aborts an attempt meanwhile (a stale state under load: the trial is re-run,
    never scored) the scene prompt comes back saying which attempt it is and why, and the person
    builds the scene again and starts it, as at the real cell (Enter on the old prompt, still on
    the screen while the campaign waits to retry, is refused: CI saw that). `system_reruns`
    keeps (trial, reason) of each such attempt."""

    def __init__(self, term: Terminal, db, campaign_id: str, build_scene):
        self.term, self.db, self.campaign_id, self.build_scene = term, db, campaign_id, build_scene
        self.system_reruns: list[tuple[str, str]] = []
        self.handled: dict[str, int] = {}  # per trial, the aborted attempts already answered

    def attempts(self, trial: str) -> list[dict]:
        with ResultsStore(self.db) as store:
            return [a for a in store.attempts(self.campaign_id) if a.trial_id.endswith(trial)]

    def aborted(self, trial: str) -> list[str]:
        return [a.reason for a in self.attempts(trial) if a.outcome is Outcome.ABORTED]

    def answered_by_this_prompt(self, trial: str) -> None:
        """The scene prompt on the screen answers every attempt aborted so far: the person's next
        Enter runs the trial again. An abort other than the person's own e-stop (a reset that
        found the arm's state stale under load, seen with the e-stop's release) is the system's."""
        reasons = self.aborted(trial)
        self.system_reruns.extend((trial, r) for r in reasons[self.handled.get(trial, 0) :] if r != "operator e-stop")
        self.handled[trial] = len(reasons)

    def waiting_through_reruns(self, trial: str, *texts: str) -> str:
        """Wait for `texts`, re-running the trial's attempts the system aborts meanwhile."""
        screen = ""

        def shown() -> bool:
            nonlocal screen
            screen = self.term.screen()
            if all(t in screen for t in texts):
                return True
            reasons = self.aborted(trial)
            n = len(self.attempts(trial))
            rerun_prompt = f"attempt {n + 1} of this trial: attempt {n} was aborted"
            if len(reasons) > self.handled.get(trial, 0) and rerun_prompt in unwrapped(screen):
                self.system_reruns.extend((trial, r) for r in reasons[self.handled.get(trial, 0) :])
                self.handled[trial] = len(reasons)
                self.build_scene()
                self.term.keys("Enter")
            return False

        if wait_until(shown, 90, poll=0.2):
            return screen
        return self.term.wait_for(*texts, timeout=0.1)  # fails with the screen and the graph's log

    def scene_then(self, trial: str, *texts: str) -> str:
        self.build_scene()
        self.term.keys("Enter")
        return self.waiting_through_reruns(trial, *texts)


def test_a_person_runs_a_two_level_campaign_with_the_console(tmp_path, ros_context, ros_isolation):
    db = tmp_path / "r.sqlite"
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "people", "axis": "stack", "world": "fr3",
                                        "policies": ["droid_twin_oracle"], "levels": [0, 1], "trials_per_level": 2,
                                        "seed": 2, "order": "sequential", "purpose": "certify", "max_steps": 45}))
    proc = launch_cell(tmp_path, db, campaign, "people", servers.free_port())
    command = f"{sys.executable} -m indgen_core.cli console --operator ada"
    session = f"indgen-console-{os.getpid()}"
    console_env = console_environment(ros_isolation)
    term = Terminal(session, command, console_env, proc)
    node = rclpy.create_node("hands", context=ros_context)
    build_scene = scene_builder(node)

    def setup_of(trial: str, *body: str) -> str:
        # the body too: a capture can fall between the box's title and its lines being drawn
        return term.wait_for("BUILD THE SCENE", trial, *body, timeout=120)

    person = AtTheCell(term, db, "people", build_scene)
    waiting_through_reruns, scene_then, aborted = person.waiting_through_reruns, person.scene_then, person.aborted

    try:
        # trial 1: a wrong key first, then the scene, then a success
        screen = unwrapped(setup_of("k+0/000", "Put the blue block directly on the table", "[Enter] scene ready"))
        # the first attempt's reset may have been aborted already (a state delayed under load):
        # the box then says so, and still that this is the session's first trial
        assert "Put the blue block directly on the table" in screen
        assert "What changed: first trial" in screen or (
            "attempt 1 was aborted" in screen and "first trial of this session" in screen), screen
        person.answered_by_this_prompt("k+0/000")
        term.keys("z")
        assert "'z' does nothing while the scene is being built" in term.wait_for("does nothing")
        scene_then("k+0/000", "EPISODE RUNNING", "k+0/000")
        term.keys("Space")  # end it now (the oracle needs longer than the person waits)
        waiting_through_reruns("k+0/000", "LABEL THE EPISODE", "k+0/000")
        term.keys("y")
        # trial 2: labelled, then redone, then labelled failure
        screen = setup_of("k+0/001", "same level as the last trial")
        assert "same level as the last trial" in screen
        scene_then("k+0/001", "LABEL THE EPISODE", "k+0/001")
        term.keys("r")
        assert "press r again to redo" in term.wait_for("press r again")
        term.keys("r")
        setup_of("k+0/001")
        scene_then("k+0/001", "LABEL THE EPISODE", "k+0/001")
        term.keys("n")
        # trial 3: the console dies in the middle of its prompt; a new one shows it; skip
        setup_of("k+1/000")
        term.close()
        time.sleep(1.0)  # the console stays away a moment, the prompt open, before the person restarts it
        term = person.term = Terminal(session, command, console_env, proc)
        screen = setup_of("k+1/000", "1 level further out")
        assert "1 level further out (level 0 -> 1): blue_block_raise 0 -> 0.25 in" in screen
        term.keys("s")
        # trial 4: an e-stop during the episode, released; the trial runs again
        setup_of("k+1/001")
        scene_then("k+1/001", "EPISODE RUNNING", "k+1/001")
        term.keys("x")
        term.wait_for("SOFT E-STOP ENGAGED")
        # the person holds it past the campaign's 1 s back-off: the retry finds the world not
        # ready and waits for the release, without counting another aborted attempt
        time.sleep(2.5)  # scenario: a person holding the e-stop
        term.keys("e")
        screen = setup_of("k+1/001")
        assert "was aborted (operator e-stop), not scored" in unwrapped(screen)  # why the prompt is back
        person.answered_by_this_prompt("k+1/001")  # the e-stop's own abort is not a re-run
        scene_then("k+1/001", "LABEL THE EPISODE", "k+1/001")
        term.keys("u")  # relabel the previous labelled trial (k+0/001: failure -> success)
        term.wait_for("RELABEL THE PREVIOUS TRIAL", "k+0/001")
        term.keys("y")
        term.wait_for("relabelled")
        term.keys("4", "0", "n")  # this one: failure, partial 40
        out = graphs.finish(proc, timeout=120)
    finally:
        term.close()
        node.destroy_node()
        if proc.poll() is None:
            proc.kill()
    assert "campaign people done" in out
    stalls = [line for line in out.splitlines() if "behind the wall clock" in line]
    if stalls:  # the stand-in's own pauses (a busy host): what to read first when this test fails
        sys.stderr.write("the stand-in stalled:\n" + "\n".join(stalls) + "\n")
    with ResultsStore(db) as store:
        rows = {r.trial_id.split("/", 1)[1]: r for r in store.rows("people")}
        assert {k: (r.status, r.outcome, r.source) for k, r in rows.items()} == {
            "k+0/000": ("done", Outcome.SUCCESS, "operator"), "k+0/001": ("done", Outcome.SUCCESS, "operator"),
            "k+1/000": ("skipped", None, None), "k+1/001": ("done", Outcome.FAILURE, "operator")}
        assert rows["k+1/001"].partial_score == pytest.approx(0.4)
        # the e-stop: aborted once, run again; held 2.5 s, it cost no further attempt (the
        # manager waited for the release); any other abort was the system's, and re-run as well
        reasons = aborted("k+1/001")
        told = f"{store.attempts('people')}; re-run: {person.system_reruns}"  # a str: pytest shows it whole
        assert reasons.count("operator e-stop") == 1, told
        assert rows["k+1/001"].aborted_attempts == len(reasons), told
        rerun = {r for t, r in person.system_reruns if t == "k+1/001"}
        assert all(r == "operator e-stop" or r in rerun for r in reasons), told
        if person.system_reruns:
            sys.stderr.write(f"attempts the system aborted and re-ran: {person.system_reruns}\n")
        assert not [r for _, r in person.system_reruns if "policy" in r], person.system_reruns
        history = [(h["trial_id"].split("/", 1)[1], h["kind"], h["outcome"], h["operator"], h["previous"])
                   for h in store.label_history("people")]
        assert history == [
            ("k+0/000", "label", "success", "ada", ""),
            ("k+0/001", "superseded", "superseded", "ada", ""),
            ("k+0/001", "label", "failure", "ada", ""),
            ("k+0/001", "relabel", "success", "ada", "failure"),
            ("k+1/001", "label", "failure", "ada", ""),
        ]
        counts = store.operator_counts("people")
        assert counts[("droid_twin_oracle", 0)] == {"labelled": 2, "relabelled": 1, "redone": 1, "skipped": 0,
                                                    "invalid": 0, "disagreements": 0}
        assert counts[("droid_twin_oracle", 1)]["skipped"] == 1
    report = (tmp_path / "reports" / "people" / "report.md").read_text()
    assert "### The operator's labels per level" in report
    assert "| droid_twin_oracle | 0 | 2 | 1 | 1 | 0 | 0 | 0 |" in report
    # the bag keeps the operator's answers and the relabel; `indgen bag rescore` lists them
    bags = [p for p in (tmp_path / "art" / "bags").iterdir() if p.is_dir()]
    rescored = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bag", "rescore", *map(str, bags), "--db",
                               str(db)], capture_output=True, text=True, timeout=120)
    assert "operator labels:" in rescored.stdout, rescored.stdout + rescored.stderr
    labels = rescored.stdout.split("operator labels:", 1)[1]
    assert "k+0/001: relabel success by ada" in labels and "k+0/001: relabelled success" in labels, labels
    # every answer to a prompt is paired with its trial (a console answers by prompt id alone)
    for trial, said in (("k+0/000", "success"), ("k+0/001", "redo"), ("k+0/001", "failure"), ("k+1/000", "skip"),
                        ("k+1/001", "failure")):
        assert f"droid_twin_oracle/{trial}: {said} by ada" in labels, labels


def test_a_blind_ab_campaign_never_shows_a_policy_name(tmp_path, ros_context, ros_isolation):
    """Two policies, each on its own server away from the cell (the policy node switches between
    them per trial): the person sees letters only, no running rate, and the trials of each
    letter reach that letter's server. Nothing a person at the cell can read names a policy
    before the unblinding: no console screen, no line of the launch terminal, no message of any
    recorded topic carries a policy's name, what its server says of itself, or a server's
    address (the store keeps the names)."""
    import re
    import threading

    from helpers import distinct_policies
    from indgen_core.bags.reader import BagReader
    from indgen_core.wire.client import RemotePolicy

    db = tmp_path / "r.sqlite"
    names = ("zebra_policy", "yak_policy")  # each server says its name, team and checkpoint
    port, port_a, port_b = servers.free_port(), servers.free_port(), servers.free_port()
    requests_b = tmp_path / "b_requests.jsonl"
    server_a = servers.start_server(names[0], port_a, env=distinct_policies.environment())
    server_b = servers.start_server(names[1], port_b, "--record-requests", str(requests_b),
                                    env=distinct_policies.environment())
    said = []  # what each server says of itself
    for p in (port_a, port_b):
        client = RemotePolicy(f"ws://127.0.0.1:{p}")
        said.append({k: str(v) for k, v in client.connect(timeout=30).items()})
        client.close()
    # what identifies a server: the name it gives itself and whatever tells the two apart (what
    # both say alike, such as the spec "droid" the graph is launched with, names neither)
    identifying = {m["policy"] for m in said if "policy" in m}
    identifying |= {v for k in said[0].keys() | said[1].keys() if said[0].get(k) != said[1].get(k)
                    for v in (said[0].get(k), said[1].get(k)) if v}
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "lab_session", "axis": "stack", "world": "fr3", "policies": list(names),
                                        "levels": [0], "trials_per_level": 1, "seed": 5, "order": "sequential",
                                        "purpose": "certify", "max_steps": 45, "blind": True,
                                        "endpoints": {names[0]: f"ws://127.0.0.1:{port_a}",
                                                      names[1]: f"ws://127.0.0.1:{port_b}"}}))
    proc = launch_cell(tmp_path, db, campaign, "lab", port, "start_policy_server:=false")
    term = Terminal(f"indgen-blind-{os.getpid()}", f"{sys.executable} -m indgen_core.cli console --operator ada",
                    console_environment(ros_isolation), proc)
    screens: set[str] = set()
    watching = threading.Event()

    def watch_screens():  # every screen the person could have seen, sampled throughout
        while not watching.is_set():
            screens.add(term.screen())
            watching.wait(0.2)

    node = rclpy.create_node("hands", context=ros_context)
    person = AtTheCell(term, db, "lab", scene_built_by_command(ros_isolation))

    sampler = threading.Thread(target=watch_screens, daemon=True)
    sampler.start()
    seen_trials = []
    try:
        for i in range(2):
            screen = term.wait_for("BUILD THE SCENE", timeout=120)
            trial = re.search(r"BUILD THE SCENE\s+(\S+)", screen).group(1)
            assert trial not in seen_trials
            seen_trials.append(trial)
            person.scene_then(trial, "EPISODE RUNNING", trial)
            # the episode runs to its step limit: each letter's policy gets its requests
            person.waiting_through_reruns(trial, "LABEL THE EPISODE", trial)
            term.keys("y")
            if i == 0:  # the first letter's level, scored: its rate stays hidden
                term.wait_for("(blind: hidden until the campaign is done)")
        out = graphs.finish(proc, timeout=120)
        time.sleep(1.0)  # the screen a moment after the campaign is done still names no policy
        screens.add(term.screen())
    finally:
        watching.set()
        sampler.join(timeout=5)
        term.close()
        node.destroy_node()
        servers.stop(server_a)
        servers.stop(server_b)
        if proc.poll() is None:
            proc.kill()
    assert "campaign lab done" in out
    assert sorted(t.split("/")[0] for t in seen_trials) == ["A", "B"]
    assert identifying >= {*names, "zebra-lab", "yak-lab", "/ckpt/zebra_v7/params"}, identifying
    secrets = {*names, "zebra", "yak", "oracle", *identifying, f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"}
    leaked = [(s, line) for line in out.splitlines() for s in secrets if s in line]
    assert not leaked, f"the launch terminal shows {leaked[0][0]!r}: {leaked[0][1]}"
    bags = [p for p in (tmp_path / "art" / "bags").iterdir() if p.is_dir()]
    recorded = 0
    for bag in bags:
        for record in BagReader(bag).records():
            recorded += 1
            # (3 bytes such as "yak" turn up by chance in images: whole names and values there)
            found = [s for s in secrets if len(s) >= 5 and s.encode() in record.data]
            assert not found, f"{record.topic} ({record.msgtype}) carries {found[0]!r}"
    assert recorded > 100, recorded
    # a state gone stale on a starved machine may cost an attempt; a switch of policy servers
    # never does (it once aborted the first trial as "policy lost": test_policy_status.py)
    assert not [r for _, r in person.system_reruns if "policy" in r], person.system_reruns
    leaked = [s for s in screens for name in (*names, "zebra", "yak", "oracle") if name in s]
    assert not leaked, f"a policy's name on the console:\n{leaked[0]}"
    assert any("(blind: hidden until the campaign is done)" in s for s in screens)
    with ResultsStore(db) as store:
        record = store.campaign("lab")
        # the names are in the store, sealed
        assert {r.policy: r.outcome for r in store.rows("lab")} == {
            "zebra_policy": Outcome.SUCCESS, "yak_policy": Outcome.SUCCESS}
        letter_b = record.blind_labels["yak_policy"]
    # yak_policy's trial went to its own server (its episode's requests: warm-ups are not recorded)
    assert requests_b.exists() and len(requests_b.read_text().splitlines()) >= 2
    manager = [line for line in out.splitlines() if "progression_manager" in line]
    assert manager and not any(name in line for line in manager for name in names)
    assert f"{letter_b}/k+0/000" in seen_trials


def test_a_blind_ab_stops_early_once_decided_and_no_screen_names_a_policy(tmp_path, ros_context, ros_isolation):
    """A blind A/B registered to stop once decided (the anytime-valid paired test, here at alpha
    0.2), run by a person through the console: the person labels by what they see, and sees
    letters only (here every A trial a success, every B trial a failure: a clear difference).
    The campaign stops well before its planned trials, with no policy name on any screen; only the
    unblinding afterwards says which letter is which."""
    import re
    import threading

    db = tmp_path / "r.sqlite"
    names = ("droid_twin_oracle", "oracle_b")
    port, port_a, port_b = servers.free_port(), servers.free_port(), servers.free_port()
    server_a = servers.start_server("droid_twin_oracle", port_a)  # away from the cell: graph.py refuses its own
    server_b = servers.start_server("droid_twin_oracle", port_b)
    campaign = tmp_path / "c.yaml"
    planned = 2 * 12
    campaign.write_text(yaml.safe_dump({
        "name": "lab_session", "axis": "stack", "world": "fr3", "policies": list(names), "levels": [0],
        "trials_per_level": planned // 2, "seed": 5, "order": "sequential", "purpose": "certify", "max_steps": 30,
        "blind": True, "endpoints": {"droid_twin_oracle": f"ws://127.0.0.1:{port_a}", "oracle_b": f"ws://127.0.0.1:{port_b}"},
        "analysis": {"compare": list(names), "alpha": 0.2, "pairing": "paired", "stop_when_decided": True}}))
    proc = launch_cell(tmp_path, db, campaign, "early", port, "start_policy_server:=false")
    term = Terminal(f"indgen-early-{os.getpid()}", f"{sys.executable} -m indgen_core.cli console --operator ada",
                    console_environment(ros_isolation), proc)
    screens: set[str] = set()
    watching = threading.Event()

    def watch_screens():
        while not watching.is_set():
            screens.add(term.screen())
            watching.wait(0.2)

    node = rclpy.create_node("hands_early", context=ros_context)
    person = AtTheCell(term, db, "early", scene_builder(node))
    sampler = threading.Thread(target=watch_screens, daemon=True)
    sampler.start()
    labelled = []
    try:
        while proc.poll() is None and len(labelled) < planned:
            if not wait_until(lambda: proc.poll() is not None or "BUILD THE SCENE" in term.screen(), 120):
                term.wait_for("BUILD THE SCENE", timeout=0.1)  # fails with the screen and the log
            if proc.poll() is not None:
                break
            trial = re.search(r"BUILD THE SCENE\s+(\S+)", term.screen()).group(1)
            person.scene_then(trial, "LABEL THE EPISODE", trial)
            term.keys("y" if trial.startswith("A/") else "n")  # what the person sees: a letter
            labelled.append(trial)
            wait_until(lambda t=trial: f"LABEL THE EPISODE  {t}" not in term.screen(), 30)
        out = graphs.finish(proc, timeout=120)
        screens.add(term.screen())
    finally:
        watching.set()
        sampler.join(timeout=5)
        term.close()
        node.destroy_node()
        servers.stop(server_a)
        servers.stop(server_b)
        if proc.poll() is None:
            proc.kill()
    assert "campaign early done" in out, out[-3000:]
    assert len(set(labelled)) < planned, "it stopped once decided, before its planned trials"
    leaked = [s for s in screens for name in (*names, "zebra", "yak", "oracle") if name in s]
    assert not leaked, f"a policy's name on the console:\n{leaked[0]}"
    with ResultsStore(db) as store:
        skipped = [r for r in store.rows("early") if r.status == "skipped"]
        assert skipped
    unblind = subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "unblind", "early", "--by", "grace",
                              "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert unblind.returncode == 0 and all(name in unblind.stdout for name in names), unblind.stderr
    print(f"decided after {len(set(labelled))} of {planned} trials")  # pytest -s
