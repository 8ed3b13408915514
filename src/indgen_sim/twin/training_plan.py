"""What a twin policy is trained on: which levels of each task's axis, and with which seed.

The paper (section 4): a failure at tau_{n+1} after training on tau_0 alone does not refute a
policy's inductive capacity; the next experiment trains on tau_0..tau_n and tests beyond. A plan
keeps the number of training episodes (so the two trainings differ in what they saw, not in how
much) and spreads one task's episodes over its levels in turn; the other task stays at tau_0. Its
seed shifts every random stream of the training (episode layouts, action noise, network
initialisation and batches), so that seeds 0, 1 and 2 are three independent trainings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from indgen_core.errors import IndGenError
from indgen_sim.twin import tasks

#: far apart enough that no seed's streams overlap another's (the bases below 10 million)
SEED_STRIDE = 10_000_000
MAX_SEED = 99


def _tau0() -> dict[str, tuple[int, ...]]:
    return dict.fromkeys(tasks.TASKS, (0,))


@dataclass(frozen=True)
class TrainingPlan:
    #: per task (its axis has the task's name), the levels its episodes cycle through
    levels: Mapping[str, tuple[int, ...]] = field(default_factory=_tau0)
    seed: int = 0

    @classmethod
    def spread(cls, axis: str | None, levels: Sequence[int] | None, seed: int = 0) -> TrainingPlan:
        """The plan `--axis A --levels L --seed S` asks for, or one sentence why not."""
        if not 0 <= seed <= MAX_SEED:
            raise IndGenError(f"--seed {seed} is outside 0..{MAX_SEED}")
        if levels is None:
            if axis is not None:
                raise IndGenError("--axis names the axis whose levels --levels spreads over: give --levels too")
            return cls(seed=seed)
        if axis not in tasks.TASKS:
            raise IndGenError(f"--levels needs --axis, one of {', '.join(tasks.TASKS)}")
        from indgen_core.axes.progression import library

        spec = library().get(axis).spec.levels
        outside = sorted({k for k in levels if not spec.min <= k <= spec.max})
        if outside:
            raise IndGenError(f"levels {outside} are outside the {axis} axis' range {spec.min}..{spec.max}")
        chosen = tuple(dict.fromkeys(levels))  # the order given, once each
        return cls({**_tau0(), axis: chosen}, seed)

    def stream(self, base: int) -> int:
        """A random stream's seed: `base` for seed 0, shifted clear of every other seed's."""
        return base + SEED_STRIDE * self.seed

    def describe(self) -> str:
        """ "tau_0", or "scale levels 0, 1, 2 (stack tau_0)"; "seed 1" added when not 0."""
        spread = {t: ks for t, ks in self.levels.items() if ks != (0,)}
        text = (
            "tau_0"
            if not spread
            else "; ".join(f"{t} levels {', '.join(map(str, ks))}" for t, ks in spread.items())
            + f" ({', '.join(f'{t} tau_0' for t in self.levels if t not in spread)})"
        )
        return text + (f", seed {self.seed}" if self.seed else "")

    def record(self) -> dict[str, Any]:
        """What a checkpoint keeps of its plan (plain values: torch's weights-only load reads them)."""
        return {"levels": {t: list(ks) for t, ks in self.levels.items()}, "seed": self.seed, "text": self.describe()}

    def setups(self, episodes: int, seed_base: int, policy: str, prefix: str) -> Iterator[Any]:
        """The training episodes: the tasks in turn, each cycling through its levels, a seed each."""
        from indgen_core.axes.progression import library
        from indgen_core.records import TaskSetup

        first = self.stream(seed_base)
        for e in range(episodes):
            axis = tasks.TASKS[e % len(tasks.TASKS)]
            ks = self.levels[axis]
            k = ks[(e // len(tasks.TASKS)) % len(ks)]
            level = library().get(axis).level(k)
            yield TaskSetup(
                "demos",
                f"{prefix}-{first}-{e}",
                "droid_twin",
                axis,
                k,
                level.in_distribution,
                level.parameters,
                e,
                first + e,
                policy,
                level.language_instruction or "",
            )


TAU0 = TrainingPlan()
