"""RNN baseline (A.1): flattened grid + goal scalar -> MLP -> 2-layer LSTM -> three heads."""

from __future__ import annotations

from torch import nn

from indgen_sim.blockenv.models.base import BlockEnvModel
from indgen_sim.blockenv.models.common import CELLS, IndependentHeads, mlp, obs_vector


class RNNPolicy(BlockEnvModel):
    name = "rnn"

    def __init__(self, d: int = 128):
        super().__init__(d=d)
        self.enc = mlp(CELLS + 1, d)
        self.lstm = nn.LSTM(d, d, num_layers=2, batch_first=True)
        self.heads = IndependentHeads(d)

    def loss(self, batch):
        x = self.enc(obs_vector(batch["grids"], batch["levels"][:, None].expand(batch["grids"].shape[:2])))
        h, _ = self.lstm(x)
        mask = batch["mask"]
        logits = self.heads(h[mask])
        loss = IndependentHeads.loss(logits, batch["actions"][mask])
        return loss, {"loss": loss.item()}

    def start(self, n, levels):
        return {"levels": levels, "hc": None}

    def logits(self, state, grids, prev_actions, step):
        x = self.enc(obs_vector(grids, state["levels"]))[:, None]
        h, state["hc"] = self.lstm(x, state["hc"])
        return self.heads(h[:, 0])
