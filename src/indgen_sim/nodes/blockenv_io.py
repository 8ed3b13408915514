"""BlockEnv's topics on the world side of the lock-step loop: the grid out on
/blockenv/observation, one GridAction per observation back on /blockenv/action, matched by
trial id and step (a stale or repeated action is dropped, never applied)."""

from __future__ import annotations

import threading
import time

import numpy as np

from indgen_core import topics
from indgen_core.episode import PolicyUnavailable
from indgen_core.nodes.base import LOCKSTEP
from indgen_msgs.msg import GridAction, GridObservation


class BlockEnvIO:
    def __init__(self, node, world):
        self.node = node
        self.pub = node.create_publisher(GridObservation, topics.BLOCKENV_OBSERVATION, LOCKSTEP)
        node.create_subscription(GridAction, topics.BLOCKENV_ACTION, self._on_action, LOCKSTEP)
        self._cond = threading.Condition()
        self._expect: tuple[str, int] | None = None
        self._action: GridAction | None = None
        self.stale = 0

    def _on_action(self, msg: GridAction) -> None:
        with self._cond:
            if self._expect != (msg.trial_id, msg.step) or self._action is not None:
                self.stale += 1
                return
            self._action = msg
            self._cond.notify_all()

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort) -> dict:
        """Publish the observation of `step` and return the one action that answers it."""
        grid = np.asarray(obs["grid"], dtype=np.uint8)
        with self._cond:
            self._expect, self._action = (setup.trial_id, step), None
        msg = GridObservation(trial_id=setup.trial_id, step=step, rows=grid.shape[0], cols=grid.shape[1],
                              cells=grid.tobytes(), level=int(obs["level"]))
        msg.header.stamp = stamp
        self.pub.publish(msg)
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._action is None:
                reason = should_abort()
                if reason:
                    raise PolicyUnavailable(reason)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PolicyUnavailable(f"no action for step {step} within {timeout:g} s")
                self._cond.wait(min(left, 0.05))
            action, self._expect = self._action, None
        return {"row": int(action.row), "col": int(action.col), "theta": int(action.orientation)}
