"""The BlockEnv baselines of the paper's Table 1, plus IndGen's equivariant variant."""

from __future__ import annotations

from indgen_sim.blockenv.models.base import Actor, BlockEnvModel
from indgen_sim.blockenv.models.equivariant import EquivariantPolicy
from indgen_sim.blockenv.models.ind import IndLinearPolicy, IndPolicy
from indgen_sim.blockenv.models.maml import MAMLPolicy
from indgen_sim.blockenv.models.rnn import RNNPolicy
from indgen_sim.blockenv.models.transformer import (
    TransformerGoalActionPolicy,
    TransformerPolicy,
    TransformerRoPEPolicy,
)
from indgen_sim.blockenv.models.trm import TRMPolicy

#: Table 1 order
MODELS: dict[str, type[BlockEnvModel]] = {
    m.name: m
    for m in (
        MAMLPolicy,
        RNNPolicy,
        TransformerPolicy,
        TransformerRoPEPolicy,
        TransformerGoalActionPolicy,
        TRMPolicy,
        IndPolicy,
        IndLinearPolicy,
        EquivariantPolicy,
    )
}
PAPER_NAMES = {
    "maml": "MAML",
    "rnn": "RNN",
    "transformer": "Transformer",
    "transformer_rope": "Transformer+RoPE",
    "transformer_goal_action": "Transformer+Goal/Act",
    "trm": "TRM",
    "ind": "Ind",
    "ind_linear": "Ind (linear legality read-out)",
    "equivariant": "Equivariant (IndGen)",
    "random_legal": "Random legal grasp (control)",
    "oracle": "Oracle",
}

__all__ = ["MODELS", "PAPER_NAMES", "Actor", "BlockEnvModel"]
