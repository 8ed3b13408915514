"""The real-robot loop on the wall clock, measured against the MuJoCo stand-in for the FR3.

    .venv/bin/python bench/fr3_loop_bench.py [--seconds 120] [--cameras exterior_1,wrist]
        [--camera-size 640x360] [--bag-exclude /zed] [--broadcaster-hz 1000] [--robot-state-hz 1000]

One episode of `--seconds` through the real graph (`indgen launch stack_axis sim:=false
robot:=mock`): the FR3 runner at 15 Hz against the stand-in that behaves like the real stack
(franka's broadcaster and trajectory controller with its reflexes, joint_state_publisher's
merge, the Robotiq on its own topics, ZED-sized 1280 x 720 bgra8 frames at 15 Hz published
while subscribed), the policy node, `indgen serve-policy droid_pi05_standin` (pi0.5-DROID's
request and chunk, no model) and a scripted operator. Prints, from the runner's own timing of
that episode: tick period p50/p99 and jitter against the nominal 66.7 ms, missed ticks (target
0), the latency from a tick to its trajectory segment, the policy's round trip (tick to
command) over all ticks and over the ticks that asked the server (every 8th), the arm state's
age at each tick's check against the fault limit; and from the stand-in and the store:
reflexes (target 0) and false fault detections (aborted attempts or robot stops, target 0:
nothing was injected). The stand-in publishes franka's full robot state (FrankaRobotState's
layout) at --robot-state-hz (franka: 1 kHz), which the runner reads newest-first.

Before the measured episode, an e-stop probe: once the first attempt ticks, the soft e-stop is
pressed from a pedal-style publisher (reliable, transient local, after the runner's reader
matched) and the time to the first hold the stand-in's controller receives is printed against
one tick; the e-stop is released and the trial runs again (that aborted attempt is the
probe's, not a false fault). At the end, the CPU seconds of each of the graph's processes.
Runs on loopback in its own ROS domain.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "94")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))  # the test helpers, `from helpers import ...`


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--cameras", default="exterior_1,wrist")
    parser.add_argument("--camera-hz", type=float, default=15.0)
    # franka_ros2's joint_state_broadcaster publishes at the controller manager's 1 kHz; the
    # stand-in's default (100 Hz) keeps the suite's graph tests cheap
    parser.add_argument("--broadcaster-hz", type=float, default=100.0, help="the stand-in arm's joint states on "
                        "franka/joint_states per second (a real FR3: 1000)")
    # two ZED-sized (1280 x 720) streams through the whole graph overload two cores: frames then
    # arrive 0.3-0.6 s after their stamps and the policy node (rightly) sends no command from them
    parser.add_argument("--camera-size", default="640x360", help="the stand-in's frames, WIDTHxHEIGHT (ZED HD720: "
                        "1280x720)")
    parser.add_argument("--bag-exclude", default="/zed", help="topic prefixes the recorder leaves out ('': record "
                        "the frames too)")
    parser.add_argument("--robot-state-hz", type=float, default=1000.0, help="the stand-in's full robot state "
                        "(FrankaRobotState's layout) per second (franka: 1000)")
    parser.add_argument("--log", type=Path, help="keep the graph's log here")
    args = parser.parse_args()
    import psutil
    import rclpy

    from helpers.scripted_operator import ScriptedOperator
    from helpers.servers import free_port
    from indgen_core.cell.robot_config import load_robot_config
    from indgen_core.records import Outcome
    from indgen_core.store import ResultsStore

    steps = int(args.seconds * 15)
    width, height = (int(x) for x in args.camera_size.split("x"))
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        campaign = tmp / "bench.yaml"
        campaign.write_text(yaml.safe_dump({"name": "loop", "axis": "stack", "world": "fr3",
                                            "policies": ["droid_pi05_standin"], "levels": [0],
                                            "trials_per_level": 1, "max_steps": steps}))
        port = free_port()
        env = dict(os.environ)
        env.pop("MENAGERIE_ROOT", None)
        log = (tmp / "launch.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "indgen_core.cli", "launch", "stack_axis", "sim:=false", "robot:=mock",
             "builtin_fr3:=true", f"camera_hz:={args.camera_hz}", f"broadcaster_hz:={args.broadcaster_hz}",
             f"camera_width:={width}",
             f"camera_height:={height}", f"bag_exclude:={args.bag_exclude}", f"port:={port}",
             f"server_uri:=ws://127.0.0.1:{port}", f"db:={tmp / 'r.sqlite'}", f"report_dir:={tmp / 'rep'}",
             f"robot_state_hz:={args.robot_state_hz}",
             f"campaign:={campaign}", "campaign_id:=loop", "policy:=droid_pi05_standin", "privileged:=false",
             f"cameras:={args.cameras}", "allow_uncertified:=true", "override_reason:=benchmark",
             "episode_timeout_s:=" + str(args.seconds * 3)],
            stdout=log, stderr=subprocess.STDOUT, env=env)
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
        operator = ScriptedOperator(context, labels=lambda prompt: "failure", end_when_placed=False)
        t0 = time.monotonic()
        cpu: dict[str, float] = {}
        try:
            estop_ms = estop_probe(context)
            while proc.poll() is None and time.monotonic() - t0 < args.seconds * 3 + 120:
                cpu.update(graph_cpu(psutil.Process(proc.pid)))
                time.sleep(2.0)
            proc.wait(timeout=10)
        finally:
            operator.close()
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
            log.close()
            if args.log:
                args.log.write_text((tmp / "launch.log").read_text())
        if proc.returncode != 0:
            print((tmp / "launch.log").read_text()[-3000:])
            return 1
        log_text = (tmp / "launch.log").read_text()
        with ResultsStore(tmp / "r.sqlite") as store:
            details = store.result_details("loop")[0][3]
            attempts = store.attempts("loop")
    reflexes = log_text.count("REFLEX or FAULT")
    false_faults = [a.reason for a in attempts if a.outcome is Outcome.ABORTED and a.reason != "operator e-stop"]
    if details.get("robot_stop"):
        false_faults.append(details["end"])
    t = details["timing"]
    nominal = 1000 / 15
    trips = np.array(t["round_trips_ms"])
    asked = trips[::8]
    print(f"{t['ticks']} ticks ({t['ticks'] / 15:.0f} s at 15 Hz; run {time.monotonic() - t0:.0f} s with set-up), "
          f"cameras {args.cameras or 'none'} at {args.camera_hz:g} Hz, {width} x {height} bgra8; arm joint states at "
          f"{args.broadcaster_hz:g} Hz; the bag leaves out {args.bag_exclude or 'nothing'}")
    period = t["tick_period_ms"]
    print(f"tick period: p50 {period['p50']:.2f} ms (x{period['p50'] / nominal:.3f} of nominal {nominal:.1f}), "
          f"p99 {period['p99']:.2f} ms (x{period['p99'] / nominal:.2f}), max {period['max']:.1f} ms; "
          f"jitter (std) {t['jitter_ms']:.2f} ms")
    print(f"missed ticks (no usable command): {t['missed_ticks']} (target 0)"
          + "".join(f"\n  {n} x {why}" for why, n in t.get("miss_reasons", {}).items()))
    print(f"late replies (held, then executed): {t.get('late_replies', 0)}")
    print(f"stand-in reflexes: {reflexes} (target 0); false fault detections: {len(false_faults)} (target 0)"
          + "".join(f"\n  {reason}" for reason in false_faults))
    age = t["arm_state_age_ms"]
    print(f"arm state age at the tick checks: p50 {age['p50']:.1f} ms, p99 {age['p99']:.1f} ms, max {age['max']:.1f} "
          f"ms (a fault at {1000 * load_robot_config('fr3_robotiq_zed').control.arm_state_max_age_s:.0f} ms)")
    print(f"tick -> trajectory segment: p50 {t['command_latency_ms']['p50']:.2f} ms, "
          f"p99 {t['command_latency_ms']['p99']:.2f} ms")
    print(f"policy round trip (tick -> command), all ticks: p50 {np.percentile(trips, 50):.2f} ms, "
          f"p99 {np.percentile(trips, 99):.2f} ms; ticks that asked the server (every 8th): "
          f"p50 {np.percentile(asked, 50):.2f} ms, p99 {np.percentile(asked, 99):.2f} ms")
    print(f"e-stop (pedal publisher) to the controller's first hold: {estop_ms:.1f} ms (one tick: {nominal:.1f} ms)")
    print("CPU s per process over the run: " + ", ".join(f"{name} {s:.0f}" for name, s in sorted(cpu.items())))
    print(json.dumps({k: v for k, v in t.items() if k != "round_trips_ms"}))
    return 0


def graph_cpu(launcher) -> dict[str, float]:
    """CPU seconds (user + system) of each process the launcher started, by node name."""
    out = {}
    for child in launcher.children(recursive=True):
        try:
            argv = child.cmdline()
            times = child.cpu_times()
        except Exception:  # a process that just ended
            continue
        name = next((a.split(":=", 1)[1] for a in argv if a.startswith("__node:=")), None)
        name = name or ("policy_server" if "serve-policy" in argv else None)
        if name:
            out[name] = times.user + times.system
    return out


def estop_probe(context) -> float:
    """Press the soft e-stop as a pedal node does once the first attempt ticks; ms from the
    publish to the first hold the stand-in's controller received; release it."""
    import rclpy
    from rclpy.duration import Duration
    from std_msgs.msg import Bool, String

    from indgen_core.ros.base import LATCHED, LOCKSTEP
    from indgen_core.waiting import wait_until
    from indgen_msgs.msg import ControlTick
    from indgen_robot.ros.estop_client import PEDAL

    node = rclpy.create_node("estop_probe", context=context)
    status, ticks = {}, []
    node.create_subscription(String, "/indgen/sim/stand_in/status", lambda m: status.update(json.loads(m.data)),
                             LATCHED)
    node.create_subscription(ControlTick, "/indgen/control_tick", lambda m: ticks.append(m.step), LOCKSTEP)
    pedal = node.create_publisher(Bool, "/indgen/estop", PEDAL)
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spin = lambda: executor.spin_once(0.02) or False  # noqa: E731
    try:
        wait_until(lambda: spin() or (len(ticks) > 15 and pedal.get_subscription_count() > 0), 300, poll=0)
        pressed = time.monotonic()
        pedal.publish(Bool(data=True))
        pedal.wait_for_all_acked(Duration(seconds=5))
        wait_until(lambda: spin() or any(t > pressed for t in status.get("hold_times", [])), 10, poll=0)
        held = min((t for t in status.get("hold_times", []) if t > pressed), default=float("nan"))
        time.sleep(1.0)
        pedal.publish(Bool(data=False))
        pedal.wait_for_all_acked(Duration(seconds=5))
        return (held - pressed) * 1000
    finally:
        executor.shutdown()
        node.destroy_node()


if __name__ == "__main__":
    sys.exit(main())
