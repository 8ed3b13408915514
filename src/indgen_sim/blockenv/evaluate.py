"""Batched evaluation of BlockEnv policies: n episodes of one level stepped together, with
the same seeds, the same models and the same sampling as one episode through the ROS graph."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from indgen_sim.blockenv.demos import generate
from indgen_sim.blockenv.env import BlockEnvBatch
from indgen_sim.blockenv.models import Actor, BlockEnvModel
from indgen_sim.blockenv.oracle import RANDOM_LEGAL, arm_choice, oracle_actions, random_legal_actions

SUPPORT_SEED_BASE = 500_000_000  # MAML's few-shot support sets, disjoint from training and evaluation


@dataclass
class EpisodeOutcomes:
    success: np.ndarray
    steps: np.ndarray
    removed: np.ndarray


def support_for(model: BlockEnvModel, level: int) -> dict[str, torch.Tensor] | None:
    """The few-shot support set a model adapts on before rollout at `level` (MAML only)."""
    if model.data != "tasks":
        return None
    demos = generate([level], model.config["support_episodes"], seed_base=SUPPORT_SEED_BASE)
    grids, actions, levels = demos.steps()
    return {
        "grids": torch.as_tensor(grids, dtype=torch.long),
        "actions": torch.as_tensor(actions),
        "levels": torch.as_tensor(levels, dtype=torch.long),
    }


def run_model(
    model: BlockEnvModel | str | None, level: int, seeds: np.ndarray, greedy: bool = False
) -> EpisodeOutcomes:
    """Roll out `model` (None: the oracle; "random_legal": the control) for one episode per
    seed at `level`."""
    seeds = np.asarray(seeds, dtype=np.uint64)
    env = BlockEnvBatch(len(seeds))
    env.reset(level, seeds)
    if model is None:
        arms = arm_choice(seeds)
        act = lambda grids, step: oracle_actions(grids, arms)  # noqa: E731
    elif model == RANDOM_LEGAL:
        act = lambda grids, step: random_legal_actions(grids, seeds, step)  # noqa: E731
    else:
        assert not isinstance(model, str), f"unknown model {model!r}"
        support = support_for(model, level)
        actor = Actor(model.adapt(support) if support is not None else model, env.levels, seeds, greedy)
        act = actor.act
    step = 0
    while not env.done.all():
        env.step(act(env.grids.copy(), step))
        step += 1
    return EpisodeOutcomes(env.success.copy(), env.steps.copy(), env.removed.copy())
