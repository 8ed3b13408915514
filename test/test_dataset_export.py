"""`indgen dataset export`: recorded trials and oracle demonstrations as LeRobot datasets, written
and read back by the lerobot library itself in its own environment (make lerobot), compared
with the bag they came from (decoded independently, by Foxglove's mcap-ros2) trial by trial;
what cannot be exported is one sentence, and an interrupted export leaves nothing behind."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import graphs, servers
from indgen_core import topics
from indgen_core.datasets import export, layout, lerobot_env
from indgen_core.errors import IndGenError
from indgen_core.specs.droid import GRIPPER_CLOSED_RAD, RAD_PER_S_AT_ONE


def _lerobot_missing() -> str | None:
    try:
        for fmt in layout.FORMATS:
            lerobot_env.interpreter(fmt)
    except IndGenError as exc:
        return str(exc)
    return None


needs_lerobot = pytest.mark.skipif(_lerobot_missing() is not None, reason=f"{_lerobot_missing()}")


def builtin_fr3_env() -> dict:
    """The twin with its built-in FR3 (simple shapes, renders about 10x faster than the
    menagerie's meshes): these tests are about the dataset, not the robot's looks."""
    env = dict(os.environ)
    env.pop("MENAGERIE_ROOT", None)
    return env


def indgen(*args, expect: int | None = 0, env=None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "indgen_core.cli", *map(str, args)], capture_output=True, text=True, timeout=600, env=env
    )
    if expect is not None:
        assert proc.returncode == expect, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def one_sentence(proc) -> str:
    assert proc.returncode != 0, proc.stdout
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


# -- the layout, without lerobot --------------------------------------------------------------------
def test_actions_are_the_motion_the_arm_made_and_the_gripper_command_in_droid_units():
    q = np.zeros((3, 7))
    q[1, 0], q[2, 0] = 0.2, 0.3  # 0.2 rad in one tick at 15 Hz = 3 rad/s = DROID's 1.0
    commanded = np.zeros((2, 8))
    commanded[:, 0], commanded[:, 7] = 0.9, [1.0, 1.0]  # a joint asked for more than it made; close
    actions = layout.droid_actions(q, commanded)
    assert actions.shape == (2, 8) and actions.dtype == np.float32
    assert actions[:, 0] == pytest.approx([0.2 * 15 / RAD_PER_S_AT_ONE, 0.1 * 15 / RAD_PER_S_AT_ONE])
    # the gripper as DROID records it: the command (closing on a cup reaches only 0.3-0.36, which
    # a DROID client reads as open: a policy trained on that would never close)
    assert actions[:, 7].tolist() == [1.0, 1.0]


def test_frames_become_droids_16_9_and_bad_columns_are_refused():
    square = np.full((64, 64, 3), 200, np.uint8)
    frame = layout.frame_16_9(square)
    assert frame.shape == (180, 320, 3)
    assert frame[:, :60].max() == 0 and frame[:, 140:180].min() == 200  # padded at the sides, not stretched
    wide = np.zeros((180, 320, 3), np.uint8)
    assert layout.frame_16_9(wide) is not None and layout.frame_16_9(wide).shape == (180, 320, 3)
    q, g = np.zeros((3, 7)), np.zeros(3)
    with pytest.raises(ValueError, match="2 frames need 3 states and 2 commands"):
        layout.episode_columns({}, q[:2], g, np.zeros((2, 8)), np.zeros(2), 0)
    q[1, 3] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        layout.episode_columns({}, q, g, np.zeros((2, 8)), np.zeros(2), 0)


def test_what_cannot_be_exported_is_one_sentence(tmp_path):
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "cut_0.mcap").write_bytes(b"\x89MCAP0\r\n" + b"\x00" * 40)  # a file its recorder never closed
    proc = indgen("dataset", "export", tmp_path / "a", "--format", "v3.0", "--bag", cut, expect=None)
    assert "close it with `indgen bag repair` first" in one_sentence(proc)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.mcap").write_bytes(b"not an mcap file at all")
    assert "not an MCAP file" in one_sentence(
        indgen("dataset", "export", tmp_path / "b", "--format", "v3.0", "--bag", foreign, expect=None)
    )
    other = tmp_path / "other"  # a whole MCAP file of somebody else's: no IndGen trial in it
    other.mkdir()
    from mcap.writer import Writer

    with (other / "other_0.mcap").open("wb") as fh:
        writer = Writer(fh)
        writer.start()
        schema = writer.register_schema("std_msgs/msg/String", "ros2msg", b"string data")
        channel = writer.register_channel("/chatter", "cdr", schema)
        writer.add_message(channel, log_time=1, data=b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00", publish_time=1)
        writer.finish()
    assert "holds no trial that IndGen recorded" in one_sentence(
        indgen("dataset", "export", tmp_path / "f", "--format", "v3.0", "--bag", other / "other_0.mcap", expect=None)
    )
    beyond = indgen(
        "dataset", "export", tmp_path / "c", "--format", "v2.1", "--oracle", "droid_twin", "--axis", "scale",
        "--levels", "3-9", expect=None,
    )  # fmt: skip
    assert "level 5 is outside 0..4" in one_sentence(beyond)
    assert "unknown world with oracle demonstrations 'droid_twn'; did you mean 'droid_twin'?" in one_sentence(
        indgen("dataset", "export", tmp_path / "d", "--format", "v2.1", "--oracle", "droid_twn", "--axis", "scale",
               "--levels", "0", expect=None)
    )  # fmt: skip
    assert "--oracle needs --axis and --levels" in one_sentence(
        indgen("dataset", "export", tmp_path / "e", "--format", "v2.1", "--oracle", "droid_twin", expect=None)
    )
    (tmp_path / "taken").mkdir()
    assert "already exists" in one_sentence(
        indgen("dataset", "export", tmp_path / "taken", "--format", "v2.1", "--oracle", "droid_twin", "--axis",
               "scale", "--levels", "0", expect=None)
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "foreign", "other", "taken"]  # nothing half-written


def test_a_camera_rendered_on_request_is_refused_and_a_wall_clock_tick_takes_the_latest_frame():
    """A chunking policy asks for images one tick in eight (render:=on_request): the bag has no
    frame on the other ticks, and the export says so. On the real robot's wall clock a tick takes
    the latest frame stamped no later than itself."""
    from types import SimpleNamespace as Msg

    from indgen_core.bags.reader import BagError
    from indgen_core.datasets import from_bag

    def stamp(ns):
        return Msg(sec=ns // 10**9, nanosec=ns % 10**9)

    def tick(step, on_request, wall=False):
        return Msg(step=step, sequence=100 + step, header=Msg(stamp=stamp(step * 66_666_667)),
                  images_on_request=on_request, wall_clock=wall)  # fmt: skip

    attempt = Msg(trial_id="p/k+0/000", level=0, axis="stack", campaign_id="c", world="droid_twin", policy="p",
                 result=Msg(outcome=0), setup_msg=Msg(language_instruction="stack", seed=1))  # fmt: skip
    frame = np.zeros((180, 320, 3), np.uint8)
    samples = from_bag._Samples(
        ticks={k: tick(k, True) for k in range(17)},
        states=[(k * 66_666_667, np.zeros(7), 0.0) for k in range(17)],
        arm={100 + k: np.zeros(7) for k in range(17)},
        gripper={100 + k: 0.0 for k in range(17)},
        frames={"wrist": [(k * 66_666_667, frame) for k in (0, 8, 16)]},
    )
    with pytest.raises(BagError, match="recorded with images on request: camera wrist has a frame on 2 of the 16"):
        from_bag._episode(attempt, samples, ["wrist"], [Path("b")])
    samples.ticks = {k: tick(k, False, wall=True) for k in range(17)}  # the real robot: latest frame counts
    samples.frames = {"wrist": [(k * 66_666_667 - 5_000_000, frame + k) for k in range(0, 17, 2)]}
    episode = from_bag._episode(attempt, samples, ["wrist"], [Path("b")])
    assert episode.frames == 16 and episode.notes["clock"] == "wall"
    firsts = episode.columns["wrist_image_left"][:, 0, 0, 0].tolist()
    assert firsts == [0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14], firsts


# -- with lerobot, from oracle demonstrations ---------------------------------------------------------

@pytest.mark.slow
@needs_lerobot
def test_oracle_demonstrations_at_chosen_levels_round_trip_through_lerobot(tmp_path):
    out = tmp_path / "demos"
    proc = indgen("dataset", "export", out, "--format", "v3.0", "--oracle", "droid_twin", "--axis", "scale",
                  "--levels", "0,2", "--episodes", "1", "--seed", "4", env=builtin_fr3_env())  # fmt: skip
    assert "wrote" in proc.stdout and "2 episodes" in proc.stdout, proc.stdout
    info = export.read_back(out, "v3.0", tmp_path / "read.npz")
    assert info["codebase_version"] == "v3.0" and info["fps"] == 15 and info["episodes"] == 2
    assert info["robot_type"] == "panda" and info["tasks"] == ["Pick up the cup and put it in the black bowl."]
    read = np.load(tmp_path / "read.npz")
    for key in ("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left"):
        assert read[key].shape[1:] == (180, 320, 3) and read[key].std() > 5  # rendered scenes, not blank
    records = export.episode_records(out)
    assert [(r["level"], r["outcome"], r["source"]) for r in records] == [
        (0, "success", "oracle droid_twin"),
        (2, "success", "oracle droid_twin"),
    ]
    assert sorted(set(read["level"].tolist())) == [0, 2]
    # the executed actions are the motion between consecutive frames of an episode
    for episode in range(2):
        rows = read["episode_index"] == episode
        q, actions = read["joint_position"][rows], read["actions"][rows]
        assert np.allclose(actions[:-1, :7], np.diff(q, axis=0) * 15 / RAD_PER_S_AT_ONE, atol=1e-4)
        assert np.allclose(read["timestamp"][rows], np.arange(rows.sum()) / 15, atol=1e-4)


@pytest.mark.slow
@needs_lerobot
@pytest.mark.parametrize(("sig", "when"), [(signal.SIGINT, "staging"), (signal.SIGTERM, "staging"),
                                           (signal.SIGTERM, "writing")])
def test_an_interrupted_export_leaves_no_half_written_dataset(tmp_path, sig, when):
    """Ctrl-C or SIGTERM (a job scheduler, `kill`), while episodes are staged or while lerobot's
    writer runs: no dataset, no hidden work folder, no writer left running."""
    out = tmp_path / "demos"
    cmd = [sys.executable, "-m", "indgen_core.cli", "dataset", "export", str(out), "--format", "v2.1", "--oracle",
           "droid_twin", "--axis", "stack", "--levels", "0", "--episodes", "3"]  # fmt: skip
    env = dict(builtin_fr3_env(), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = proc.stdout.readline()  # the first episode is staged: the export is under way
    assert first.startswith("episode 1:"), first + proc.stderr.read()
    if when == "writing":  # lerobot's writer runs in its own process
        while not (line := proc.stdout.readline()).startswith("lerobot"):
            assert line, proc.stderr.read()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    code, word = (130, "interrupted") if sig == signal.SIGINT else (143, "terminated")
    assert proc.returncode == code and word in err, err
    assert list(tmp_path.iterdir()) == []  # neither OUT nor its hidden work folder
    # and no lerobot writer left running on it (SIGTERM used to leave one)
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert left == [], left


# -- with lerobot, from a recorded bag ----------------------------------------------------------------
@pytest.fixture(scope="module")
def every_tick_bag(tmp_path_factory):
    """A twin stack campaign (oracle, levels 0 and 1, a trial each, two cameras at 64 px rendered
    on every tick) through the graph with the recorder on."""
    tmp = tmp_path_factory.mktemp("export")
    campaign = tmp / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "ex", "axis": "stack", "world": "droid_twin",
                                        "policies": ["droid_twin_oracle"], "levels": [0, 1], "trials_per_level": 1,
                                        "seed": 5, "purpose": "certify"}))  # fmt: skip
    port = servers.free_port()
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp / "art"))
    proc = graphs.launch("stack_axis", "sim:=true", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
                         f"db:={tmp / 'r.sqlite'}", f"report_dir:={tmp / 'rep'}", f"campaign:={campaign}",
                         "campaign_id:=ex", "cameras:=exterior_1,wrist", "image_size:=64", "builtin_fr3:=true",
                         "render:=every_tick", "level_images:=false", f"bag_dir:={tmp / 'bags'}", env=env)  # fmt: skip
    out = graphs.finish(proc, timeout=400)
    assert "campaign ex done: 2 trials run" in out
    (bag,) = [p for p in (tmp / "bags").iterdir() if p.is_dir()]
    return bag


def _decoded_independently(bag: Path) -> dict:
    """Per trial, what the bag holds, read with Foxglove's mcap-ros2 decoder (not IndGen's)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    cameras = {topics.camera_topic(c): c for c in ("exterior_1", "wrist")}
    wanted = {topics.TASK_SETUP, topics.CONTROL_TICK, topics.JOINT_STATES, topics.ARM_VELOCITY_COMMAND,
              topics.GRIPPER_COMMAND, *cameras}  # fmt: skip
    trials: dict[str, dict] = {}
    states, frames = {}, {c: {} for c in cameras.values()}
    arm, gripper = {}, {}
    state_stamps = []  # every joint state's stamp, in the order recorded (a dict by stamp hides duplicates)
    for path in sorted(bag.glob("*.mcap")):
        with path.open("rb") as fh:
            reader = make_reader(fh, decoder_factories=[DecoderFactory()])
            for _, channel, _, msg in reader.iter_decoded_messages(topics=sorted(wanted)):
                if channel.topic == topics.TASK_SETUP:
                    trials.setdefault(msg.trial_id, {"task": msg.language_instruction, "level": msg.level, "ticks": {}})
                    continue
                stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec if hasattr(msg, "header") else None
                if channel.topic == topics.CONTROL_TICK:  # a step's last tick is the one answered
                    ticks = trials[msg.trial_id]["ticks"]
                    if msg.step not in ticks or msg.sequence > ticks[msg.step][1]:
                        ticks[msg.step] = (stamp, msg.sequence)
                elif channel.topic == topics.JOINT_STATES:
                    state_stamps.append(stamp)
                    states[stamp] = (np.array(msg.position[:7]), msg.position[7] / GRIPPER_CLOSED_RAD)
                elif channel.topic == topics.ARM_VELOCITY_COMMAND:
                    arm[msg.layout.data_offset] = np.array(msg.data) / RAD_PER_S_AT_ONE
                elif channel.topic == topics.GRIPPER_COMMAND:
                    gripper[msg.layout.data_offset] = msg.data[0] / GRIPPER_CLOSED_RAD
                else:
                    rgb = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)
                    frames[cameras[channel.topic]][stamp] = rgb
    return {"trials": trials, "states": states, "frames": frames, "arm": arm, "gripper": gripper,
            "state_stamps": state_stamps}


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.realtime  # every tick's frames and command in the bag: a recorder starved of CPU may miss some
@needs_lerobot
@pytest.mark.parametrize("fmt", ["v2.1", "v3.0"])
def test_a_bag_exported_and_read_back_by_lerobot_matches_the_bag_trial_by_trial(every_tick_bag, fmt, tmp_path):
    out = tmp_path / "ds"
    proc = indgen("dataset", "export", out, "--format", fmt, "--bag", every_tick_bag)
    assert "2 episodes" in proc.stdout and "cameras exterior_1, wrist" in proc.stdout, proc.stdout
    info = export.read_back(out, fmt, tmp_path / "read.npz")
    assert info["codebase_version"] == fmt and info["episodes"] == 2
    read = np.load(tmp_path / "read.npz")
    bag = _decoded_independently(every_tick_bag)
    records = export.episode_records(out)
    assert [r["outcome"] for r in records] == ["success", "success"]
    # simulated time: every joint state stamped once, in order (sums of float seconds stamped
    # each whole second one second early, and a trial's reset with the last trial's last stamp)
    stamps = bag["state_stamps"]
    assert all(b > a for a, b in itertools.pairwise(stamps)), "joint state stamps out of order or repeated"
    for index, record in enumerate(records):
        trial = bag["trials"][record["trial_id"]]
        ticks = [trial["ticks"][step] for step in sorted(trial["ticks"])]
        tick_ns = np.diff([stamp for stamp, _ in ticks])
        assert np.all(np.abs(tick_ns - 1e9 / 15) <= 1), "a tick stamped at a wrong second"
        rows = read["episode_index"] == index
        assert rows.sum() == len(ticks) - 1 == record["frames"]  # the last tick only closes the last action
        assert set(read["task"][rows]) == {trial["task"]} and set(read["level"][rows]) == {trial["level"]}
        q = np.array([bag["states"][stamp][0] for stamp, _ in ticks])
        assert np.array_equal(read["joint_position"][rows], q[:-1].astype(np.float32))
        assert np.allclose(read["actions"][rows][:, :7], np.diff(q, axis=0) * 15 / RAD_PER_S_AT_ONE, atol=1e-5)
        # a command the recorder did not get (the first of a campaign can come before it discovers
        # the policy node's publisher) is exported as "held still" and counted, never invented
        recorded = [i for i, (_, seq) in enumerate(ticks[:-1]) if seq in bag["arm"] and seq in bag["gripper"]]
        commanded = [bag["arm"][ticks[i][1]] for i in recorded]
        assert np.allclose(read["commanded_actions"][rows][recorded, :7], commanded, atol=1e-6)
        # the gripper action is the command (DROID's convention): closed whenever the command closed it
        gripper_commanded = [bag["gripper"][ticks[i][1]] for i in recorded]
        assert np.allclose(read["actions"][rows][recorded, 7], gripper_commanded, atol=1e-6)
        closing = [i for i, c in zip(recorded, gripper_commanded, strict=True) if c > 0.5]
        assert all(read["actions"][rows][i, 7] > 0.5 for i in closing)
        assert record["ticks_without_command"] == len(ticks) - 1 - len(recorded) <= 2
        # the last action is the episode's own (it was the next trial's reset: up to 4.98)
        assert np.abs(read["actions"][rows][-1, :7]).max() <= 1.2
        # integer nanoseconds, exact through lerobot's loader (a float came back as float32)
        assert read["real_timestamp_ns"].dtype == np.int64
        assert read["real_timestamp_ns"][rows].reshape(-1).tolist() == [stamp for stamp, _ in ticks[:-1]]
        for camera, key in (("exterior_1", "exterior_image_1_left"), ("wrist", "wrist_image_left")):
            expected = np.stack([layout.frame_16_9(bag["frames"][camera][stamp]) for stamp, _ in ticks[:-1]])
            assert np.array_equal(read[key][rows], expected), f"{camera} of {record['trial_id']}"
    assert json.loads(json.dumps(info))["features"]  # the metadata lerobot wrote is readable as is


@pytest.mark.slow
@pytest.mark.ros
def test_a_bag_without_camera_frames_is_refused(every_tick_bag, tmp_path):
    """A bag recorded without cameras exported silently into a dataset openpi cannot train on:
    now it is refused in one sentence. The bag here is the every-tick bag with its camera
    channels left out, rewritten with the mcap library."""
    import shutil

    from mcap.reader import make_reader
    from mcap.writer import Writer

    lean = tmp_path / "lean"
    lean.mkdir()
    for path in sorted(every_tick_bag.glob("*.mcap")):
        with path.open("rb") as src, (lean / path.name).open("wb") as dst:
            writer = Writer(dst)
            writer.start()
            schemas, channels = {}, {}
            for schema, channel, message in make_reader(src).iter_messages():
                if channel.topic.startswith("/cameras/"):
                    continue
                if schema.id not in schemas:
                    schemas[schema.id] = writer.register_schema(schema.name, schema.encoding, schema.data)
                if channel.id not in channels:
                    channels[channel.id] = writer.register_channel(channel.topic, channel.message_encoding,
                                                                   schemas[schema.id], channel.metadata)
                writer.add_message(channels[channel.id], message.log_time, message.data, message.publish_time,
                                   message.sequence)
            writer.finish()
    shutil.copy(every_tick_bag / "metadata.yaml", lean / "metadata.yaml")
    proc = indgen("dataset", "export", tmp_path / "ds", "--format", "v3.0", "--bag", lean, expect=None)
    assert one_sentence(proc).startswith("indgen: error: the bag holds no camera frames"), proc.stderr
    assert not (tmp_path / "ds").exists()
