"""The policy node's side of each spec's topics: which messages make one observation, and
how a world action goes back out. One class per spec, registered in POLICY_IO."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from indgen_core import topics
from indgen_core.nodes.base import LOCKSTEP
from indgen_msgs.msg import GridAction, GridObservation


class Tick:
    """One observation to answer: trial, step, the world-side observation dict, its stamp."""

    def __init__(self, trial_id: str, step: int, obs: dict, stamp):
        self.trial_id, self.step, self.obs, self.stamp = trial_id, step, obs, stamp


class BlockEnvPolicyIO:
    spec = "blockenv"

    def __init__(self, node, on_tick: Callable[[Tick], None]):
        self.pub = node.create_publisher(GridAction, topics.BLOCKENV_ACTION, LOCKSTEP)
        node.create_subscription(GridObservation, topics.BLOCKENV_OBSERVATION, self._on_obs, LOCKSTEP)
        self.on_tick = on_tick

    def _on_obs(self, msg: GridObservation) -> None:
        grid = np.frombuffer(bytes(msg.cells), dtype=np.uint8).reshape(msg.rows, msg.cols)
        self.on_tick(Tick(msg.trial_id, msg.step, {"grid": grid, "level": msg.level}, msg.header.stamp))

    def send(self, tick: Tick, action: dict) -> None:
        msg = GridAction(trial_id=tick.trial_id, step=tick.step, row=action["row"], col=action["col"],
                         orientation=action["theta"])
        msg.header.stamp = tick.stamp
        self.pub.publish(msg)


POLICY_IO = {
    "blockenv": BlockEnvPolicyIO,
}
