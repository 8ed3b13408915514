"""The DROID FR3 twin in MuJoCo: where its robot comes from, DROID's joint-velocity
semantics (tracking, holding under gravity), the axis levels as built, success checks on
hand-placed configurations and the physics sanity checks."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from helpers.shared_assets import needs_menagerie
from helpers.twin_setup import setup
from indgen_core.axes.units import to_si
from indgen_core.records import Outcome
from indgen_core.world import InvalidSetup
from indgen_sim.twin import assets, scene
from indgen_sim.twin.world import DroidTwinWorld

MODELS = [pytest.param("menagerie", marks=needs_menagerie), "builtin"]


@pytest.fixture(scope="module", params=MODELS)
def world(request):
    w = DroidTwinWorld(cameras=False, builtin=request.param == "builtin")
    yield w
    w.close()


@pytest.fixture(scope="module")
def twin():
    w = DroidTwinWorld(cameras=False)
    yield w
    w.close()


@needs_menagerie
def test_the_robot_comes_from_menagerie_root_and_says_so():
    source = assets.robot_source()
    assert source.kind == "menagerie", "tests expect MENAGERIE_ROOT (conftest points it at ../shared/menagerie)"
    assert "MENAGERIE_ROOT" in source.detail
    w = DroidTwinWorld(cameras=False)
    w.reset(setup("stack", 0))
    assert w.m.nu == 8 and w.m.body("gripper/base_mount") is not None
    assert "gripper/right_driver_joint" in [w.m.joint(i).name for i in range(w.m.njnt)]  # the Robotiq 2F-85


def test_builtin_fallback_when_no_menagerie_is_found(monkeypatch, caplog):
    monkeypatch.setattr(assets, "_warned", False)
    monkeypatch.setenv("MENAGERIE_ROOT", "/nonexistent")
    monkeypatch.setattr(assets, "_menagerie_package", lambda: None)
    with caplog.at_level(logging.WARNING, logger="indgen.twin"):
        first, second = assets.robot_source(), assets.robot_source()
    assert first.kind == second.kind == "builtin"
    assert len([r for r in caplog.records if "built-in FR3" in r.message]) == 1  # said once
    w = DroidTwinWorld(cameras=False)
    obs = w.reset(setup("scale", 0))
    assert w.source.kind == "builtin"
    np.testing.assert_allclose(obs["joint_position"], scene.RESET_Q, atol=0.02)  # DROID's reset pose
    lo, hi = w.m.jnt_range[w.m.joint("fr3_joint4").id]
    assert (round(lo, 4), round(hi, 4)) == (-3.0421, -0.1518)  # the FR3's published limit (not the Panda's)


def _run(world, v, ticks, gripper=0.0):
    for _ in range(ticks):
        world.step({"joint_velocity": v, "gripper": gripper})


@pytest.mark.parametrize("joint", range(7))
def test_each_joint_tracks_droid_velocity_commands(world, joint):
    """A normalised velocity v moves the joint by 0.2 v rad per 15 Hz tick (DROID): at least 95%
    of it, and the other joints stay put."""
    world.reset(setup("stack", 0))
    q0 = world.joint_positions()
    v = np.zeros(7)
    v[joint] = -0.5 if joint == 3 else 0.5
    _run(world, v, 5)
    _run(world, np.zeros(7), 1)  # the motion is measured once the arm is at rest again
    dq = world.joint_positions() - q0
    commanded = v[joint] * 0.2 * 5
    assert 0.95 <= dq[joint] / commanded <= 1.05, f"{world.source.kind}: joint {joint + 1} moved {dq[joint]:.4f}"
    assert np.abs(np.delete(dq, joint)).max() < 0.01


def test_whole_arm_tracks_a_combined_motion_and_holds_under_gravity(world):
    world.reset(setup("stack", 0))
    q0 = world.joint_positions()
    v = np.array([0.3, 0.4, -0.3, 0.4, 0.5, -0.4, 0.6])
    _run(world, v, 6)
    _run(world, np.zeros(7), 1)  # the tick in which the arm comes to rest
    moved = world.joint_positions() - q0
    ratio = moved @ (v * 0.2 * 6) / np.linalg.norm(v * 0.2 * 6) ** 2
    assert 0.95 <= ratio <= 1.05, f"{world.source.kind}: tracked {ratio:.3f} of the commanded motion"
    held = world.joint_positions()
    _run(world, np.zeros(7), 45)  # then 3 s at zero velocity
    assert np.abs(world.joint_positions() - held).max() < 1e-3, "the arm sagged under gravity"


def test_the_arm_holds_the_reset_pose_under_gravity(world):
    world.reset(setup("scale", 0))
    q0 = world.joint_positions()
    _run(world, np.zeros(7), 75)  # 5 s
    assert np.abs(world.joint_positions() - q0).max() < 1e-3


def test_velocities_above_one_are_scaled_not_clipped(twin):
    twin.reset(setup("stack", 0))
    q0 = twin.joint_positions()
    _run(twin, np.array([0.0, 0.0, 0.0, 0.0, 2.0, 1.0, 0.0]), 5)  # DROID scales by the peak: (1.0, 0.5)
    _run(twin, np.zeros(7), 1)
    dq = twin.joint_positions() - q0
    assert dq[4] == pytest.approx(1.0 * 0.2 * 5, rel=0.05)
    assert dq[5] == pytest.approx(0.5 * 0.2 * 5, rel=0.05)


@pytest.mark.parametrize("k", range(5))
def test_stack_levels_raise_the_blue_block_by_a_quarter_inch_each(twin, k):
    twin.reset(setup("stack", k))
    blue = twin.object_poses()["blue_block"]
    assert blue[2] == pytest.approx(k * to_si(0.25, "in") + scene.BLOCK / 2, abs=1e-3)
    assert ("spacer" in twin.object_names) == (k > 0)


@pytest.mark.parametrize("k", range(5))
def test_scale_levels_grow_the_bowl(twin, k):
    twin.reset(setup("scale", k))
    s = 1.0 + 0.15 * k
    base = twin.m.geom("bowl_base")
    assert base.size[0] == pytest.approx((scene.BOWL_R + scene.BOWL_T) * s)
    wall = twin.m.geom("bowl_wall0")
    assert wall.size[2] == pytest.approx(scene.BOWL_H * s / 2)
    assert twin.layout.bowl_scale == pytest.approx(s)


def _settle(world, ticks=10):
    _run(world, np.zeros(7), ticks)


def test_orange_block_resting_on_the_blue_block_is_a_success(twin):
    twin.reset(setup("stack", 2))
    blue = twin.object_poses()["blue_block"]
    twin.place("orange_block", blue[:3] + [0, 0, scene.BLOCK + 0.001], blue[3:])
    _settle(twin)
    ev = twin.evaluate()
    assert ev.outcome is Outcome.SUCCESS, ev.reason


def test_orange_block_beside_the_blue_block_is_a_failure(twin):
    twin.reset(setup("stack", 0))
    blue = twin.object_poses()["blue_block"]
    twin.place("orange_block", blue[:3] + [0.0, scene.BLOCK + 0.01, 0.0])
    _settle(twin)
    ev = twin.evaluate()
    assert ev.outcome is Outcome.FAILURE and "not on the blue block" in ev.reason


def test_orange_block_half_over_the_edge_is_a_failure(twin):
    twin.reset(setup("stack", 1))
    blue = twin.object_poses()["blue_block"]
    twin.place("orange_block", blue[:3] + [0.0, 0.7 * scene.BLOCK, scene.BLOCK + 0.001])
    _settle(twin, 20)  # it tips off
    assert twin.evaluate().outcome is Outcome.FAILURE


def test_cup_standing_in_the_bowl_is_a_success_at_every_bowl_size(twin):
    for k in (0, 4):
        twin.reset(setup("scale", k))
        bowl = twin.object_poses()["bowl"]
        thick = scene.BOWL_T * twin.layout.bowl_scale
        twin.place("cup", bowl[:3] + [0.01, 0.0, thick + scene.CUP_H / 2 + 0.001])
        _settle(twin)
        ev = twin.evaluate()
        assert ev.outcome is Outcome.SUCCESS, f"k={k}: {ev.reason}"


def test_cup_beside_the_bowl_or_lying_in_it_is_a_failure(twin):
    twin.reset(setup("scale", 0))
    bowl = twin.object_poses()["bowl"]
    twin.place("cup", bowl[:3] + [0.0, 0.2, scene.CUP_H / 2 + 0.001])
    _settle(twin)
    assert twin.evaluate().outcome is Outcome.FAILURE
    twin.reset(setup("scale", 4))
    bowl = twin.object_poses()["bowl"]
    lying = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]  # on its side
    twin.place("cup", bowl[:3] + [0.0, 0.0, scene.BOWL_T * 1.6 + scene.CUP_R + 0.002], lying)
    _settle(twin)
    ev = twin.evaluate()
    assert ev.outcome is Outcome.FAILURE and "tipped" in ev.reason


def test_a_gripper_still_holding_the_block_is_not_a_success(twin):
    """On the blue block but not let go: not what a person calls done."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.oracle import TwinOracle

    s = setup("stack", 0, seed=3)
    obs = twin.reset(s)
    oracle, spec = TwinOracle(), DroidSpec()
    for step in range(250):  # the oracle carries the block over the blue one ...
        action = oracle.infer(spec.request(obs, s, step))["actions"][0]
        if action[7] < 0.5 and twin.gripper_position() > 0.3:
            break  # ... and would now open
        obs = twin.step({"joint_velocity": action[:7], "gripper": float(action[7] > 0.5)}).observation
    else:
        pytest.fail("the oracle never reached the release")
    for _ in range(5):  # instead: keep it closed and press the block down onto the blue block
        down = oracle.joint_velocities(twin.joint_positions(), np.array([0.0, 0.0, -0.04, 0.0, 0.0, 0.0]))
        twin.step({"joint_velocity": down, "gripper": 1.0})
    _run(twin, np.zeros(7), 3, gripper=1.0)
    ev = twin.evaluate()
    assert ev.outcome is Outcome.FAILURE and ev.reason == "gripper still holding the orange block", ev.reason


def test_interpenetrating_objects_make_the_setup_invalid(twin):
    twin.reset(setup("stack", 0))
    blue = twin.object_poses()["blue_block"]
    twin.place("orange_block", blue[:3] + [0.01, 0.0, 0.0])  # inside the blue block
    with pytest.raises(InvalidSetup, match="interpenetrate"):
        twin.check_penetration()


def test_an_unknown_task_is_an_invalid_setup_not_a_failure(twin):
    from dataclasses import replace

    with pytest.raises(InvalidSetup, match="runs the tasks"):
        twin.reset(replace(setup("stack", 0), axis="pour"))


def test_non_finite_or_misshapen_velocities_are_refused(twin):
    twin.reset(setup("stack", 0))
    with pytest.raises(ValueError):
        twin.step({"joint_velocity": [np.nan] * 7, "gripper": 0.0})
    with pytest.raises(ValueError):
        twin.step({"joint_velocity": [0.1] * 6, "gripper": 0.0})


def test_cameras_render_policy_size_and_full_size_on_request():
    w = DroidTwinWorld(cameras=["exterior_1", "wrist"])
    try:
        obs = w.reset(setup("stack", 0))
        assert set(obs["images"]) == {"exterior_1", "wrist"}
        assert obs["images"]["exterior_1"].shape == (224, 224, 3)
        assert obs["images"]["wrist"].std() > 5  # not blank
        full = w.render("exterior_2", (720, 1280))
        assert full.shape == (720, 1280, 3) and full.std() > 5
    finally:
        w.close()


@pytest.mark.slow
@pytest.mark.parametrize("axis", ["stack", "scale"])
def test_the_oracle_solves_every_level_of_both_axes(world, axis):
    """In-process, both robot models; the certification through the graph is in test_twin_graph."""
    from indgen_core.episode import run_episode
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.oracle import TwinOracle

    oracle = TwinOracle(builtin=world.source.kind == "builtin")
    for k in range(5):
        for seed in (0, 1):
            result = run_episode(world, oracle.infer, DroidSpec(), setup(axis, k, seed))
            assert result.outcome is Outcome.SUCCESS, f"{world.source.kind} {axis} k={k} seed={seed}: {result.reason}"
            assert result.steps < 120


@pytest.mark.slow
def test_train_bc_command_writes_a_loadable_checkpoint_and_serve_policy_refuses_a_missing_one(tmp_path):
    import subprocess
    import sys

    from indgen_sim.twin.bc import TwinBCPolicy

    out = tmp_path / "bc.pt"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "twin", "train-bc", "--demos", "2", "--rounds",
                           "0", "--epochs", "1", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"checkpoint: {out}" in proc.stdout
    policy = TwinBCPolicy(out)
    s = setup("stack", 0)
    from indgen_core.specs.droid import DroidSpec

    with DroidTwinWorld(cameras=False) as w:
        reply = policy.infer(DroidSpec().request(w.reset(s), s, 0))
    assert reply["actions"].shape == (1, 8) and np.all(np.isfinite(reply["actions"]))
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "serve-policy", "droid_twin_bc", "--checkpoint",
                           str(tmp_path / "missing.pt")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "run `indgen twin train-bc`" in proc.stderr


def test_a_checkpoint_from_an_older_input_layout_is_refused_in_one_sentence(tmp_path):
    """The policy's state features grew (the oracle's switching distances); a checkpoint that
    reads the old layout must say "retrain", not fail deep in torch with a shape mismatch, and
    `indgen twin demo` must see it as outdated (it retrains then)."""
    import subprocess
    import sys

    from indgen_sim.twin import bc, policy_input

    ckpt = bc.train(np.zeros((16, policy_input.FEATURES), np.float32), np.zeros((16, 7), np.float32), epochs=1)
    current = bc.save(ckpt, tmp_path / "current.pt", {})
    old = bc.save({**ckpt, "mean": ckpt["mean"][:25], "std": ckpt["std"][:25]}, tmp_path / "old.pt", {})
    assert not bc.outdated(current) and bc.outdated(old) and not bc.outdated(tmp_path / "missing.pt")
    bc.TwinBCPolicy(current)
    with pytest.raises(bc.IndGenError, match="predates the current input layout; retrain it"):
        bc.TwinBCPolicy(old)
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "serve-policy", "droid_twin_bc", "--checkpoint",
                           str(old)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "predates the current input layout" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
