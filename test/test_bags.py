"""Every campaign recorded: a twin campaign through the whole graph, with a camera, written by
the recorder node as an MCAP rosbag2 bag, then read back by two independent readers (rosbags,
and Foxglove's mcap-ros2), re-judged, timed, turned into videos and replayed against a
policy server by `indgen bag`; bad bags get one sentence and a non-zero exit."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import graphs, servers
from helpers.no_ros import indgen_without_ros
from indgen_core import topics
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore

# realtime: the recorded campaign's bag is judged tick by tick (every command recorded), which a
# recorder starved of CPU by parallel tests does not always deliver
pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.realtime]


def indgen(*args: str, env=None, expect: int | None = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)
    if expect is not None:
        assert proc.returncode == expect, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A twin stack campaign (oracle, levels 0 and 1, two trials each, the exterior camera at
    64 px) through the graph with the recorder on."""
    import os

    tmp = tmp_path_factory.mktemp("bags")
    campaign = tmp / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rec", "axis": "stack", "world": "droid_twin",
                                        "policies": ["droid_twin_oracle"], "levels": [0, 1], "trials_per_level": 2,
                                        "seed": 3, "purpose": "certify"}))
    port = servers.free_port()
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp / "art"))
    proc = graphs.launch("stack_axis", "sim:=true", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
                         f"db:={tmp / 'r.sqlite'}", f"report_dir:={tmp / 'rep'}", f"campaign:={campaign}",
                         "campaign_id:=rec", "cameras:=exterior_1", "image_size:=64", "builtin_fr3:=true",
                         "level_images:=false", f"bag_dir:={tmp / 'bags'}", env=env)
    out = graphs.finish(proc, timeout=400)
    assert "campaign rec done: 4 trials run" in out
    bags = sorted(p for p in (tmp / "bags").iterdir() if p.is_dir())
    assert len(bags) == 1, bags
    return {"tmp": tmp, "bag": bags[0], "db": tmp / "r.sqlite", "env": env}


def test_the_bag_is_a_rosbag2_mcap_bag_that_other_readers_open(recorded):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    bag = recorded["bag"]
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == "mcap"
    # MCAP's own chunk compression: rosbag2 leaves its file/message compression fields empty then
    assert meta["compression_format"] == "" and meta["compression_mode"] == ""
    # rosbags (its own MCAP parser; IndGen's types from the definitions stored in the bag):
    # every topic the graph uses, and every message of every topic deserialises
    with AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        counts = collections.Counter()
        for c in reader.connections:
            counts[c.topic] += c.msgcount
        types = {c.topic: c.msgtype for c in reader.connections}
        by_rosbags = collections.Counter()
        first_ticks = set()
        for connection, _, raw in reader.messages():
            msg = reader.deserialize(raw, connection.msgtype)
            by_rosbags[connection.topic] += 1
            if connection.topic == topics.CONTROL_TICK and msg.step == 0:
                first_ticks.add(msg.trial_id)
    assert by_rosbags == counts
    # the progression manager waited for a steady recorder: every trial from its first tick
    assert len(first_ticks) == 4, first_ticks
    for topic in (topics.TASK_SETUP, topics.EPISODE_RESULT, topics.LEVEL_SCORE, topics.POLICY_STATUS,
                  topics.CONTROL_TICK, topics.JOINT_STATES, topics.ARM_VELOCITY_COMMAND, topics.CLOCK,
                  topics.FINAL_STATE, topics.POLICY_EXCHANGE, topics.camera_topic("exterior_1")):
        assert counts.get(topic, 0) > 0, (topic, counts)
    assert types[topics.FINAL_STATE] == "indgen_msgs/msg/WorldFinalState"
    assert counts[topics.FINAL_STATE] == 4
    # Foxglove's reader: the schemas in the file decode IndGen's own types; every channel has
    # rosbag2 Jazzy's type hash and the QoS it was offered
    [mcap_file] = list(bag.glob("*.mcap"))
    finals = []
    with mcap_file.open("rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        assert {c.compression for c in reader.get_summary().chunk_indexes} == {"zstd"}
        for channel in reader.get_summary().channels.values():
            assert channel.metadata["topic_type_hash"].startswith("RIHS01_"), channel.topic
            assert "offered_qos_profiles" in channel.metadata
        by_mcap = collections.Counter()
        for _, channel, _, msg in reader.iter_decoded_messages():  # every message of every channel
            by_mcap[channel.topic] += 1
            if channel.topic == topics.FINAL_STATE:
                finals.append(msg)
    assert by_mcap == counts  # both readers decode all of it, message for message
    assert {t for t in counts if types[t].startswith("indgen_msgs/")} >= {topics.TASK_SETUP, topics.EPISODE_RESULT,
                                                                           topics.CONTROL_TICK, topics.FINAL_STATE}
    assert len(finals) == 4 and len({m.trial_id for m in finals}) == 4
    assert all(json.loads(m.state_json)["mj_state"] for m in finals)
    # each trial's bag and time range are artifacts of the trial
    with ResultsStore(recorded["db"]) as store:
        arts = store.artifacts("rec", kind="bag")
        trials = {r.trial_id for r in store.rows("rec")}
    assert {a["trial_id"] for a in arts} == trials
    assert all(Path(a["path"]) == bag and a["details"]["end_ns"] > a["details"]["start_ns"] for a in arts)


def test_info_rescore_and_latency(recorded):
    bag = str(recorded["bag"])
    info = indgen("bag", "info", bag).stdout
    assert "indgen_msgs/msg/WorldFinalState" in info and "rec" in info and "droid_twin" in info
    out = indgen("bag", "rescore", bag, "--db", str(recorded["db"]), "--json", str(recorded["tmp"] / "rs.json"))
    assert "4 of 4 judged trials agree with the recorded result" in out.stdout, out.stdout
    assert "signatures checked against the results store" in out.stdout
    figures = json.loads((recorded["tmp"] / "rs.json").read_text())
    assert figures["agree"] == 4 and figures["disagree"] == []
    judged = [t for t in figures["trials"] if t["agrees"] is not None]
    assert sorted(t["trial"] for t in judged) == sorted({t["trial"] for t in figures["trials"]})  # each once
    assert all(t["recorded"] == t["rescored"] and t["recorded_score"] == pytest.approx(t["rescored_score"])
               for t in judged), figures["trials"]
    # an attempt given up on before the world judged it (a timeout on a loaded machine) is
    # listed, not compared: it has no final state to judge
    assert all(t["recorded"] == "ABORTED" and t["rescored"] is None for t in figures["trials"] if t not in judged)
    out = indgen("bag", "latency", bag, "--json", str(recorded["tmp"] / "lat.json"))
    lat = json.loads((recorded["tmp"] / "lat.json").read_text())
    assert lat["overall"]["trials"] == 4 and lat["overall"]["ticks"] > 20
    # lock-step: every tick was answered, but for the last tick of an attempt given up on
    # because its command was late (a loaded machine)
    aborted = sum(t["recorded"] == "ABORTED" for t in figures["trials"])
    assert lat["overall"]["missed"] <= aborted, (lat["overall"], aborted)
    assert lat["overall"]["round_trip_ms_p50"] > 0 and lat["overall"]["server_ms_p50"] >= 0
    assert lat["overall"]["obs_to_command_ms_p99"] >= lat["overall"]["obs_to_command_ms_p50"] > 0


def test_a_blind_campaign_not_done_shows_no_outcome_from_its_bag(recorded, tmp_path):
    """Found by hand: `indgen bag rescore` on a running blind campaign's bag printed every
    trial's outcome by letter while report, compare and export refused."""
    import shutil
    import sqlite3

    db = tmp_path / "r.sqlite"
    shutil.copy(recorded["db"], db)
    with sqlite3.connect(db) as conn:  # the same campaign, as a blind one still running
        (config,) = conn.execute("SELECT config_json FROM campaigns WHERE id='rec'").fetchone()
        config = json.loads(config) | {"blind": True, "blind_labels": {"droid_twin_oracle": "A"}}
        conn.execute("UPDATE campaigns SET config_json=?, status='running' WHERE id='rec'", (json.dumps(config),))
    bag = str(recorded["bag"])
    for command in ("rescore", "video", "view"):
        proc = indgen("bag", command, bag, "--db", str(db), expect=2)
        assert proc.stderr.strip() == ("indgen: error: campaign rec is blind and not known to be done: its outcomes "
                                       "stay hidden until it is done (pass --db with the results store that ran it)")
    info = indgen("bag", "info", bag, "--db", str(db)).stdout
    assert "hidden (blind, not done)=4" in info and "success=" not in info, info
    # a trial's tick count is its episode's length (a success ends early): the overall row only
    lat = indgen("bag", "latency", bag, "--db", str(db), "--json", str(tmp_path / "lat.json")).stdout
    figures = json.loads((tmp_path / "lat.json").read_text())
    assert figures["trials"] == [] and figures["overall"]["trials"] == 4, figures
    assert "A/" not in lat and "its trials are in the overall row only" in lat, lat


def test_info_rescore_latency_video_and_replay_run_where_ros_cannot_be_imported(recorded, tmp_path):
    """An analyst's laptop: `indgen bag` decodes with the bag's own definitions and checks the
    signatures with the store's key, with rclpy and indgen_msgs not importable."""
    bag, db = str(recorded["bag"]), str(recorded["db"])

    def run(*args):
        proc = indgen_without_ros("bag", *args)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    assert "indgen_msgs/msg/EpisodeResult" in run("info", bag)
    rescored = run("rescore", bag, "--db", db, "--json", str(tmp_path / "rs.json"))
    assert "signatures checked against the results store" in rescored
    with_ros = indgen("bag", "rescore", bag, "--db", db, "--json", str(tmp_path / "rs_ros.json"))
    assert "signatures checked" in with_ros.stdout
    assert json.loads((tmp_path / "rs.json").read_text()) == json.loads((tmp_path / "rs_ros.json").read_text())
    run("latency", bag, "--json", str(tmp_path / "lat.json"))
    assert json.loads((tmp_path / "lat.json").read_text())["overall"]["trials"] == 4
    run("video", bag, "--out", str(tmp_path / "v"), "--json", str(tmp_path / "v.json"))
    assert sorted(v["level"] for v in json.loads((tmp_path / "v.json").read_text())) == [0, 1]
    port = servers.free_port()
    server = servers.start_server("droid_twin_oracle", port)
    try:
        run("replay", bag, "--server", f"ws://127.0.0.1:{port}", "--json", str(tmp_path / "rp.json"))
    finally:
        servers.stop(server)
    replayed = json.loads((tmp_path / "rp.json").read_text())
    assert replayed["max_abs"] == 0.0 and replayed["errors"] == 0
    # without the sim extra too: `info` and `latency` run, `rescore` (it rebuilds the world's
    # judge in MuJoCo) says what to install, in one sentence (it ended in a traceback)
    no_sim = dict(os.environ, INDGEN_TEST_ALSO_MISSING="mujoco")
    assert indgen_without_ros("bag", "info", bag, env=no_sim).returncode == 0
    proc = indgen_without_ros("bag", "rescore", bag, "--db", db, env=no_sim)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip() == ("indgen: error: the world 'droid_twin' needs the Python module 'mujoco', which is "
                                   "not installed: run `make setup` or `pip install -e '.[sim]'`."), proc.stderr


def test_the_bags_own_definitions_give_the_canonical_bytes_rclpy_gives(recorded):
    """Signatures are computed on rclpy messages and checked on the bag decoder's: messages of
    every type in the bag (images, joint states, uint8[] payloads, float32 fields) have the
    same canonical bytes both ways."""
    from rclpy.serialization import deserialize_message

    from indgen_core.bags.trials import readers, records
    from indgen_core.nodes import messages
    from indgen_core.ros import convert

    seen = collections.Counter()
    for record in records(readers([recorded["bag"]])):
        if seen[record.msgtype] >= 25:  # every type, 25 of each: decoding every frame twice takes minutes
            continue
        ours = messages.canonical_bytes(record.decode(), skip="", kinds=record.decoder.kinds)
        rclpy_msg = deserialize_message(record.data, convert.message_class(record.msgtype))
        theirs = messages.canonical_bytes(rclpy_msg, skip="")
        assert ours == theirs, record.msgtype
        seen[record.msgtype] += 1
    assert {"indgen_msgs/msg/EpisodeResult", "indgen_msgs/msg/TaskSetup", "sensor_msgs/msg/Image"} <= set(seen)


def test_a_tampered_result_in_a_bag_is_never_counted(recorded, tmp_path):
    """One result rewritten in the bag (failure turned into success, the signature kept): with the
    store's key, rescore drops it as unsigned, with or without ROS."""
    from indgen_core.bags.trials import read, readers, records
    from indgen_core.bags.writer import BagWriter

    forged = tmp_path / "forged"
    writer = BagWriter(forged)
    changed = None
    for record in records(readers([recorded["bag"]])):
        writer.add_topic(record.topic, record.msgtype)
        data = record.data
        if record.topic == topics.EPISODE_RESULT and changed is None:
            msg = record.decode()
            msg.outcome = 1 - msg.outcome if msg.outcome in (0, 1) else 0
            changed = msg.trial_id
            data = bytes(record.decoder.store.serialize_cdr(msg, record.msgtype))
        writer.write(record.topic, record.msgtype, record.log_time, data)
    writer.close()
    assert changed is not None
    with ResultsStore(recorded["db"]) as store:
        key = store.campaign_key("rec")
    untouched = read([recorded["bag"]], keys=lambda campaign: key)
    tampered = read([forged], keys=lambda campaign: key)
    assert tampered.unsigned == [changed] and untouched.unsigned == []
    differ = [(t, u) for t, u in zip(tampered.attempts, untouched.attempts, strict=True)
              if (t.result is None) != (u.result is None)]
    assert [(t.trial_id, t.result) for t, _ in differ] == [(changed, None)]  # dropped, and only it
    proc = indgen_without_ros("bag", "rescore", str(forged), "--db", str(recorded["db"]), "--json",
                              str(tmp_path / "f.json"))
    assert proc.returncode == 0, proc.stderr
    assert f"IGNORED 1 result(s) not signed with the campaign's key (altered or forged): {changed}" in proc.stdout
    figures = json.loads((tmp_path / "f.json").read_text())
    assert figures["unsigned"] == [changed]
    assert None in {t["recorded"] for t in figures["trials"] if t["trial"] == changed}


def test_a_wrong_final_state_is_a_disagreement(recorded, tmp_path):
    """Rescore really judges: one recorded final state with every body moved to the origin
    disagrees on that trial, and only that one."""
    from indgen_core.bags.rescore import rescore
    from indgen_core.bags.trials import read

    recording = read([recorded["bag"]])
    first = next(a for a in recording.attempts if a.result is not None and a.result.outcome == 0)  # success
    state = json.loads(first.final.state_json)
    state["mj_state"] = [0.0 if i > 0 else v for i, v in enumerate(state["mj_state"])]  # everything at the origin
    first.final.state_json = json.dumps(state)
    rows = {r.attempt.trial_id: r for r in rescore(recording)}
    assert rows[first.trial_id].agrees is False
    assert sum(bool(r.agrees) for r in rows.values()) == len(rows) - 1


def test_videos_one_per_level_with_every_frame(recorded, tmp_path):
    import av

    out = indgen("bag", "video", str(recorded["bag"]), "--out", str(tmp_path / "v"), "--db", str(recorded["db"]),
                 "--json", str(tmp_path / "v.json"))
    videos = json.loads((tmp_path / "v.json").read_text())
    assert sorted(v["level"] for v in videos) == [0, 1], out.stdout
    with ResultsStore(recorded["db"]) as store:
        steps = {r.trial_id: r.steps for r in store.rows("rec")}
    for v in videos:
        with av.open(v["path"]) as container:
            stream = container.streams.video[0]
            assert stream.codec_context.name == "h264"
            frames = sum(1 for _ in container.decode(stream))
        assert frames == v["frames"] > 10
        # one frame per tick of the episode: the oracle asks on every tick, a held frame fills the gaps
        assert frames == steps[v["trial"]], (v, steps)
        assert stream.codec_context.width == 320 and stream.codec_context.height > 320  # 64 px x 5 + caption
    with ResultsStore(recorded["db"]) as store:
        assert sorted(a["level"] for a in store.artifacts("rec", kind="video")) == [0, 1]
    report = indgen("report", "rec", "--db", str(recorded["db"]), "--out", str(tmp_path / "rep"))
    html = next((tmp_path / "rep").rglob("report.html")).read_text()
    assert html.count(".mp4") >= 2, report.stdout


def test_a_video_of_one_trial_from_a_named_camera_and_wrong_names_in_one_sentence(recorded, tmp_path):
    with ResultsStore(recorded["db"]) as store:
        trial = next(r.trial_id for r in store.rows("rec") if r.outcome is Outcome.SUCCESS)
    out = indgen("bag", "video", str(recorded["bag"]), "--trial", trial, "--camera", "exterior_1", "--out",
                 str(tmp_path / "one"), "--db", str(recorded["db"]), "--json", str(tmp_path / "one.json"))
    videos = json.loads((tmp_path / "one.json").read_text())
    assert [v["trial"] for v in videos] == [trial], out.stdout
    assert videos[0]["path"].endswith("-exterior_1.mp4") and videos[0]["frames"] > 10
    assert [p.name for p in (tmp_path / "one").iterdir()] == [Path(videos[0]["path"]).name]
    for args, said in ((("--camera", "wrist"), "no camera 'wrist' in the bag; it has exterior_1"),
                       (("--trial", "no-such-trial"), "has no trial no-such-trial")):
        proc = indgen("bag", "video", str(recorded["bag"]), *args, "--out", str(tmp_path / "bad"), "--db",
                      str(recorded["db"]), expect=None)
        assert proc.returncode != 0 and said in proc.stderr, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not any((tmp_path / "bad").rglob("*.mp4"))


def test_a_view_per_trial_shows_its_outcome_frames_and_every_reply_and_the_index_links_it(recorded, tmp_path):
    """The index's page of trials opens each trial's view: the outcome the store holds, frames of
    the camera, and one row per policy reply with the reply's first action, checked against an
    independent reader (rosbags, the reply decoded with msgpack)."""
    import html as html_mod
    import re
    import shutil

    import msgpack
    import numpy as np
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    db = tmp_path / "r.sqlite"
    shutil.copy(recorded["db"], db)
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "art"))
    indgen("bag", "view", str(recorded["bag"]), "--db", str(db), "--json", str(tmp_path / "v.json"), env=env)
    views = {v["trial"]: Path(v["path"]) for v in json.loads((tmp_path / "v.json").read_text())}
    with ResultsStore(db) as store:
        rows = {r.trial_id: r for r in store.rows("rec")}
    assert set(views) == set(rows) and all(p.parent == tmp_path / "art/reports/trials/rec" for p in views.values())
    first_actions = collections.defaultdict(list)  # trial -> the first action of each reply, in order
    with AnyReader([recorded["bag"]], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        wanted = [c for c in reader.connections if c.topic in (topics.POLICY_EXCHANGE, topics.TASK_SETUP)]
        for connection, _, raw in reader.messages(connections=wanted):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == topics.TASK_SETUP:  # a new attempt: the page shows the last one
                first_actions[msg.trial_id] = []
                continue
            reply = msgpack.unpackb(bytes(msg.reply), raw=False)
            actions = reply["actions"]  # openpi's msgpack_numpy map (byte keys): data, dtype, shape
            array = np.frombuffer(actions[b"data"], dtype=np.dtype(actions[b"dtype"])).reshape(actions[b"shape"])
            first_actions[msg.trial_id].append(array.reshape(-1, array.shape[-1])[0])
    for trial, path in views.items():
        page = path.read_text()
        facts = dict(re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", page))
        assert facts["outcome"] == rows[trial].outcome.word and facts["level"] == str(rows[trial].level), facts
        assert 2 <= page.count("<img src='data:image/jpeg;base64,") <= 8, trial
        table = page.split("<details>")[1]
        shown = [[float(v) for v in re.findall(r"<td>([^<]*)</td>", row)[2:]]
                 for row in table.split("<tr>")[2:]]
        assert len(shown) == len(first_actions[trial]) > 10, (len(shown), len(first_actions[trial]))
        assert np.allclose(shown, first_actions[trial], rtol=1e-3, atol=1e-6), trial
        assert page.count("<polyline") == 8  # seven joints and the gripper, DROID's names
        assert "joint_1" in page and "gripper" in page and html_mod.escape(trial) in page
    indgen("report", "--index", "--db", str(db), env=env)
    trials_page = (tmp_path / "art/reports/trials/rec.html").read_text()
    links = re.findall(r'<a href="(rec/[^"]+\.html)">view</a>', trials_page)
    assert len(links) == len(rows), trials_page[-2000:]
    assert all((tmp_path / "art/reports/trials" / link).is_file() for link in links)
    back = re.search(r"<a href='([^']+)'>every trial of the campaign</a>", views[next(iter(views))].read_text())
    assert (views[next(iter(views))].parent / back.group(1)).resolve() == (tmp_path / "art/reports/trials/rec.html")
    # a named trial alone; a trial the bag does not hold in one sentence
    one = indgen("bag", "view", str(recorded["bag"]), "--db", str(db), "--trial", next(iter(views)),
                 "--out", str(tmp_path / "one"), env=env)
    assert len(list((tmp_path / "one").iterdir())) == 1, one.stdout
    proc = indgen("bag", "view", str(recorded["bag"]), "--db", str(db), "--trial", "nope", env=env, expect=1)
    assert proc.stdout.strip() == "no finished attempt at nope in the bag"


def test_replay_against_the_same_policy_is_exact_and_against_another_is_not(recorded):
    import numpy as np

    from helpers.openpi_server import OpenpiStyleServer
    from indgen_sim.twin.oracle import TwinOracle

    port = servers.free_port()
    server = servers.start_server("droid_twin_oracle", port)
    try:
        out = indgen("bag", "replay", str(recorded["bag"]), "--server", f"ws://127.0.0.1:{port}",
                     "--json", str(recorded["tmp"] / "rp.json"))
    finally:
        servers.stop(server)
    figures = json.loads((recorded["tmp"] / "rp.json").read_text())
    assert [lv["level"] for lv in figures["levels"]] == [0, 1]
    names = figures["levels"][0]["names"]
    assert names == [f"joint_{i}" for i in range(1, 8)] + ["gripper"]
    assert figures["max_abs"] == 0.0 and figures["errors"] == 0, out.stdout

    class Nudged:  # the oracle with every joint velocity 0.01 higher, behind openpi's own server code
        def __init__(self):
            self.oracle = TwinOracle()

        def infer(self, obs):
            actions = np.array(self.oracle.infer(obs)["actions"], dtype=float)
            actions[:, :7] += 0.01
            return {"actions": actions}

    with OpenpiStyleServer(Nudged()) as fake:
        indgen("bag", "replay", str(recorded["bag"]), "--server", f"ws://127.0.0.1:{fake.port}",
               "--json", str(recorded["tmp"] / "rp2.json"))
    for level in json.loads((recorded["tmp"] / "rp2.json").read_text())["levels"]:
        assert level["mean_abs"][:7] == pytest.approx([0.01] * 7, abs=1e-9) and level["mean_abs"][7] == 0.0
    # a server that refuses these observations: one sentence, exit 2
    port = servers.free_port()
    server = servers.start_server("droid_pi05_standin", port)
    try:
        proc = indgen("bag", "replay", str(recorded["bag"]), "--server", f"ws://127.0.0.1:{port}", expect=2)
    finally:
        servers.stop(server)
    assert "not a pi05_droid request" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_bags_get_one_sentence(recorded, tmp_path):
    bag = recorded["bag"]
    (tmp_path / "empty").mkdir()

    def refused(*args: str) -> str:
        proc = indgen("bag", *args, expect=None)
        assert proc.returncode != 0, proc.stdout
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        return lines[0]

    assert "not a rosbag2 bag" in refused("info", str(tmp_path / "empty"))
    assert "does not exist" in refused("info", str(tmp_path / "nowhere"))
    no_meta = tmp_path / "no_meta"
    shutil.copytree(bag, no_meta)
    (no_meta / "metadata.yaml").unlink()
    assert "metadata.yaml" in refused("info", str(no_meta))
    assert "not campaign other" in refused("rescore", str(bag), "--campaign", "other")
    garbage = tmp_path / "garbage"
    shutil.copytree(bag, garbage)
    next(garbage.glob("*.mcap")).write_bytes(b"this is not a recording")
    assert "not an MCAP file" in refused("info", str(garbage))
    # a graph topic with a type this machine does not have
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(get_types_from_msg("string name", "other_msgs/msg/Setup"))
    other = tmp_path / "other"
    with Writer(other, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection(topics.TASK_SETUP, "other_msgs/msg/Setup", typestore=store)
        msg = store.types["other_msgs/msg/Setup"](name="x")
        writer.write(conn, 1, store.serialize_cdr(msg, "other_msgs/msg/Setup"))
    assert "other_msgs/msg/Setup" in refused("rescore", str(other))


def test_a_cut_bag_opens_to_its_last_chunk_and_repair_closes_it(recorded, tmp_path):
    from indgen_core.bags import info
    from indgen_core.bags.reader import BagReader

    cut = tmp_path / "cut"
    shutil.copytree(recorded["bag"], cut)
    mcap_file = next(cut.glob("*.mcap"))
    data = mcap_file.read_bytes()
    mcap_file.write_bytes(data[: int(len(data) * 0.6)])  # what a SIGKILL leaves: no summary, a cut chunk
    (cut / "metadata.yaml").unlink()  # rosbag2 writes it only on close
    # it opens, up to its last complete chunk, and says so
    proc = indgen("bag", "info", str(cut))
    assert "recorder was killed" in proc.stderr and "/indgen/task_setup" in proc.stdout
    out = indgen("bag", "repair", str(cut)).stdout
    assert "closed" in out and (cut / "metadata.yaml").is_file()
    reader = BagReader(cut)
    assert not reader.truncated
    counts = {r["topic"]: r["count"] for r in info.topic_table([reader])[0]}
    assert counts[topics.CLOCK] > 0
    assert "rec" in indgen("bag", "info", str(cut)).stdout


def test_record_false_starts_no_recorder(tmp_path):
    def started(*args):
        return [line.split(":")[0] for line in indgen("launch", "blockenv_axis", *args, "--show").stdout.splitlines()]

    assert "recorder" not in started("record:=false") and "recorder" in started()
    # and the progression manager waits for a recorder only when there is one
    assert "-p recorder:=false" in indgen("launch", "blockenv_axis", "record:=false", "--show").stdout


def test_a_bag_splits_at_its_size_and_the_parts_read_back_as_one(tmp_path):
    """bag_split_mb: the writer starts `<name>_1`, `<name>_2`, ... once a bag passes the size;
    each part is a whole rosbag2 bag of its own (metadata, every topic's connection), and the
    parts read back in order, nothing lost or doubled at the seams."""
    import os

    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    from indgen_core.bags import trials
    from indgen_core.bags.writer import BagWriter

    store = get_typestore(Stores.ROS2_JAZZY)
    string_msg = store.types["std_msgs/msg/String"]
    writer = BagWriter(tmp_path / "run", split_bytes=64 * 1024, flush_s=0.0)
    writer.add_topic("/chatter", "std_msgs/msg/String")
    writer.add_topic("/other", "std_msgs/msg/String")
    sent = []
    for i in range(60):
        text = f"{i:04d}" + os.urandom(4000).hex()  # what zstd cannot shrink: the size grows
        topic = "/chatter" if i % 3 else "/other"
        writer.write(topic, "std_msgs/msg/String", 1_000_000 * (i + 1), bytes(store.serialize_cdr(string_msg(data=text),
                                                                                                   string_msg.__msgtype__)))
        sent.append((topic, text[:4]))
    writer.close()
    assert len(writer.paths) >= 3 and writer.paths[1].name == "run_1", writer.paths
    for part in writer.paths:
        assert (part / "metadata.yaml").is_file()
        with AnyReader([part], default_typestore=store) as reader:
            assert {c.topic for c in reader.connections} == {"/chatter", "/other"}  # every part knows every topic
    got = [(r.topic, trials.deserialize(r).data[:4]) for r in trials.records(trials.readers(writer.paths))]
    assert got == sent


def test_latency_matches_a_command_the_recorder_took_before_its_tick(tmp_path):
    """A tick and its command come on two topics; on a busy machine the recorder can take the
    command first (CI's one "missed" tick in a lock-step run). The command still answers it."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray

    from indgen_core.bags import latency, trials
    from indgen_core.bags.writer import BagWriter
    from indgen_msgs.msg import ControlTick

    writer = BagWriter(tmp_path / "run", flush_s=0.0)
    tick_type, command_type = "indgen_msgs/msg/ControlTick", "std_msgs/msg/Float64MultiArray"
    writer.add_topic(topics.CONTROL_TICK, tick_type)
    writer.add_topic(topics.ARM_VELOCITY_COMMAND, command_type)

    def tick(seq, t_ms):
        writer.write(topics.CONTROL_TICK, tick_type, t_ms * 1_000_000,
                     serialize_message(ControlTick(trial_id="t", step=seq - 1, sequence=seq)))

    def command(seq, t_ms):
        msg = Float64MultiArray(data=[0.0] * 7)
        msg.layout.data_offset = seq
        writer.write(topics.ARM_VELOCITY_COMMAND, command_type, t_ms * 1_000_000, serialize_message(msg))

    tick(1, 10), command(1, 14)
    command(2, 80), tick(2, 81)  # taken in the other order
    tick(3, 150), command(3, 155)
    tick(4, 220)  # never answered
    writer.close()
    rows, overall = latency.measure(trials.readers(writer.paths))
    assert overall["ticks"] == 4 and overall["missed"] == 1 and rows[0]["missed"] == 1  # tick 4 only
    assert overall["obs_to_command_ms_p50"] == pytest.approx(4.0)  # 4, 0 (taken first), 5 ms
