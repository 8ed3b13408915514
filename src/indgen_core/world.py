"""The world interface: what the sim bridge (and an in-process loop) needs from a world.

A world resets to a task setup tau_k, returns observations, applies actions, and judges the
episode. Simulated worlds live in indgen_sim, the real FR3 in indgen_robot; both register
under the `indgen.worlds` entry-point group, so the core and the nodes never import them.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar

from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TaskSetup

Observation = dict[str, Any]
Action = dict[str, Any]


class InvalidSetup(IndGenError):
    """The setup could not be built sanely (objects interpenetrating, launched, out of the
    workspace): the trial is recorded as invalid, never as a policy failure."""


@dataclass
class StepResult:
    observation: Observation
    done: bool = False  # the episode is decided (success reached, or a terminal failure)
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluation:
    outcome: Outcome
    reason: str
    partial_score: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


class World(abc.ABC):
    """One simulator instance (or the real robot) that runs episodes one at a time."""

    name: ClassVar[str] = "world"
    #: simulated seconds per control step (the sim clock advances by this per step)
    control_dt: ClassVar[float] = 1.0 / 15.0
    #: the observation/action spec a policy talks to this world through (specs registry)
    spec: ClassVar[str] = ""
    #: which robot model the images show, where it can differ (the twin: menagerie or builtin);
    #: a policy trained on one model's images says so in its metadata and is refused on another
    robot_model: str | None = None

    @abc.abstractmethod
    def reset(self, setup: TaskSetup) -> Observation:
        """Build tau_k as `setup` says (deterministically for its seed); raise InvalidSetup
        when the result is physically broken."""

    @abc.abstractmethod
    def step(self, action: Action) -> StepResult:
        """Apply one control step."""

    @abc.abstractmethod
    def evaluate(self) -> Evaluation:
        """Judge the episode as it stands now (success check, partial score)."""

    def max_steps(self, setup: TaskSetup) -> int:
        """The step limit when the setup does not give one."""
        return setup.max_steps or 100

    def final_state(self) -> dict[str, Any] | None:
        """What evaluate() reads, as JSON-able values, taken when the episode ends and before
        it is judged: the sim bridge publishes it so that a bag alone is enough to judge the
        episode again (`indgen bag rescore`). None: the world cannot be judged from a record
        (the real robot: a person judges it)."""
        return None

    def restore(self, setup: TaskSetup, state: dict[str, Any]) -> None:
        """Put the world back into a final_state() of an episode of `setup`, so that
        evaluate() judges it as it was judged live."""
        raise NotImplementedError(f"the {self.name} world cannot be judged from a recorded state")

    def describe(self) -> dict[str, Any]:
        """Static facts for logs and reports: spec, control rate, cameras, ..."""
        return {"name": self.name, "spec": self.spec, "control_hz": 1.0 / self.control_dt}

    def preview(self) -> Any:
        """An RGB image (H, W, 3 uint8) of the scene as it stands, for reports; None if the
        world cannot render."""
        return None

    def close(self) -> None:
        """Release simulators and renderers."""

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
