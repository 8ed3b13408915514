"""RoboCasa's tasks as an IndGen world, on RoboCasa's own code in its own environment
(.venv-robocasa, built by `make robocasa`, which `make test` runs): the robosuite 1.5.2
compatibility patches, each axis moving one thing one step at a time through RoboCasa's own
placement, a worker that dies becoming the system's fault, RoboCasa's object loader on a tree
in its folder layout, and one trial per level of an axis through the ROS graph."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import servers
from indgen_core.axes.progression import ParameterValue
from indgen_core.records import Outcome, TaskSetup
from indgen_core.store import ResultsStore
from indgen_core.world import InvalidSetup
from indgen_sim.robocasa import assets
from indgen_sim.robocasa import world as robocasa_world

ENV = robocasa_world.env_root()
WORKER = Path(robocasa_world.__file__).with_name("worker")
pytestmark = pytest.mark.skipif(
    not (ENV / "bin" / "python").exists(), reason=f"RoboCasa's environment is not set up at {ENV} (make robocasa)"
)


def setup(task="PickPlaceCounterToCabinet", seed=1, **params) -> TaskSetup:
    values = tuple(ParameterValue(name, float(value), "") for name, value in params.items())
    return TaskSetup("c", f"t{seed}", "robocasa", "a", 0, True, values, seed, seed, "robocasa_oracle",
                     options={"task": task})


@pytest.fixture(scope="module")
def world():
    with robocasa_world.RobocasaWorld() as w:
        yield w


def test_the_compat_patches_stand_in_for_robosuite_master_once_each():
    script = f"""
import sys, inspect, xml.etree.ElementTree as ET
sys.path.insert(0, {str(WORKER)!r})
import rs_compat
first, again = rs_compat.apply(), rs_compat.apply()
from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
from robosuite.models.arenas import EmptyArena
from robosuite.models.tasks.task import Task
flags = [ET.tostring(o).decode() for o in Task(EmptyArena(), [], enable_multiccd=True).root.findall("option/flag")]
print(first == again == ["load_model_on_init", "enable_multiccd", "JOINT_VELOCITY_LEGACY"],
      "load_model_on_init" in inspect.signature(ManipulationEnv.__init__).parameters, flags)
"""
    out = subprocess.run([str(ENV / "bin" / "python"), "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True True ['<flag multiccd=\"enable\" />']"


def test_each_pick_level_slides_the_sampling_box_a_fifth_of_its_travel(world):
    shifts, x = [], []
    for k in range(6):  # the same seed: the same draw inside the box, the box moved
        obs = world.reset(setup(pick_offset_x=0.2 * k))
        shifts.append(world.evaluate().details["pick_shift_m"])
        x.append(float(obs["objects"]["obj"][0]))
    steps = np.diff(shifts)
    print(f"pick box shift per level: {np.round(shifts, 3).tolist()} m; object x {np.round(x, 3).tolist()}")
    assert shifts[0] == 0.0 and np.allclose(steps, steps[0], atol=1e-9) and steps[0] > 0.05
    assert np.allclose(np.diff(x), steps, atol=0.01)  # the object moved with its box, nothing else did
    assert "Pick the" in world.language and "cabinet" in world.language


def test_each_clutter_level_puts_one_more_object_in_the_cabinet(world):
    counts = []
    for k in range(5):
        world.reset(setup("PickPlaceCabinetToCounter", cabinet_clutter=k))
        counts.append(sum(name.startswith("clutter_") for name in world.scene_objects))
        assert {"obj", "distr_counter", "distr_cab"} <= set(world.scene_objects)
    assert counts == [0, 1, 2, 3, 4]


def test_each_horizon_level_stands_the_base_125_mm_further_back(world):
    """The horizon axis through RoboCasa's own robot placement: the base's anchor 12.5 cm
    further out from the cabinet's front per level, along the fixture's y (the world's -y in
    IndGen's kitchen), nothing else moved; the base itself with it (RoboCasa's spawn deviation
    is drawn from the same seed)."""
    anchors, bases, objects = [], [], []
    for k in range(5):
        obs = world.reset(setup(base_offset_y=12.5 * k))
        details = world.evaluate().details
        assert details["base_offset_m"] == pytest.approx(0.125 * k)
        anchors.append(details["base_anchor"])
        bases.append(np.asarray(obs["state"]["base_pos"], dtype=float))
        objects.append(np.asarray(obs["objects"]["obj"], dtype=float)[:3])
    anchors, bases = np.asarray(anchors), np.asarray(bases)
    print(f"base anchor y per level: {np.round(anchors[:, 1], 4).tolist()}; base y {np.round(bases[:, 1], 4).tolist()}")
    assert np.allclose(np.diff(anchors[:, 1]), -0.125, atol=1e-6) and np.allclose(np.diff(anchors[:, 0]), 0, atol=1e-6)
    assert np.allclose(np.diff(bases[:, 1]), -0.125, atol=0.01) and np.allclose(np.diff(bases[:, 0]), 0, atol=0.01)
    assert np.allclose(objects, objects[0], atol=1e-3)  # the object stays where it was


def test_a_recorded_end_is_judged_again_in_the_scene_its_setup_builds(world):
    """`indgen bag rescore`'s part: final_state() taken where an episode ended, another scene
    built meanwhile, then restore() with the first setup: RoboCasa's check reads the same object
    where it was; a state that does not fit the scene is a ValueError in one sentence."""
    first = setup(seed=3, pick_offset_x=0.4)
    world.reset(first)
    for _ in range(5):
        world.step(np.zeros(12))
    state, live = world.final_state(), world.evaluate()
    world.reset(setup(seed=8, pick_offset_x=1.0))  # another kitchen in between
    assert world.evaluate().details["object"] != pytest.approx(live.details["object"], abs=1e-3)
    world.restore(first, state)
    again = world.evaluate()
    assert again.outcome == live.outcome and again.reason == live.reason
    # live, MuJoCo's positions are those its last substep computed before integrating (0.2 um
    # behind the state); restored, forward() computes them from the state itself
    assert again.details["object"] == pytest.approx(live.details["object"], abs=1e-5)
    assert {k: v for k, v in again.details.items() if k != "object"} == {
        k: v for k, v in live.details.items() if k != "object"
    }
    with pytest.raises(ValueError, match=r"the recorded state has 10 values, this scene \d+"):
        world.restore(first, {"sim_state": state["sim_state"][:10]})


def test_a_setup_the_world_cannot_build_is_invalid_in_one_sentence(world):
    with pytest.raises(InvalidSetup, match="does not implement fixture_offset_x: the paper moves appliances"):
        world.reset(setup(fixture_offset_x=12.5))
    with pytest.raises(InvalidSetup, match=r"moves the robot back from the fixture, 0\.\.100 cm, not -12\.5"):
        world.reset(setup(base_offset_y=-12.5))
    with pytest.raises(InvalidSetup, match=r"fraction of the sampling region, 0\.\.1, not 1\.2"):
        world.reset(setup(pick_offset_x=1.2))
    with pytest.raises(InvalidSetup, match="runs PickPlaceCounterToCabinet, PickPlaceCabinetToCounter, not 'Nope'"):
        world.reset(setup("Nope"))


def test_nan_actions_are_refused_before_they_reach_robocasa(world):
    world.reset(setup())
    with pytest.raises(ValueError, match="12 finite values"):
        world.step(np.full(12, np.nan))


def test_a_worker_that_dies_mid_episode_is_the_systems_fault():
    """The sim bridge turns an exception of the world into an aborted attempt (run again),
    never a policy failure; the world's part is to raise it with a sentence and not hang."""
    with robocasa_world.RobocasaWorld() as w:
        w.reset(setup())
        w.step(np.zeros(12))
        assert w.worker is not None
        os.kill(w.worker.proc.pid, signal.SIGKILL)
        with pytest.raises(robocasa_world.WorkerGone, match="the RoboCasa worker stopped answering"):
            w.step(np.zeros(12))
        # the next trial starts a new worker
        w.reset(setup(seed=2))
        assert w.step(np.zeros(12)).observation["state"]["base_pos"].shape == (3,)


def _object_model(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "model.xml").write_text(
        '<mujoco model="can"><worldbody><body><body name="object">'
        '<geom name="body" type="cylinder" size="0.03 0.04" rgba="1 0 0 1" group="0"/>'
        '<geom name="reg_bbox" type="box" size="0.03 0.03 0.04" group="1" contype="0" conaffinity="0"/>'
        "</body></body></worldbody></mujoco>"
    )


def test_robocasas_loader_finds_objects_in_its_folder_layout_and_doctor_tells_full_from_reduced(tmp_path, monkeypatch):
    root = tmp_path / "assets"
    for shipped in assets.SHIPPED.values():
        (root / shipped).mkdir(parents=True)
        (root / shipped / "x.yaml").write_text("{}\n")
    _object_model(root / "objects" / "objaverse" / "can" / "Can001")
    worker = robocasa_world.WorkerProcess()
    try:
        found = worker.ask("inventory", assets_dir=str(root))["objects"]
    finally:
        worker.close()
    assert found == {"objaverse": {"can": [str(root / "objects" / "objaverse" / "can" / "Can001" / "model.xml")]}}
    report = assets.inspect_assets(root)
    assert not report.full and report.missing() == ["textures", "model fixtures (sinks, stoves, ...)",
                                                    "objects (lightwheel)"]
    monkeypatch.setenv("ROBOCASA_ASSETS_PATH", str(root))
    item, status, detail, fix = assets.doctor_check()
    assert (item, status) == ("RoboCasa", "warn") and "reduced kitchen only" in detail
    assert fix.startswith("robocasa-download-assets")
    for downloaded in ("textures", "fixtures/sinks/Sink001", "objects/lightwheel/stool/Stool001"):
        (root / downloaded).mkdir(parents=True, exist_ok=True)
        (root / downloaded / "model.xml").write_text("<mujoco/>\n")
    assert assets.inspect_assets(root).full and assets.doctor_check()[1] == "ok"


@pytest.mark.slow
@pytest.mark.ros
def test_one_trial_per_pick_level_through_the_graph(tmp_path, monkeypatch):
    """The oracle behind `indgen serve-policy`, the RoboCasa spec on the policy node, the sim
    bridge's worker in RoboCasa's environment: every level of robocasa_pick_x once, each
    scored by RoboCasa's own check (at the far levels the base has to drive: the
    JOINT_VELOCITY_LEGACY patch's controller), with a picture of each level."""
    monkeypatch.setenv("INDGEN_ARTIFACTS", str(tmp_path / "artifacts"))
    port = servers.free_port()
    db = tmp_path / "r.sqlite"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "robocasa_axis", "trials:=1",
                           "campaign_id:=rc", f"db:={db}", f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}",
                           f"report_dir:={tmp_path / 'rep'}"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert "campaign rc done: 6 trials run" in proc.stdout
    with ResultsStore(db) as store:
        rows = store.rows("rc")
        assert sorted(r.level for r in rows) == [0, 1, 2, 3, 4, 5]
        print("per level:", [(r.level, r.outcome, r.steps, r.reason) for r in sorted(rows, key=lambda r: r.level)])
        assert all(r.outcome in (Outcome.SUCCESS, Outcome.FAILURE) for r in rows), [(r.level, r.reason) for r in rows]
        assert sum(r.outcome is Outcome.SUCCESS for r in rows) >= 3
        images = sorted(a["level"] for a in store.artifacts("rc", kind="level_image"))
        assert images == [0, 1, 2, 3, 4, 5]
    assert (tmp_path / "rep" / "rc" / "report.html").is_file()
    # the bag alone judges every trial again, in the scene its setup builds
    bags = sorted(p for p in (tmp_path / "artifacts" / "bags").iterdir() if p.is_dir())
    rescore = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bag", "rescore", *map(str, bags), "--db",
                              str(db), "--json", str(tmp_path / "rs.json")], capture_output=True, text=True,
                             timeout=600)
    assert rescore.returncode == 0, rescore.stdout[-3000:] + rescore.stderr[-3000:]
    figures = json.loads((tmp_path / "rs.json").read_text())
    assert figures["compared"] == 6 and figures["agree"] == 6, rescore.stdout


def test_a_worker_that_hangs_is_given_up_after_the_reply_timeout():
    with robocasa_world.RobocasaWorld() as w:
        w.reset(setup())
        assert w.worker is not None
        w.worker.reply_timeout = 2.0
        os.kill(w.worker.proc.pid, signal.SIGSTOP)  # stuck: alive, answering nothing
        with pytest.raises(robocasa_world.WorkerGone, match="no answer to step within 2 s"):
            w.step(np.zeros(12))
        assert w.worker.proc.poll() is not None  # killed, not left stopped
