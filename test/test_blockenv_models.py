"""BlockEnv models: forward passes, losses, reproducible sampling, checkpoints, the served
policies, demonstrations on disk, and a --quick Table 1 end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from indgen_sim.blockenv import demos as demos_mod
from indgen_sim.blockenv.env import GRID, BlockEnvBatch
from indgen_sim.blockenv.models import MODELS, Actor
from indgen_sim.blockenv.models.common import gumbel_noise, legality_target
from indgen_sim.blockenv.train import TrainConfig, _episodes, _steps, load_checkpoint, save_checkpoint, train


@pytest.fixture(scope="module")
def demos():
    return demos_mod.generate([0, 1, 2], 40, noise=0.5)


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_pass_loss_and_actions(name, demos):
    torch.manual_seed(0)
    model = MODELS[name]()
    data = _episodes(demos) if model.data == "episodes" else _steps(demos)
    batch = {k: v[:16] for k, v in data.items()}
    if model.data == "tasks":
        loss, _ = model.meta_loss([(batch, batch), (batch, batch)])
    else:
        loss, _ = model.loss(batch)
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    env = BlockEnvBatch(5)
    seeds = np.arange(5, dtype=np.uint64)
    env.reset(2, seeds)
    actor = Actor(model, env.levels, seeds)
    for step in range(3):
        actions = actor.act(env.grids.copy(), step)
        assert actions.shape == (5, 3) and actions.dtype.kind == "i"
        assert ((actions[:, :2] >= 0) & (actions[:, :2] < GRID)).all() and set(actions[:, 2]) <= {0, 1}
        env.step(actions)


def test_sampling_is_reproducible_and_batch_independent():
    seeds = np.array([5, 6, 7], dtype=np.uint64)
    a = gumbel_noise(seeds, 3, 0, 8)
    b = gumbel_noise(seeds[1:], 3, 0, 8)
    assert np.array_equal(a[1:], b)  # an episode's draws do not depend on its neighbours
    assert not np.array_equal(gumbel_noise(seeds, 4, 0, 8), a)
    big = gumbel_noise(np.arange(2000, dtype=np.uint64), 0, 0, 50)
    assert abs(big.mean() - 0.5772) < 0.02  # Gumbel(0, 1) has mean = Euler's constant


def test_legality_target_matches_the_environment():
    env = BlockEnvBatch(3)
    env.reset(3, [1, 2, 3])
    target = legality_target(torch.as_tensor(env.grids.astype(np.int64)))
    assert target.shape == (3, GRID * GRID * 2)
    assert target.sum(1).tolist() == [2.0, 2.0, 2.0]  # two tips, one approach each


def _oracle_grids(k: int, n: int) -> np.ndarray:
    """Every grid the oracle passes through at level k (before each of its k + 1 grasps)."""
    from indgen_sim.blockenv.oracle import arm_choice, oracle_actions

    env = BlockEnvBatch(n)
    seeds = np.arange(n, dtype=np.uint64) + np.uint64(5_000)
    env.reset(k, seeds)
    arms, seen = arm_choice(seeds), []
    for _ in range(k + 1):
        seen.append(env.grids.copy())
        env.step(oracle_actions(env.grids, arms))
    assert env.success.all()
    return np.concatenate(seen)


@pytest.mark.slow
def test_ind_local_legality_head_learns_the_rule_on_l0_l2_and_keeps_it_to_l10():
    """The head is trained on L0-L2 grids only (its analytic target); held out, it calls every
    grasp on an occupied cell right, and so it does on grids of levels it never saw."""
    torch.manual_seed(0)
    demos = demos_mod.generate([0, 1, 2], 60, noise=0.5)
    model, info = train("ind", demos, TrainConfig(epochs=20, lr=1e-3, batch_size=32))
    assert info["legality_accuracy"] == 1.0
    for k in (3, 6, 10):
        grids = torch.as_tensor(_oracle_grids(k, 20).astype(np.int64))
        occupied = (grids != 0).flatten(1).repeat_interleave(2, dim=1)
        called = model.legal_probability(grids) > 0.5
        assert torch.equal(called[occupied], legality_target(grids).bool()[occupied]), f"level {k}"


def test_train_save_load_and_serve(tmp_path, demos):
    model, info = train("equivariant", demos, TrainConfig(epochs=2))
    assert info["val_accuracy"] > 0.3
    path = save_checkpoint(model, tmp_path / "equivariant.pt", info)
    again = load_checkpoint(path)
    for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    (tmp_path / "broken.pt").write_bytes(path.read_bytes()[:100])
    with pytest.raises(Exception, match="not a readable BlockEnv checkpoint"):
        load_checkpoint(tmp_path / "broken.pt")
    with pytest.raises(Exception, match="no BlockEnv checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")

    from indgen_core.axes.progression import library
    from indgen_core.episode import run_episode
    from indgen_core.records import TaskSetup
    from indgen_core.specs.blockenv import BlockEnvSpec
    from indgen_sim.blockenv.policies import BlockEnvModelPolicy, BlockEnvOraclePolicy
    from indgen_sim.blockenv.world import BlockEnvWorld

    level = library().get("blockenv_depth").level(4)
    spec, world = BlockEnvSpec(), BlockEnvWorld()
    for policy in (BlockEnvOraclePolicy(), BlockEnvModelPolicy("equivariant", checkpoint=path)):
        setup = TaskSetup("c", "t/k+4/000", "blockenv", "blockenv_depth", 4, False, level.parameters, 0, 123, "p")
        policy.reset()
        result = run_episode(world, policy.infer, spec, setup)
        assert result.success, (policy, result)
        assert result.reason == f"goal grasped after {result.steps} grasps"
        if isinstance(policy, BlockEnvOraclePolicy):
            assert result.steps == 5  # k + 1 grasps


def test_demonstrations_are_cached_with_their_seeds(tmp_path):
    d1, path = demos_mod.load_or_generate((0, 1, 2), 30, noise=0.5, directory=tmp_path)
    assert path.is_file()
    d2, _ = demos_mod.load_or_generate((0, 1, 2), 30, noise=0.5, directory=tmp_path)
    assert np.array_equal(d1.grids, d2.grids) and np.array_equal(d1.seeds, d2.seeds)
    assert sorted(set(d1.levels.tolist())) == [0, 1, 2] and len(d1) == 90
    assert int(d1.target.sum()) == 30 * (1 + 2 + 3)  # every oracle grasp is a target, once
    assert not set(d1.seeds.tolist()) & set(demos_mod.eval_seeds(100).tolist())


@pytest.mark.slow
def test_table1_quick_end_to_end(tmp_path):
    out = tmp_path / "t1"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "blockenv", "table1", "--quick", "--db",
                           str(tmp_path / "r.sqlite"), "--out", str(out), "--checkpoints", str(tmp_path / "ck"),
                           "--group", "quick", "--train-seed", "3"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Breaks at" in proc.stdout and "Oracle" in proc.stdout
    result = json.loads((out / "table1.json").read_text())
    assert set(result["rows"]) == {"oracle", "random_legal", *MODELS}
    assert result["config"]["seed"] == 3
    assert all(v == 1.0 for v in result["rows"]["oracle"]["rates"].values())
    # legality alone solves every level under the step limit (docs/results/table1.md, the control row)
    assert all(v == 1.0 for v in result["rows"]["random_legal"]["rates"].values())
    assert "Random legal grasp (control)" in proc.stdout
    assert (out / "report" / "success_per_level.png").is_file()
    for name in MODELS:
        assert (tmp_path / "ck" / f"{name}.pt").is_file()
    # --eval-only re-evaluates from the checkpoints and gets the same numbers
    again = subprocess.run([sys.executable, "-m", "indgen_core.cli", "blockenv", "table1", "--quick", "--eval-only",
                            "--db", str(tmp_path / "r.sqlite"), "--out", str(tmp_path / "t2"), "--checkpoints",
                            str(tmp_path / "ck"), "--group", "quick2"], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    rows2 = json.loads((tmp_path / "t2" / "table1.json").read_text())["rows"]
    for name in MODELS:
        assert rows2[name]["rates"] == result["rows"][name]["rates"], name
    report = subprocess.run([sys.executable, "-m", "indgen_core.cli", "report", "--group", "quick", "--db",
                             str(tmp_path / "r.sqlite"), "--out", str(tmp_path / "rep")], capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "rep" / "success_per_level.png").is_file()
