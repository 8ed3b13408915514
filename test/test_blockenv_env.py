"""BlockEnv: the construction's invariants at every level, the legality rule, the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from indgen_sim.blockenv import env as E
from indgen_sim.blockenv.demos import eval_seeds, generate
from indgen_sim.blockenv.oracle import arm_choice, oracle_actions


def layout_grid(k: int, pad: int = 12) -> tuple[np.ndarray, tuple[int, int]]:
    size = 2 * pad + 1
    grid = np.zeros((size, size), dtype=np.int8)
    g = (pad, pad)
    fwd, flp = E.chains(k)
    for r, c in np.vstack([fwd, flp]):
        grid[g[0] + r, g[1] + c] = E.DISTRACTOR
    grid[g] = E.GOAL
    return grid, g


def graspable(grid: np.ndarray) -> set[tuple[int, int]]:
    legal = E.legal_grasps(grid[None])[0].any(-1)
    return {tuple(map(int, rc)) for rc in np.argwhere(legal)}


@pytest.mark.parametrize("k", range(1, 11))
def test_chain_invariants(k):
    fwd, flp = E.chains(k)
    grid, g = layout_grid(k)
    blocks_fwd = {tuple(map(int, p)) for p in fwd}
    blocks_flp = {tuple(map(int, p)) for p in flp}
    # the chains never overlap, and neither touches the goal cell
    assert len(blocks_fwd) == len(blocks_flp) == k
    assert not blocks_fwd & blocks_flp and (0, 0) not in blocks_fwd | blocks_flp
    # only the two tips are graspable: not the goal, no inner block
    tips = {(g[0] + int(fwd[-1][0]), g[1] + int(fwd[-1][1])), (g[0] + int(flp[-1][0]), g[1] + int(flp[-1][1]))}
    assert graspable(grid) == tips
    # removing either chain completely makes the goal graspable
    for chain in (fwd, flp):
        cleared = grid.copy()
        for r, c in chain:
            cleared[g[0] + r, g[1] + c] = E.EMPTY
        assert g in graspable(cleared)


@pytest.mark.parametrize("k", range(1, 10))
def test_outermost_blocks_of_the_next_level_lie_strictly_outside_this_levels_hull(k):
    fwd, flp = E.chains(k)
    pts = np.vstack([[0, 0], fwd, flp]).astype(float)
    nxt_fwd, nxt_flp = E.chains(k + 1)
    for tip in (nxt_fwd[-1], nxt_flp[-1]):
        if len(pts) >= 3 and np.linalg.matrix_rank(pts - pts[0]) == 2:
            hull = ConvexHull(pts)
            # strictly outside: positive distance from at least one facet's half-plane
            assert (hull.equations[:, :2] @ tip + hull.equations[:, 2]).max() > 1e-9
        assert tuple(tip) not in {tuple(p) for p in pts.astype(int)}


def test_first_required_action_at_l3_never_appears_in_l0_l2_demonstrations():
    """Relative to the goal, the grasps the oracle makes first at L3 are never made at L0-L2."""
    demos = generate([0, 1, 2], 300)
    goal = np.argwhere(demos.grids[:, 0] == E.GOAL)[:, 1:]
    seen = set()
    for e in range(len(demos)):
        for t in range(demos.lengths[e]):
            r, c, th = demos.actions[e, t]
            seen.add((int(r - goal[e, 0]), int(c - goal[e, 1]), int(th)))
    fwd, flp = E.chains(3)
    first_at_l3 = {(int(fwd[-1][0]), int(fwd[-1][1]), E.tip_orientation(3, 0)),
                   (int(flp[-1][0]), int(flp[-1][1]), E.tip_orientation(3, 1))}
    assert first_at_l3 and not first_at_l3 & seen


def test_the_legality_rule():
    grid = np.zeros((1, 5, 5), dtype=np.int8)
    grid[0, 2, 2] = E.GOAL
    legal = E.legal_grasps(grid)[0]
    assert legal[2, 2].all() and legal.sum() == 2  # a lone block: both approaches
    grid[0, 1, 2] = E.DISTRACTOR  # a block above: no vertical grasp of the goal
    legal = E.legal_grasps(grid)[0]
    assert not legal[2, 2, E.VERTICAL] and legal[2, 2, E.HORIZONTAL]
    grid[0, 2, 3] = E.DISTRACTOR  # and one to the right: the goal is stuck
    assert not E.legal_grasps(grid)[0][2, 2].any()
    edge = np.zeros((1, 3, 3), dtype=np.int8)
    edge[0, 0, 0] = E.DISTRACTOR  # cells beyond the border count as free
    assert E.legal_grasps(edge)[0][0, 0].all()


def test_step_semantics():
    env = E.BlockEnvBatch(1)
    env.reset(1, [7])
    gr, gc = env.goal[0]
    start = env.grids.copy()
    assert not env.step(np.array([[gr, gc, 0]]))[0]  # the goal is blocked
    assert (env.grids == start).all() and env.steps[0] == 1 and not env.done[0]
    assert not env.step(np.array([[0, 0, 0]]) if start[0, 0, 0] == 0 else np.array([[15, 15, 0]]))[0]  # empty
    assert env.step(np.array([[gr + 1, gc, E.HORIZONTAL]]))[0]  # the forward tip
    assert env.grids[0, gr + 1, gc] == E.EMPTY and env.removed[0] == 1
    assert env.step(np.array([[gr, gc, E.VERTICAL]]))[0]
    assert env.done[0] and env.success[0] and env.steps[0] == 4


def test_step_limit_ends_with_failure_and_finished_episodes_ignore_actions():
    env = E.BlockEnvBatch(2)
    env.reset([2, 0], [3, 4])
    for _ in range(E.step_limit(2)):
        env.step(np.array([[0, 0, 1], [0, 0, 1]]))
    assert env.done.all() and not env.success[0]
    assert env.steps[0] == E.step_limit(2) and env.steps[1] == E.step_limit(0)
    grids = env.grids.copy()
    env.step(np.array([[0, 0, 0], [0, 0, 0]]))
    assert (env.grids == grids).all() and env.steps[0] == E.step_limit(2)


def test_placement_is_seeded_uniform_and_fits():
    env = E.BlockEnvBatch(4000)
    seeds = np.arange(4000)
    env.reset(10, seeds)
    layout = E.Layout.of(10)
    assert (env.goal[:, 0] >= layout.r_range[0]).all() and (env.goal[:, 0] <= layout.r_range[1]).all()
    rows = np.bincount(env.goal[:, 0] - layout.r_range[0])
    assert len(rows) == layout.r_range[1] - layout.r_range[0] + 1 == 6
    assert rows.min() > 4000 / 6 * 0.8  # every placement is used about equally
    again = E.BlockEnvBatch(4000)
    again.reset(10, seeds)
    assert (again.grids == env.grids).all()
    assert (env.grids == E.DISTRACTOR).sum(axis=(1, 2)).tolist() == [20] * 4000


def test_oracle_solves_every_level_optimally():
    seeds = eval_seeds(200)
    for k in range(E.K_MAX + 1):
        env = E.BlockEnvBatch(len(seeds))
        env.reset(k, seeds)
        arms = arm_choice(seeds)
        while not env.done.all():
            env.step(oracle_actions(env.grids, arms))
        assert env.success.all(), k
        assert (env.steps == k + 1).all(), k
        assert (env.removed == k).all(), k
    assert 0.4 < arm_choice(seeds).mean() < 0.6


def test_grid_fits_level_10_and_documented_limits():
    assert E.GRID == 16
    assert E.Layout.of(10).r_range == (5, 10)  # an 11 x 11 structure with 6 placements per axis
    assert [E.step_limit(k) for k in (0, 3, 10)] == [6, 15, 36]
    with pytest.raises(ValueError):
        E.Layout.of(11, grid=11)


def test_the_random_legal_control_picks_only_legal_grasps_the_same_batched_and_served():
    from indgen_sim.blockenv.env import BlockEnvBatch, legal_grasps
    from indgen_sim.blockenv.oracle import random_legal_actions
    from indgen_sim.blockenv.policies import BlockEnvRandomLegalPolicy

    seeds = np.arange(200, dtype=np.uint64) + 12345
    env = BlockEnvBatch(len(seeds))
    env.reset(5, seeds)
    policy = BlockEnvRandomLegalPolicy()
    step, chosen = 0, set()
    while not env.done.all():
        grids = env.grids.copy()
        actions = random_legal_actions(grids, seeds, step)
        legal = legal_grasps(grids)
        live = ~env.done
        assert legal[np.arange(len(seeds)), actions[:, 0], actions[:, 1], actions[:, 2]][live].all()
        for i in (0, 17):  # one at a time, as `indgen serve-policy blockenv_random_legal` answers
            served = policy.infer({"observation/grid": grids[i], "episode/seed": seeds[i], "episode/step": step})
            assert served["actions"][0].tolist() == actions[i].tolist()
        chosen |= {tuple(a) for a in actions[live].tolist()}
        env.step(actions)
        step += 1
    assert env.success.all() and len(set(env.steps.tolist())) > 1 and len(chosen) > 10
