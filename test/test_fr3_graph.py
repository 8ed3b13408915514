"""The real-robot graph, end to end, against the MuJoCo stand-in for the FR3 hardware: the
progression manager, the FR3 runner on the wall clock, the stand-in behind franka_ros2's and
ros2_controllers' interfaces with ZED-sized camera frames, the policy node, a policy server,
the scorer and a scripted person answering every prompt through the console's interfaces."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest
import yaml

from helpers import graphs, servers
from helpers.ros_helpers import spin_until
from helpers.scripted_operator import ScriptedOperator
from indgen_core import paths
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.realtime]
rclpy = pytest.importorskip("rclpy")


def campaign(tmp_path, name, policy, purpose="certify", levels=(0, 1), trials=2, max_steps=300):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "axis": "stack", "world": "fr3", "policies": [policy],
                                    "levels": list(levels), "trials_per_level": trials, "seed": 3,
                                    "order": "sequential", "purpose": purpose, "max_steps": max_steps}))
    return path


def launch_mock(tmp_path, *assignments, port=None, camera_hz=5, server_port=None):
    port = port or servers.free_port()
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "artifacts"))
    env.pop("MENAGERIE_ROOT", None)  # the built-in FR3 renders fast enough for the wall clock here
    # the bag without the ZED-sized frames (3.7 MB each, zstd on two cores): these tests read
    # its labels and timing; test_bags.py records cameras
    return graphs.launch("stack_axis", "sim:=false", "robot:=mock", "builtin_fr3:=true", f"camera_hz:={camera_hz}",
                         f"port:={port}", f"server_uri:=ws://127.0.0.1:{server_port or port}",
                         f"db:={tmp_path / 'r.sqlite'}",
                         f"report_dir:={tmp_path / 'reports'}", "bag_exclude:=/zed", *assignments, env=env)


class StandInWatch:
    """The stand-in's status (latched JSON) and the joint states it publishes."""

    def __init__(self, context):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        from indgen_core.ros.base import LATCHED, LOCKSTEP

        self.node = rclpy.create_node("stand_in_watch", context=context)
        self.status: dict = {}
        self.speeds: list[tuple[float, float]] = []  # (monotonic, max |dq|)
        self.node.create_subscription(String, "/indgen/sim/stand_in/status", self._status, LATCHED)
        self.node.create_subscription(JointState, "/joint_states", self._joints, LOCKSTEP)

    def _status(self, msg):
        self.status = json.loads(msg.data)

    def _joints(self, msg):
        self.speeds.append((time.monotonic(), float(np.max(np.abs(msg.velocity[:7])))))

    def spin(self, seconds):
        spin_until(self.node, lambda: False, seconds)

    def until(self, predicate, timeout: float) -> bool:
        """Spin until predicate() is true (what it reads comes in through this node)."""
        return spin_until(self.node, predicate, timeout)

    def reflexed(self) -> str | None:
        """For graphs.finish, in tests where nothing may touch anything: a reflex there is a
        failure of the runner, and the test stops at once with it."""
        self.spin(1.0)
        if self.status.get("reflexes"):
            return f"the stand-in reflexed ({self.status.get('last_error')}: {self.status.get('last_error_detail')})"
        return None


@pytest.mark.timeout(900)  # the graph's own output, not pytest's, when it does not finish in 600 s
def test_a_campaign_through_the_real_graph_with_the_oracle_and_a_scripted_operator(tmp_path, ros_context):
    """Four wall-clock episodes. The oracle needs no camera: the stand-in's frames go out at
    1 Hz and the policy node waits on none, so that two cores keep the stand-in's hardware
    thread on time (ZED-sized frames are the subject of the pi0.5 stand-in's test below)."""
    labels = ["success", ("failure", 40.0, "the block slipped"), "success", "invalid"]
    operator = ScriptedOperator(ros_context, labels=labels)
    watch = StandInWatch(ros_context)
    try:
        out = graphs.finish(launch_mock(tmp_path, f"campaign:={campaign(tmp_path, 'oracle', 'droid_twin_oracle')}",
                                        "campaign_id:=oracle", camera_hz=1), timeout=600, watch=watch.reflexed)
        watch.spin(1.0)
        assert watch.status.get("reflexes") == 0, watch.status
        with ResultsStore(tmp_path / "r.sqlite") as store:
            rows = store.rows("oracle")
            assert [(r.level, r.outcome, r.source) for r in rows] == [
                (0, Outcome.SUCCESS, "operator"), (0, Outcome.FAILURE, "operator"), (1, Outcome.SUCCESS, "operator"),
                (1, Outcome.INVALID, "operator")]
            assert rows[1].partial_score == pytest.approx(0.4) and rows[0].partial_score == 1.0
            details = {t: d for _, _, _, d in store.result_details("oracle") for t in [d.get("note", "")]}
            assert "the block slipped" in details
            assert all(d["operator"] == "ada" and d["judged"] is False and d["timing"]["ticks"] > 0
                       for _, _, _, d in store.result_details("oracle"))
            assert {c["level"] for c in store.certificates(world="fr3", axis="stack")} == {0, 1}
        assert (tmp_path / "reports" / "oracle" / "report.html").is_file()
        assert [k for k, _, ok, _ in operator.answers if ok].count("label") == 4
        assert "the world is physical" in out
        # the real robot's bag: no final state to judge again, the operator's labels listed instead;
        # its wall-clock ticks timed
        [bag] = [p for p in (tmp_path / "artifacts" / "bags").iterdir() if p.is_dir()]
        cli = [sys.executable, "-m", "indgen_core.cli", "bag"]
        rescored = subprocess.run([*cli, "rescore", str(bag), "--db", str(tmp_path / "r.sqlite")],
                                  capture_output=True, text=True, timeout=300)
        assert rescored.returncode == 0, rescored.stdout + rescored.stderr
        assert "4 labelled by an operator" in rescored.stdout and "failure by ada" in rescored.stdout
        latency = subprocess.run([*cli, "latency", str(bag), "--json", str(tmp_path / "lat.json")],
                                 capture_output=True, text=True, timeout=300)
        assert latency.returncode == 0, latency.stderr
        overall = json.loads((tmp_path / "lat.json").read_text())["overall"]
        assert overall["trials"] == 4 and 50 < overall["period_ms_p50"] < 85  # 15 Hz on the wall clock
    finally:
        operator.close()
        watch.node.destroy_node()


class PushDown:
    """pi05_droid's reply shape (15 x 8 chunks) driving the hand down into the table at 0.3 of
    DROID's full joint velocity; the first request takes 3 s, as openpi's server compiles its
    model on its first request and has no warm-up (scripts/serve_policy.py)."""

    def __init__(self):
        self.requests = 0

    def infer(self, obs):
        self.requests += 1
        if self.requests == 1:
            time.sleep(3.0)
        chunk = np.zeros((15, 8))
        chunk[:, 1] = chunk[:, 3] = 0.3
        return {"actions": chunk}


@pytest.mark.timeout(900)
def test_a_campaign_counts_a_reflex_reruns_a_driver_fault_and_warms_the_policy_up_with_recovery(tmp_path,
                                                                                                ros_context):
    """A campaign on separate arm and gripper joint-state topics (franka's broadcaster, the
    Robotiq's own), against an openpi-style server whose first request takes 3 s, with a
    policy that drives the hand into the table of a robot set to 10 Nm collision thresholds
    (under DROID's 40 Nm the runner's torque bound keeps such a push from ever reflexing):
    - the warm-up absorbs the slow first request: no trial is aborted for it;
    - trial 1 ends in a reflex, which franka's own report names (rule 1: the stand-in publishes
      its robot state): the person acknowledges the stop in the console and labels it
      (failure); it is stored and counted as a robot stop, not re-run;
    - trial 2's driver dies mid-episode: that attempt is aborted (never scored) and the trial
      runs again once the driver is back; the re-run ends in a reflex, labelled too;
    - before each trial the runner recovers the robot (franka's procedure; torque control once
      acknowledged) and resets it."""
    from std_msgs.msg import String

    from helpers.openpi_server import OpenpiStyleServer
    from indgen_core.report.analysis import summarize
    from indgen_core.ros.base import LOCKSTEP
    from indgen_msgs.msg import ControlTick

    operator = ScriptedOperator(ros_context, labels=lambda prompt: "failure")
    watch = StandInWatch(ros_context)
    ticks: list = []
    watch.node.create_subscription(ControlTick, "/indgen/control_tick", lambda t: ticks.append(t.trial_id), LOCKSTEP)
    inject = watch.node.create_publisher(String, "/indgen/sim/stand_in/inject", LOCKSTEP)
    policy = PushDown()
    with OpenpiStyleServer(policy, metadata={"policy": "pi05_droid"}) as fake:
        path = campaign(tmp_path, "push", "pi05_fake", "evaluate", (0,), 2, 200)
        proc = launch_mock(tmp_path, f"campaign:={path}", "campaign_id:=push", "start_policy_server:=false",
                           "privileged:=false", "allow_uncertified:=true", "override_reason:=a test of the stop rule",
                           server_port=fake.port, camera_hz=1)
        try:
            listening = lambda: bool(watch.status.get("contact_thresholds")) and inject.get_subscription_count() > 0  # noqa: E731
            up = watch.until(listening, 120)
            inject.publish(String(data=json.dumps({"contact_thresholds": [10.0] * 7})))
            if not (up and watch.until(lambda: watch.status.get("contact_thresholds") == [10.0] * 7, 30)):
                graphs.fail(proc, f"the stand-in never took the 10 Nm thresholds ({watch.status})")
            trials = lambda: list(dict.fromkeys(ticks))  # noqa: E731 (the trials seen ticking, in order)
            watch.until(lambda: len(trials()) >= 2 and ticks.count(trials()[1]) > 10, 300)
            if len(trials()) < 2:
                graphs.fail(proc, f"the second trial never got going (ticks per trial {Counter(ticks)})")
            inject.publish(String(data=json.dumps({"driver": "crash"})))
            # a person restarts franka's bring-up 6 s later (the trial is retried meanwhile): the
            # runner first waits up to 1 s for the arm's state to come back by itself (stop rule 4),
            # then finds the driver gone within its recovery's 3 s wait for the services
            watch.spin(6.0)
            inject.publish(String(data=json.dumps({"driver": "restart"})))
            out = graphs.finish(proc, timeout=400)
        finally:
            operator.close()
            if proc.poll() is None:
                proc.kill()
    watch.spin(1.0)
    watch.node.destroy_node()
    with ResultsStore(tmp_path / "r.sqlite") as store:
        rows = store.rows("push")
        attempts = store.attempts("push")
        stops = summarize(store, "push").robot_stops
    assert [(r.outcome, r.source) for r in rows] == [(Outcome.FAILURE, "operator")] * 2, out[-4000:]
    # the 3 s first request aborted nothing (the warm-up absorbed it): no attempt of the first
    # trial was aborted, unless because the arm's state went stale on a starved machine (seen in
    # full-suite runs, in a reset or with the arm held still: stop rule 3; the abort-and-rerun
    # doing its job, and not the policy's doing)
    first = [a for a in attempts if a.trial_id == rows[0].trial_id and a.outcome is Outcome.ABORTED]
    stale = re.compile(r"the arm's (state went stale|joint states stopped \([\d.]+ s old\) while it was held still)")
    assert all(stale.match(a.reason) for a in first), attempts
    assert rows[1].aborted_attempts >= 1
    aborted = [a for a in attempts if a.trial_id == rows[1].trial_id and a.outcome is Outcome.ABORTED]
    assert len(aborted) == rows[1].aborted_attempts, attempts
    # the crash's own attempt says so; in one full-suite run a prepare refused for a stale arm
    # state came first (the attempts and the graph's log print when this fails)
    assert any("driver" in a.reason for a in aborted), (attempts, out[-4000:])
    assert stops == {("pi05_fake", 0): {"stops": 2, "failure": 2}}, (attempts, watch.status, out[-3000:])
    assert "Robot stops per level" in (tmp_path / "reports" / "push" / "report.md").read_text()
    assert watch.status.get("reflexes") == 2 and policy.requests >= 2
    assert len(operator.acknowledged) >= 2, operator.acknowledged  # each reflex: torque back only once acknowledged


def test_the_pi05_stand_in_gets_exactly_pi05_droids_request_from_zed_sized_bgra8_frames(tmp_path, ros_context):
    operator = ScriptedOperator(ros_context, labels=lambda prompt: "failure")
    watch = StandInWatch(ros_context)
    try:
        requests = tmp_path / "requests.jsonl"
        pi = campaign(tmp_path, "pi", "droid_pi05_standin", "evaluate", (0,), 1, 40)
        # the request path, not the deadline (test_fr3_runner tests that): turning two ZED-sized
        # frames into a pi0.5 request takes the CPU DROID's 0.3 s budget assumes, which a 2-core
        # machine shared with the rest of the suite does not always have; nor does it always get a
        # 3.7 MB frame through DDS within the 0.25 s age limit (0.256 s seen once: no command sent,
        # the check doing its job), so both limits are the test's own here
        robots = tmp_path / "robots"
        shutil.copytree(paths.config_dir() / "robots", robots)
        config = robots / "fr3_robotiq_zed.yaml"
        text = config.read_text().replace("command_timeout_s: 0.3", "command_timeout_s: 1.5")
        config.write_text(text.replace("image_max_age_s: 0.25", "image_max_age_s: 0.6"))
        graphs.finish(launch_mock(tmp_path, f"campaign:={pi}", "campaign_id:=pi", "policy:=droid_pi05_standin",
                                  f"robot_config:={config}",
                                  "privileged:=false", "cameras:=exterior_1,wrist", f"record_requests:={requests}",
                                  "allow_uncertified:=true",
                                  "override_reason:=test of the request path, not of success", camera_hz=10),
                      timeout=300, watch=watch.reflexed)
        lines = [json.loads(line) for line in requests.read_text().splitlines()]
        assert len(lines) >= 40 // 8
        for line in lines:
            keys = line["keys"]
            assert not [k for k in keys if k.startswith("privileged/")]
            assert keys["observation/exterior_image_1_left"] == ["|u1", [224, 224, 3]]
            assert keys["observation/wrist_image_left"] == ["|u1", [224, 224, 3]]
            assert keys["observation/joint_position"][1] == [7] and keys["prompt"] == "str"
        with ResultsStore(tmp_path / "r.sqlite") as store:
            assert [r.source for r in store.rows("pi")] == ["operator"]
        watch.spin(1.0)
        assert watch.status.get("reflexes") == 0, watch.status
    finally:
        operator.close()
        watch.node.destroy_node()


def test_killing_the_policy_server_mid_episode_holds_the_robot_and_the_trial_runs_again(tmp_path, ros_context):
    import signal

    from indgen_robot.ros.policy_node import CONNECTION_POLL_S

    port = servers.free_port()
    server = servers.start_server("droid_twin_oracle", port)
    operator = ScriptedOperator(ros_context, labels=lambda prompt: "success")
    watch = StandInWatch(ros_context)
    proc = launch_mock(tmp_path, f"campaign:={campaign(tmp_path, 'k', 'droid_twin_oracle', levels=(0,), trials=1)}",
                       "campaign_id:=k", "start_policy_server:=false", port=port)
    try:
        # the episode is under way once the runner streams segments
        watch.until(lambda: watch.status.get("trajectories", 0) > 60, 180)
        if watch.status.get("trajectories", 0) <= 60:
            graphs.fail(proc, f"the episode never got going (stand-in status {watch.status})")
        moving = [s for t, s in watch.speeds[-10:]]
        killed = time.monotonic()
        server.send_signal(signal.SIGKILL)
        server.wait()

        def holds_after() -> list[float]:
            return [t for t in watch.status.get("hold_times", []) if t > killed]

        def rest_after() -> list[float]:
            return [t for t, s in watch.speeds if t > killed and s < 0.02]

        watch.until(lambda: holds_after() and rest_after(), 2.5)
        holds = holds_after()
        assert holds, watch.status
        # the policy node notices the closed socket within its poll, the runner's tick wait wakes
        # on that status at once, a tick that had not begun yet begins within a period; plus
        # three DDS hops between processes on a loaded machine
        bound = CONNECTION_POLL_S + 1 / 15 + 0.15
        assert holds[0] - killed <= bound, f"first hold {holds[0] - killed:.3f} s after the kill (bound {bound:.3f})"
        rest = rest_after()
        assert rest and rest[0] - killed < 1.5, (moving, watch.speeds[-20:])
        print(f"first hold {holds[0] - killed:.3f} s after the kill; arm at rest {rest[0] - killed:.3f} s after it")
        server = servers.start_server("droid_twin_oracle", port)  # back: the trial runs again
        out = graphs.finish(proc, timeout=300, watch=watch.reflexed)
    finally:
        servers.stop(server)
        operator.close()
        watch.node.destroy_node()
        if proc.poll() is None:
            proc.kill()
    with ResultsStore(tmp_path / "r.sqlite") as store:
        rows = store.rows("k")
        assert rows[0].status == "done" and rows[0].aborted_attempts >= 1
        reasons = [r["message"] for r in store.events("k")]
    assert "policy lost" in out and reasons
    assert watch.status.get("reflexes") == 0


def test_frankas_driver_killed_and_restarted_mid_episode_aborts_the_trial_and_the_graph_stays_up(tmp_path,
                                                                                                ros_context):
    """franka's controller manager exits mid-episode (here its stand-in, SIGKILLed) and comes back
    (the launcher restarts it, as fr3_cell.launch.py restarts franka's own launch): IndGen's graph
    stays up, the runner aborts the attempt in flight as a driver fault (never scored), and the
    trial runs again once the driver is back; the campaign finishes."""
    import signal

    import psutil

    port = servers.free_port()
    operator = ScriptedOperator(ros_context, labels=lambda prompt: "success")
    watch = StandInWatch(ros_context)
    proc = launch_mock(tmp_path, f"campaign:={campaign(tmp_path, 'd', 'droid_twin_oracle', levels=(0,), trials=1)}",
                       "campaign_id:=d", port=port)
    try:
        watch.until(lambda: watch.status.get("trajectories", 0) > 30, 180)
        if watch.status.get("trajectories", 0) <= 30:
            graphs.fail(proc, f"the episode never got going (stand-in status {watch.status})")
        stand_in = [p for p in psutil.Process(proc.pid).children(recursive=True)
                    if "__node:=fr3_stand_in" in p.cmdline()]
        assert len(stand_in) == 1
        stand_in[0].send_signal(signal.SIGKILL)
        out = graphs.finish(proc, timeout=400)
    finally:
        operator.close()
        watch.node.destroy_node()
        if proc.poll() is None:
            proc.kill()
    with ResultsStore(tmp_path / "r.sqlite") as store:
        rows = store.rows("d")
        attempts = store.attempts("d")
    assert rows[0].status == "done" and rows[0].aborted_attempts >= 1, (attempts, out[-3000:])
    aborted = [a.reason for a in attempts if a.outcome is Outcome.ABORTED]
    system = re.compile(r"driver|joint states stopped|state went stale|came back without a recovery|not ready")
    assert aborted and all(system.search(r) for r in aborted), aborted
    print(f"the driver killed mid-episode: {aborted[0]!r}; the trial ran again and the campaign finished")
