"""BlockEnv policies behind the policy interface, for `indgen serve-policy` and the sim
bridge: the scripted oracle and every trained baseline (loaded from its checkpoint).

Registered names: blockenv_oracle, blockenv_random_legal (the control that picks uniformly
among the grasps that would succeed), blockenv_<model> for each model in models.MODELS.
Checkpoints are read from $INDGEN_BLOCKENV_CHECKPOINTS, else <data dir>/blockenv/checkpoints,
or from an explicit `checkpoint=PATH`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core import paths
from indgen_core.policy import Policy
from indgen_sim.blockenv.oracle import arm_choice, oracle_actions, random_legal_actions


def checkpoint_dir() -> Path:
    override = os.environ.get("INDGEN_BLOCKENV_CHECKPOINTS")
    return Path(override) if override else paths.data_dir() / "blockenv" / "checkpoints"


def _grid(obs) -> np.ndarray:
    return np.asarray(obs["observation/grid"], dtype=np.int8)


class BlockEnvOraclePolicy(Policy):
    metadata: Mapping[str, Any] = {"policy": "blockenv_oracle", "spec": "blockenv"}

    def infer(self, obs):
        seed = np.uint64(obs["episode/seed"])
        return {"actions": oracle_actions(_grid(obs)[None], arm_choice([seed])).astype(np.int64)}


class BlockEnvRandomLegalPolicy(Policy):
    metadata: Mapping[str, Any] = {"policy": "blockenv_random_legal", "spec": "blockenv"}

    def infer(self, obs):
        seed = np.uint64(obs["episode/seed"])
        return {"actions": random_legal_actions(_grid(obs)[None], [seed], int(obs["episode/step"]))}


class BlockEnvModelPolicy(Policy):
    """A trained model, one episode at a time. The history restarts when episode/step is 0 or
    episode/id changes, so a stateful model never mixes two episodes."""

    def __init__(self, model: str, checkpoint: str | Path | None = None):
        from indgen_sim.blockenv.train import load_checkpoint

        self.path = Path(checkpoint) if checkpoint else checkpoint_dir() / f"{model}.pt"
        self.model = load_checkpoint(self.path)
        self.metadata = {"policy": f"blockenv_{model}", "spec": "blockenv", "checkpoint": str(self.path)}
        self._adapted: dict[int, object] = {}
        self._episode = None
        self._actor = None

    def _model_for(self, level: int):
        from indgen_sim.blockenv.evaluate import support_for

        if level not in self._adapted:
            support = support_for(self.model, level)
            self._adapted[level] = self.model.adapt(support) if support is not None else self.model
        return self._adapted[level]

    def reset(self):
        self._episode = None

    def infer(self, obs):
        from indgen_sim.blockenv.models import Actor

        step = int(obs["episode/step"])
        episode = (str(obs.get("episode/id", "")), int(obs["episode/seed"]))
        if step == 0 or episode != self._episode or self._actor is None:
            level = int(obs["observation/level"])
            self._actor = Actor(self._model_for(level), [level], [np.uint64(obs["episode/seed"])])
            self._episode = episode
        return {"actions": self._actor.act(_grid(obs)[None], step).astype(np.int64)}


def _factory(model: str):
    return functools.partial(BlockEnvModelPolicy, model)


maml, rnn, transformer, transformer_rope, transformer_goal_action, trm, ind, equivariant = (
    _factory(m)
    for m in ("maml", "rnn", "transformer", "transformer_rope", "transformer_goal_action", "trm", "ind", "equivariant")
)
