"""The BlockEnv spec: the occupancy grid out, one grasp (row, col, theta) back.

Request keys: observation/grid (G, G) uint8, observation/level (the depth k, which the
paper's goal-conditioned baselines may use), episode/seed and episode/step (a stateful
policy restarts its history at step 0; a stochastic one seeds its draws from them),
episode/id, prompt. Reply: actions (chunk, 3) integers, one grasp per step.
"""

from __future__ import annotations

import numpy as np

from indgen_core.specs import EPISODE_FIELDS, BadAction, Spec, WireField, reply_array


class BlockEnvSpec(Spec):
    name = "blockenv"
    horizon = 1
    action_names = ("row", "col", "theta")
    request_fields = (
        WireField("observation/grid", "uint8", (16, 16), "the grid: 0 empty, 1 a distractor block, 2 the goal block"),
        WireField(
            "observation/level", "int64", (), "the depth k of the chains around the goal (goal-conditioned policies)"
        ),
        *EPISODE_FIELDS,
        WireField("prompt", "str", (), "the task's language instruction"),
    )
    reply_fields = (
        WireField(
            "actions",
            "int64",
            ("chunk", 3),
            "one grasp per step: row, col (0-15) and theta (0 from top/bottom, 1 from left/right); the first is "
            "executed",
        ),
    )

    def request(self, obs, setup, step):
        return {
            "observation/grid": np.asarray(obs["grid"], dtype=np.uint8),
            "observation/level": np.int64(obs["level"]),
            "episode/seed": np.uint64(setup.seed),
            "episode/step": np.int64(step),
            "episode/id": setup.trial_id,
            "prompt": setup.language_instruction,
        }

    def actions(self, reply):
        arr = reply_array(reply, width=3)
        if np.any(arr != np.round(arr)) or np.any(arr < 0):
            raise BadAction(f"BlockEnv actions must be non-negative integers (row, col, theta), got {arr[0].tolist()}")
        if np.any(arr[:, 2] > 1):
            raise BadAction(f"BlockEnv theta must be 0 or 1, got {int(arr[0, 2])}")
        return [{"row": int(a[0]), "col": int(a[1]), "theta": int(a[2])} for a in arr[: self.horizon]]
