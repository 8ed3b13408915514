"""Task setups of the twin's axes (Stack, Scale) at a level, as the progression manager
would build them from the axis configs."""

from __future__ import annotations

from indgen_core.axes.progression import library
from indgen_core.records import TaskSetup


def setup(axis: str, level: int, seed: int = 0, policy: str = "test") -> TaskSetup:
    lv = library().get(axis).level(level)
    return TaskSetup("test", f"{axis}-{level}-{seed}", "droid_twin", axis, level, level == 0, lv.parameters, seed,
                     seed, policy, lv.language_instruction or "")
