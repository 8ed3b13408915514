"""LIBERO-Object behind the world interface: offline first import, the axes applied after
reset, invalid setups, the oracle, the stricter success check and openpi's LIBERO spec."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from indgen_core.episode import run_episode
from indgen_core.records import Outcome, ParameterValue, TaskSetup
from indgen_core.specs.libero import LiberoSpec, axis_angle_to_quat_xyzw, quat_xyzw_to_axis_angle

STEP = {"libero_pick_y": ("pick_offset_y", 2.5), "libero_goal_y": ("goal_offset_y", 3.67)}


def setup(task: int, axis: str = "libero_pick_y", k: int = 0, trial: int = 0) -> TaskSetup:
    name, step = STEP[axis]
    return TaskSetup("test", f"t{task}-{axis}-{k}-{trial}", "libero", axis, k, k == 0,
                     (ParameterValue(name, k * step, "cm"),), trial, trial, "libero_oracle", options={"task": task})


@pytest.fixture(scope="module")
def world():
    from indgen_sim.libero.world import LiberoWorld

    w = LiberoWorld(cameras=False)
    yield w
    w.close()


def test_first_import_never_prompts_and_writes_its_config(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LIBERO_CONFIG_PATH"}
    env.update(XDG_DATA_HOME=str(tmp_path), HOME=str(tmp_path))
    code = ("from indgen_sim.libero import suite; suite.libero(); import os; name = suite.task_name(3);"
            "print('CONFIG=' + os.environ['LIBERO_CONFIG_PATH']); print('TASK=' + name)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line and line[:1].isupper())
    folder = said["CONFIG"]
    assert folder.startswith(str(tmp_path)) and os.path.isfile(os.path.join(folder, "config.yaml"))
    assert said["TASK"] == "pick_up_the_bbq_sauce_and_place_it_in_the_basket"


@pytest.mark.slow
@pytest.mark.parametrize("task", [0, 5, 9])
def test_the_oracle_solves_tasks_in_distribution(world, task):
    from indgen_sim.libero.oracle import LiberoOracle

    result = run_episode(world, LiberoOracle().infer, LiberoSpec(), setup(task))
    assert result.outcome is Outcome.SUCCESS, result.reason
    assert result.details["libero_success"] and result.details["strict_success"]


@pytest.mark.parametrize(("axis", "k"), [("libero_pick_y", 2), ("libero_goal_y", -2)])
def test_axes_move_the_right_object_by_the_right_step(world, axis, k):
    base = world.reset(setup(0, axis, 0))
    moved = world.reset(setup(0, axis, k))
    name = base["pick"] if axis == "libero_pick_y" else base["place"]
    delta = moved["objects"][name][:3] - base["objects"][name][:3]
    assert delta[1] == pytest.approx(k * STEP[axis][1] / 100, abs=0.004)
    assert abs(delta[0]) < 0.004
    other = base["place"] if axis == "libero_pick_y" else base["pick"]
    assert np.allclose(moved["objects"][other][:3], base["objects"][other][:3], atol=0.004)


def test_a_move_into_a_neighbour_is_an_invalid_setup(world):
    from indgen_sim.libero.oracle import LiberoOracle

    result = run_episode(world, LiberoOracle().infer, LiberoSpec(), setup(1, "libero_pick_y", -3))
    assert result.outcome is Outcome.INVALID and "interpenetrates" in result.reason


def test_an_object_held_above_the_basket_passes_liberos_check_but_not_ours(world):
    from indgen_sim.libero.oracle import LiberoOracle

    oracle, spec, s = LiberoOracle(), LiberoSpec(), setup(0)
    obs = world.reset(s)
    for step in range(250):
        action = oracle.infer(spec.request(obs, s, step))["actions"][0]
        if oracle.phase == "release":
            break
        obs = world.step(action).observation
    else:
        pytest.fail("the oracle never reached the basket")
    for _ in range(10):  # keep holding it there
        obs = world.step(np.array([0, 0, 0, 0, 0, 0, 1.0])).observation
    assert world._libero_success(), "LIBERO's own check counts the held object"
    ok, reason = world.strict_check()
    assert not ok and "held" in reason
    ev = world.evaluate()
    assert ev.outcome is Outcome.FAILURE
    assert ev.details == {"task": 0, "libero_success": True, "strict_success": False}


def test_libero_spec_matches_openpi():
    spec = LiberoSpec()
    img = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    obs = {"state": np.arange(8.0), "images": {"agentview": img, "wrist": img}, "language": "pick the milk"}
    s = TaskSetup("c", "t", "libero", "libero_pick_y", 0, True, (), 0, 7, "p")
    req = spec.request(obs, s, 0)
    assert req["prompt"] == "pick the milk" and req["observation/state"].shape == (8,)
    assert req["observation/image"].shape == (224, 224, 3)
    from openpi_client import image_tools

    np.testing.assert_array_equal(req["observation/image"], image_tools.resize_with_pad(img[::-1, ::-1], 224, 224))
    acts = spec.actions({"actions": np.array([[2.0, 0, 0, 0, 0, -3.0, 0.3]] * 8)})
    assert len(acts) == 5  # re-plan every 5 steps
    np.testing.assert_allclose(acts[0], [1.0, 0, 0, 0, 0, -1.0, 1.0])
    from indgen_core.specs import BadAction

    with pytest.raises(BadAction):
        spec.actions({"actions": np.full((1, 7), np.nan)})
    q = axis_angle_to_quat_xyzw(np.array([0.3, -1.2, 2.0]))
    np.testing.assert_allclose(quat_xyzw_to_axis_angle(q), [0.3, -1.2, 2.0], atol=1e-9)


def test_a_parameter_the_world_does_not_implement_is_refused_not_ignored(world):
    s = TaskSetup("c", "t", "libero", "my_axis", 1, False, (ParameterValue("pick_offset_z", 2.0, "cm"),), 0, 0,
                  "p", options={"task": 0})
    from indgen_core.world import InvalidSetup

    with pytest.raises(InvalidSetup, match="does not implement pick_offset_z"):
        world.reset(s)


@pytest.mark.slow
def test_distractors_are_extra_objects_away_from_the_task_and_the_oracle_still_solves_it(world):
    from indgen_sim import physics
    from indgen_sim.libero.oracle import LiberoOracle

    plain = world.reset(setup(0))
    s = TaskSetup("test", "d2", "libero", "libero_distractors", 2, False,
                  (ParameterValue("distractor_count", 2, "count"),), 0, 0, "libero_oracle", options={"task": 0})
    obs = world.reset(s)
    extra = sorted(set(obs["objects"]) - set(plain["objects"]))
    assert len(extra) == 2, extra
    for name in plain["objects"]:  # the task's own scene is the stock one
        np.testing.assert_allclose(obs["objects"][name][:3], plain["objects"][name][:3], atol=0.005)
    task = [world.bodies[world.pick], world.bodies[world.place]]
    assert not any(physics.in_contact(world.m, world.d, [world.bodies[n]], task) for n in extra)
    result = run_episode(world, LiberoOracle().infer, LiberoSpec(), s)
    assert result.outcome is Outcome.SUCCESS, result.reason


@pytest.mark.slow
def test_the_composed_axis_moves_the_pick_object_and_adds_distractors(world):
    plain = world.reset(setup(0))
    s = TaskSetup("test", "c1", "libero", "libero_pick_y_x_distractors", -1, False,
                  (ParameterValue("pick_offset_y", -2.5, "cm"), ParameterValue("distractor_count", 1, "count")),
                  0, 0, "libero_oracle", options={"task": 0})
    obs = world.reset(s)
    assert len(set(obs["objects"]) - set(plain["objects"])) == 1
    dy = obs["objects"][obs["pick"]][1] - plain["objects"][plain["pick"]][1]
    assert dy == pytest.approx(-0.025, abs=0.004)


@pytest.mark.slow
def test_the_scale_axis_scales_the_pick_objects_geometry_and_mass(world):
    def measure():
        b = world.bodies[world.pick]
        sizes = [world.m.geom_size[g].copy() for g in range(world.m.ngeom)
                 if world.m.geom_bodyid[g] == b and world.m.geom_type[g] == 6]
        return np.array(sizes), float(world.m.body_mass[b]), world._lowest_point(world.pick)

    world.reset(setup(0))
    sizes, mass, low = measure()
    k = 3
    s = TaskSetup("test", "s3", "libero", "libero_scale", k, False, (ParameterValue("object_scale", 1.2, "x"),),
                  0, 0, "libero_oracle", options={"task": 0})
    world.reset(s)
    sizes3, mass3, low3 = measure()
    np.testing.assert_allclose(sizes3, sizes * 1.2, rtol=1e-4)
    assert mass3 == pytest.approx(mass * 1.2**3, rel=0.02)
    assert low3 == pytest.approx(low, abs=0.004)  # still standing on the floor
    world.reset(setup(0))  # the next episode is the stock scene again
    assert measure()[1] == pytest.approx(mass)
