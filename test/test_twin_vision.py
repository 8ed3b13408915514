"""The camera-based tau_0 policy's checkpoint and its refusals: what it was trained on is
recorded, the other FR3 model is refused in one sentence (in-process and by a world node),
and a request without pi0.5-DROID's images is refused, not guessed at."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import numpy as np
import pytest

from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.errors import IndGenError
from indgen_core.nodes.world_watch import WorldWatch
from indgen_sim.twin import tasks
from indgen_sim.twin.vision import TwinVisionPolicy
from indgen_sim.twin.vision.data import FRAME_KEYS, views
from indgen_sim.twin.vision.features import (
    IMAGE,
    PROPRIO,
    TARGETS,
    holding,
    in_hand_offsets,
    proprio,
    targets,
    task_index,
    task_scales,
)
from indgen_sim.twin.vision.policy import CHUNK

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_the_checkpoint_records_its_robot_model_and_what_it_was_trained_on(vision_checkpoint):
    ckpt = torch.load(vision_checkpoint, map_location="cpu", weights_only=True)
    assert ckpt["kind"] == "vision" and ckpt["robot_model"] == "builtin" and ckpt["chunk"] == CHUNK
    info = ckpt["info"]
    assert info["robot_model"] == "builtin" and info["rounds"][0]["episodes"] == 2 and info["frames"] > 0
    assert info["train_seconds"] > 0
    assert sorted(ckpt["in_hand"]) == sorted(tasks.TASKS)
    assert np.asarray(ckpt["perception"]["mean"]).shape == (len(tasks.TASKS), TARGETS)
    assert all(len(offset) == 3 and max(map(abs, offset)) < 0.05 for offset in ckpt["in_hand"].values())
    policy = TwinVisionPolicy(vision_checkpoint)
    assert policy.metadata["robot_model"] == "builtin" and policy.metadata["privileged"] is False


@pytest.mark.slow
def test_the_other_robot_model_is_refused_in_one_sentence(vision_checkpoint):
    from indgen_sim.twin.world import DroidTwinWorld

    ckpt = torch.load(vision_checkpoint, map_location="cpu", weights_only=True)
    ckpt["robot_model"] = "menagerie"
    policy = TwinVisionPolicy(ckpt)
    executor = InProcessExecutor(DroidTwinWorld(cameras=["exterior_1", "wrist"], builtin=True),
                                 policies={"droid_twin_vision": policy})
    with pytest.raises(IndGenError, match="trained on the menagerie FR3's images and this world renders the "
                                          "builtin one: run the world with builtin_fr3:=false"):
        executor.policy("droid_twin_vision")
    executor.close()

    # a world node hears the policy's metadata on /indgen/policy_status and stops every episode
    from indgen_msgs.msg import PolicyStatus

    watch = WorldWatch(world_robot="builtin")
    watch.on_policy_status(PolicyStatus(connected=True, metadata_json=json.dumps(policy.metadata)))
    assert "trained on the menagerie FR3's images" in watch.reason(0.0, 10.0)
    watch.on_policy_status(PolicyStatus(connected=True, metadata_json="{not json"))
    assert watch.reason(0.0, 10.0) is None


@pytest.mark.slow
def test_a_request_without_the_images_or_with_another_task_is_refused(vision_checkpoint):
    policy = TwinVisionPolicy(vision_checkpoint)
    request = {"observation/joint_position": np.zeros(7), "observation/gripper_position": np.zeros(1),
               "prompt": "Place the orange block on the blue block."}
    with pytest.raises(ValueError, match="needs pi05_droid's request; missing observation/exterior_image_1_left"):
        policy.infer(request)
    request |= {"observation/exterior_image_1_left": np.zeros((224, 224, 3), np.uint8),
                "observation/wrist_image_left": np.zeros((224, 224, 3), np.uint8)}
    assert policy.infer(request)["actions"].shape == (CHUNK, 8)
    with pytest.raises(ValueError, match="knows the stack and cup-in-bowl tasks"):
        policy.infer(request | {"prompt": "fold the towel"})


@pytest.mark.slow
def test_a_held_object_is_where_the_hand_holds_it(vision_checkpoint):
    """The gripper stopped part-closed (0.48 on the block): the policy puts the block at the
    learned place in the hand, whatever the cameras show; open, or closed on nothing (1.0), it
    goes by perception."""
    from indgen_sim.twin import policy_input

    policy = TwinVisionPolicy(vision_checkpoint)
    policy.in_hand["stack"] = np.array([0.004, -0.002, 0.006])
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.8])
    request = {"observation/joint_position": q, "prompt": "Place the orange block on the blue block.",
               "observation/exterior_image_1_left": np.zeros((224, 224, 3), np.uint8),
               "observation/wrist_image_left": np.zeros((224, 224, 3), np.uint8)}
    kin = policy_input.kinematics(True)
    kin.set(q)
    pinch, rot = kin.pinch()
    held = policy.perceive(request | {"observation/gripper_position": np.array([0.48])})[3]
    np.testing.assert_allclose(held[0:3], pinch + rot @ policy.in_hand["stack"], atol=1e-9)
    for g in (0.0, 1.0):
        seen = policy.perceive(request | {"observation/gripper_position": np.array([g])})[3]
        assert np.linalg.norm(seen[0:3] - held[0:3]) > 1e-4
    assert not holding(0.0) and holding(0.48) and holding(0.31) and not holding(1.0)


def test_the_in_hand_offset_is_the_median_over_frames_that_hold_the_object(caplog):
    from indgen_sim.twin import policy_input

    kin, rng = policy_input.kinematics(True), np.random.default_rng(0)
    offset = np.array([0.004, -0.002, 0.0055])
    state, target = [], []
    for i in range(40):
        q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.8]) + rng.normal(0, 0.2, 7)
        g = (0.48, 0.0, 1.0, 0.31)[i % 4]  # holding the block, open, closed on nothing, holding the cup
        task = "scale" if i % 4 == 3 else "stack"
        row = proprio(q, g, task, kin)
        pinch, rot = kin.pinch()
        pick = pinch + rot @ (offset + rng.normal(0, 0.001, 3)) if g in (0.48, 0.31) else rng.uniform(-0.3, 0.3, 3)
        state.append(row)
        target.append(np.concatenate([pick, np.zeros(5)]))
    found = in_hand_offsets({"state": np.array(state), "target": np.array(target)})
    np.testing.assert_allclose(found["stack"], offset, atol=0.001)
    np.testing.assert_allclose(found["scale"], offset, atol=0.001)
    with caplog.at_level(logging.WARNING, logger="indgen_sim.twin.vision.features"):
        assert in_hand_offsets({"state": np.array(state[1:3]), "target": np.array(target[1:3])})["stack"] == [0.0] * 3
    assert caplog.records[0].levelno == logging.WARNING
    assert "no training frame holds the stack task's object" in caplog.messages[0]


def test_labels_are_scaled_per_task_with_a_floor():
    """Each task's labels by their own mean and spread (the bowl's place is not the blue block's),
    and a label that hardly varies (a resting block's height) is not blown up."""
    rng = np.random.default_rng(1)
    n = 200
    task = np.arange(n) % 2  # stack, scale
    state = np.zeros((n, PROPRIO), np.float32)
    state[np.arange(n), 1 + task] = 1.0
    target = np.zeros((n, TARGETS), np.float32)
    target[:, 4] = np.where(task == 0, -0.08, -0.15) + rng.normal(0, 0.015, n)  # the place's y
    target[:, 5] = np.where(task == 0, 0.025, 0.0)  # its height: constant per task
    mean, std = task_scales({"state": state, "target": target})
    assert mean.shape == std.shape == (len(tasks.TASKS), TARGETS)
    np.testing.assert_allclose(mean[:, 4], [-0.08, -0.15], atol=0.005)
    np.testing.assert_allclose(std[:, 4], [0.015, 0.015], atol=0.004)  # the spread within a task
    np.testing.assert_allclose(std[:, 5], [0.01, 0.01])  # the floor, not 0
    assert (task_index(state) == task).all()


@pytest.mark.slow
def test_a_checkpoint_from_before_the_in_hand_estimate_is_refused_in_one_sentence(vision_checkpoint, tmp_path):
    ckpt = torch.load(vision_checkpoint, map_location="cpu", weights_only=True)
    del ckpt["in_hand"]
    torch.save(ckpt, tmp_path / "old.pt")
    with pytest.raises(IndGenError, match=r"from before the in-hand estimate .* retrain it with `indgen twin "
                                          r"train-bc --vision`"):
        TwinVisionPolicy(tmp_path / "old.pt")


def test_a_state_checkpoint_is_not_taken_for_a_vision_one(tmp_path):
    torch.save({"state_dict": {}, "hidden": 8}, tmp_path / "bc.pt")
    with pytest.raises(IndGenError, match="is not a vision policy checkpoint"):
        TwinVisionPolicy(tmp_path / "bc.pt")
    with pytest.raises(IndGenError, match=r"no vision policy checkpoint at .*indgen twin train-bc --vision"):
        TwinVisionPolicy(tmp_path / "missing.pt")


def test_menagerie_training_without_the_menagerie_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no mujoco-menagerie cache either
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "twin", "train-bc", "--vision", "--robot",
                           "menagerie", "--out", str(tmp_path / "x.pt")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "--robot menagerie needs mujoco_menagerie's FR3: set MENAGERIE_ROOT" in proc.stderr
    assert not (tmp_path / "x.pt").exists()


def test_views_show_fresh_layouts_from_the_demonstrations_arm_poses_with_true_labels():
    """The extra perception samples: each layout a new tau_0 one, the arm where it was told
    (teleported, not simulated: the objects stay put), the labels the objects' true poses."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.scene import RESET_Q
    from indgen_sim.twin.training_plan import TAU0
    from indgen_sim.twin.world import DroidTwinWorld

    poses = np.array([RESET_Q, np.asarray(RESET_Q) + 0.15])
    got = views(3, poses, per_layout=2, builtin=True)
    assert {k: v.shape[0] for k, v in got.items()} == dict.fromkeys(FRAME_KEYS, 6)
    assert got["exterior"].shape[1:] == got["wrist"].shape[1:] == (IMAGE, IMAGE, 3)
    assert len({got["target"][i].tobytes() for i in (0, 2, 4)}) == 3  # three layouts
    assert np.array_equal(got["target"][0], got["target"][1])  # two arm poses, one layout
    with DroidTwinWorld(cameras=False, builtin=True) as world:
        setup = next(TAU0.setups(1, 9_500_000, "droid_twin_vision", "views"))
        obs = world.reset(setup)
        world.pose_arm(poses[1])
        assert np.allclose(world.joint_positions(), poses[1])
        # objects unmoved (to 0.1 mm: the reset's poses are from before its last physics substep)
        assert all(np.allclose(world.object_poses()[k], v, atol=1e-4) for k, v in obs["objects"].items())
        assert np.allclose(targets(DroidSpec().request(world.observe(), setup, 0)), got["target"][0])
        for bad in (np.full(7, np.nan), np.zeros(6)):
            with pytest.raises(ValueError, match="pose_arm needs 7 finite joint positions"):
                world.pose_arm(bad)


def test_negative_training_sizes_are_one_sentence(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "twin", "train-bc", "--vision", "--views", "-1",
                           "--out", str(tmp_path / "x.pt")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "--views cannot be negative" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.pt").exists()
