"""A tiny deterministic world for testing campaigns, the store and reports without a simulator.

Success probability falls with the level: p(k) = max(0, 1 - 0.25 k) times the policy's
skill; whether a trial succeeds is fixed by its seed, so two runs with the same seeds give
the same outcomes. Each step sleeps a little so that a test can kill a campaign mid-trial.
Register it for child processes with INDGEN_WORLDS / INDGEN_POLICIES / INDGEN_SPECS (ENV).
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from indgen_core.errors import IndGenError
from indgen_core.policy import Policy
from indgen_core.records import Outcome
from indgen_core.specs import Spec, reply_array
from indgen_core.world import Evaluation, InvalidSetup, StepResult, World

ENV = {
    "INDGEN_WORLDS": "toy=helpers.toy_world:ToyWorld",
    "INDGEN_POLICIES": "skilled=helpers.toy_world:Skilled,clumsy=helpers.toy_world:Clumsy",
    "INDGEN_SPECS": "toy=helpers.toy_world:ToySpec",
}

AXIS_YAML = """
name: toy_depth
worlds: [toy]
description: a test axis
parameter: {name: depth, unit: count, base: 0, step: 1}
levels: {min: 0, max: 4}
in_distribution: [0]
regime: black_box
language_instruction: do the toy task
"""


class ToyWorld(World):
    name = "toy"
    spec = "toy"
    control_dt = 0.1

    def __init__(self, step_delay: float | None = None):
        self.step_delay = float(os.environ.get("TOY_STEP_DELAY", "0")) if step_delay is None else step_delay
        self.steps = 0

    def reset(self, setup):
        marker = os.environ.get("TOY_CRASH_ONCE")  # a file path: crash once, at level 2, trial 1
        if marker and setup.trial_index == 1 and setup.level == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process killed mid-trial, once
        if setup.options.get("invalid_level") == setup.level:
            raise InvalidSetup("toy blocks interpenetrate")
        self.level = setup.level
        self.draw = np.random.default_rng(setup.seed).random()
        self.steps = 0
        self.skill = 0.0
        return {"step": 0}

    def step(self, action):
        time.sleep(self.step_delay)
        self.skill = float(action["skill"])
        self.steps += 1
        return StepResult({"step": self.steps}, done=self.steps >= 3)

    def evaluate(self):
        p = max(0.0, 1.0 - 0.25 * self.level) * self.skill
        if self.steps >= 3 and self.draw < p:
            return Evaluation(Outcome.SUCCESS, "toy solved", 1.0)
        return Evaluation(Outcome.FAILURE, "toy not solved", self.steps / 3)

    def max_steps(self, setup):
        return 5


class ToySpec(Spec):
    name = "toy"

    def request(self, obs, setup, step):
        return {"observation/step": np.int64(obs["step"]), "prompt": setup.language_instruction}

    def actions(self, reply):
        return [{"skill": a[0]} for a in reply_array(reply, width=1)]


class Skilled(Policy):
    """TOY_POLICY_REFUSED=SENTENCE: built, it refuses as a policy with an unreadable checkpoint
    does (an IndGenError); TOY_INFER_CRASH=1: every inference raises (a bug in a policy)."""

    skill = 1.0

    def __init__(self):
        refused = os.environ.get("TOY_POLICY_REFUSED")
        if refused:
            raise IndGenError(refused)

    def infer(self, obs):
        if os.environ.get("TOY_INFER_CRASH"):
            raise RuntimeError("toy policy crashed")
        return {"actions": np.full((1, 1), self.skill)}


class Clumsy(Skilled):
    skill = 0.6
