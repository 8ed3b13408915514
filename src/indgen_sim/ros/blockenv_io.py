"""BlockEnv's topics on the world side of the lock-step loop: the grid out on
/blockenv/observation, one GridAction per observation back on /blockenv/action, matched by
trial id and step (a stale or repeated action is dropped, never applied)."""

from __future__ import annotations

import numpy as np

from indgen_core import topics
from indgen_core.nodes.lockstep import AnswerSlot
from indgen_core.ros.base import LOCKSTEP, TICKS, subscribe
from indgen_msgs.msg import GridAction, GridObservation


class BlockEnvIO:
    def __init__(self, node, world):
        self.node = node
        self.pub = node.create_publisher(GridObservation, topics.BLOCKENV_OBSERVATION, TICKS)
        subscribe(node, GridAction, topics.BLOCKENV_ACTION, self._on_action, LOCKSTEP)
        self.slot = AnswerSlot()

    @property
    def stale(self) -> int:
        return self.slot.stale

    def _on_action(self, msg: GridAction) -> None:
        self.slot.offer((msg.trial_id, msg.step), msg)

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort) -> dict:
        """Publish the observation of `step` and return the one action that answers it."""
        grid = np.asarray(obs["grid"], dtype=np.uint8)
        self.slot.expect((setup.trial_id, step))
        msg = GridObservation(
            trial_id=setup.trial_id,
            step=step,
            rows=grid.shape[0],
            cols=grid.shape[1],
            cells=grid.tobytes(),
            level=int(obs["level"]),
        )
        msg.header.stamp = stamp
        self.pub.publish(msg)
        action = self.slot.wait(timeout, should_abort, f"step {step}")["action"]
        return {"row": int(action.row), "col": int(action.col), "theta": int(action.orientation)}
