"""Training the twin's policies on more levels than tau_0 (`indgen twin train-bc --axis A
--levels L --seed S`): the paper's section-4 experiment needs the same number of episodes spread
over tau_0..tau_n, independent seeds, and a checkpoint that says what it was trained on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from indgen_core.axes.progression import library
from indgen_core.errors import IndGenError
from indgen_sim.twin.training_plan import SEED_STRIDE, TAU0, TrainingPlan


def test_tau0_plan_gives_the_setups_training_always_used():
    """Seed 0 at tau_0 is the training before plans existed: same ids, seeds and levels, so its
    checkpoints are reproduced bit for bit."""
    setups = list(TAU0.setups(6, 7_000_000, "droid_twin_oracle", "demo"))
    assert [s.axis for s in setups] == ["stack", "scale"] * 3
    assert [s.level for s in setups] == [0] * 6 and all(s.in_distribution for s in setups)
    assert [s.seed for s in setups] == [7_000_000 + e for e in range(6)]
    assert [s.trial_id for s in setups] == [f"demo-7000000-{e}" for e in range(6)]
    assert TAU0.describe() == "tau_0"


def test_a_spread_plan_keeps_the_episode_count_and_cycles_one_axis_through_its_levels():
    plan = TrainingPlan.spread("scale", [0, 1, 2])
    setups = list(plan.setups(12, 9_000_000, "droid_twin_vision", "vision"))
    assert len(setups) == 12
    assert [s.level for s in setups if s.axis == "stack"] == [0] * 6
    assert [s.level for s in setups if s.axis == "scale"] == [0, 1, 2, 0, 1, 2]
    for s in setups:  # each setup carries its level's real parameters (the bowl's scale)
        level = library().get(s.axis).level(s.level)
        assert s.parameters == level.parameters and s.in_distribution == level.in_distribution
    assert {p.value for s in setups if s.axis == "scale" for p in s.parameters} == {
        p.value for k in (0, 1, 2) for p in library().get("scale").level(k).parameters
    }
    assert plan.describe() == "scale levels 0, 1, 2 (stack tau_0)"
    assert plan.record() == {
        "levels": {"stack": [0], "scale": [0, 1, 2]},
        "seed": 0,
        "text": "scale levels 0, 1, 2 (stack tau_0)",
    }


def test_seeds_shift_every_stream_clear_of_the_others():
    bases = (7_000_000, 8_000_000, 8_003_000, 9_000_000, 9_050_000, 9_103_000, 9_500_000)
    used = {}
    for seed in (0, 1, 2):
        plan = TrainingPlan.spread("scale", [0, 1, 2], seed)
        # the largest stream: 1,500 view layouts from the highest base
        used[seed] = {s.seed for base in bases for s in plan.setups(1500, base, "p", "x")}
        assert plan.stream(9_500_000) == 9_500_000 + seed * SEED_STRIDE
    assert not used[0] & used[1] and not used[1] & used[2] and not used[0] & used[2]
    assert TrainingPlan(seed=2).describe() == "tau_0, seed 2"


@pytest.mark.parametrize(
    ("axis", "levels", "seed", "message"),
    [
        (None, [0, 1], 0, "--levels needs --axis, one of stack, scale"),
        ("scale", [0, 5], 0, "levels [5] are outside the scale axis' range 0..4"),
        ("scale", None, 0, "--axis names the axis whose levels --levels spreads over: give --levels too"),
        ("scale", [0, 1], 100, "--seed 100 is outside 0..99"),
    ],
)
def test_a_plan_that_cannot_be_trained_is_refused_in_one_sentence(axis, levels, seed, message):
    with pytest.raises(IndGenError) as err:
        TrainingPlan.spread(axis, levels, seed)
    assert str(err.value) == message


def test_train_bc_refuses_a_bad_plan_before_training(tmp_path):
    out = tmp_path / "v.pt"
    proc = subprocess.run(
        [sys.executable, "-m", "indgen_core.cli", "twin", "train-bc", "--vision", "--axis", "stack", "--levels",
         "0-9", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "indgen: error: levels [5, 6, 7, 8, 9] are outside the stack axis' range 0..4"
    assert not out.exists()


@pytest.mark.slow
def test_a_checkpoint_records_the_levels_it_trained_on_and_its_policy_says_so(tmp_path):
    """A real (tiny) training at scale levels 0 and 1: the episodes it ran are counted where
    they ran, and the policy's metadata (published on /indgen/policy_status) names the plan."""
    proc = subprocess.run(
        [sys.executable, "-m", "indgen_core.cli", "twin", "train-bc", "--robot", "builtin", "--demos", "4",
         "--rounds", "0", "--epochs", "1", "--axis", "scale", "--levels", "0,1", "--seed", "3",
         "--out", str(tmp_path / "bc.pt")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    from indgen_sim.twin import bc

    ckpt = bc.load_checkpoint(tmp_path / "bc.pt", "twin policy", "indgen twin train-bc")
    assert ckpt["info"]["plan"] == {
        "levels": {"stack": [0], "scale": [0, 1]},
        "seed": 3,
        "text": "scale levels 0, 1 (stack tau_0), seed 3",
    }
    assert ckpt["info"]["rounds"][0]["levels"] == {"stack tau_0": 2, "scale tau_0": 1, "scale tau_1": 1}
    policy = bc.TwinBCPolicy(tmp_path / "bc.pt")
    assert policy.metadata["trained_on"] == "scale levels 0, 1 (stack tau_0), seed 3 oracle labels"
    assert bc.trained_on_levels({"info": {}}) == "tau_0 oracle labels"  # checkpoints from before plans
