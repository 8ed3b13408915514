"""`indgen bag rescore`: judge every recorded simulated episode again, from the bag alone.

The world is built again from the recorded setup and options, put back into the recorded
final state (World.restore), and judged by its own evaluate() and the episode loop's own
verdict (episode.verdict), the code that judged it live. Every trial must come out as it was
recorded; a disagreement is a bug in a world (a check that reads something the final state
does not hold) and the command exits 1. Real-robot trials have no final state: their
operator labels and relabels are listed instead.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

from indgen_core import registry
from indgen_core.bags.reader import BagError
from indgen_core.bags.trials import Attempt, Recording, setup_of, state_of
from indgen_core.episode import verdict
from indgen_core.records import Outcome
from indgen_core.world import World

#: recorded outcomes that no world check decided (nothing to compare)
NOT_JUDGED = {Outcome.ABORTED, Outcome.SKIPPED, Outcome.SUPERSEDED}
SCORE_TOLERANCE = 1e-6  # partial scores travel as float32


@dataclass
class Rescored:
    attempt: Attempt
    recorded: Outcome | None
    recorded_score: float | None
    outcome: Outcome | None = None
    score: float | None = None
    reason: str = ""
    note: str = ""

    @property
    def agrees(self) -> bool | None:
        if self.outcome is None or self.recorded is None:
            return None
        assert self.score is not None and self.recorded_score is not None, "set with outcome and recorded"
        return self.outcome is self.recorded and abs(self.score - self.recorded_score) <= SCORE_TOLERANCE


class Judges:
    """One world per (name, options), built on first use, without cameras (a check never
    looks at an image) and closed at the end."""

    def __init__(self):
        self.worlds: dict[tuple[str, str], World] = {}

    def world(self, name: str, options_json: str) -> World:
        key = (name, options_json)
        if key not in self.worlds:
            options = json.loads(options_json) if options_json else {}
            cls = registry.load(registry.WORLDS, name)
            if "cameras" in inspect.signature(cls).parameters:
                options["cameras"] = False
            self.worlds[key] = registry.make(registry.WORLDS, name, **options)
        return self.worlds[key]

    def close(self) -> None:
        for world in self.worlds.values():
            world.close()


def rescore(recording: Recording, judges: Judges | None = None) -> list[Rescored]:
    own = judges is None
    judges = judges or Judges()
    rows = []
    try:
        for attempt in recording.attempts:
            rows.append(_rescore_one(attempt, judges))
    finally:
        if own:
            judges.close()
    return rows


def _rescore_one(attempt: Attempt, judges: Judges) -> Rescored:
    result = attempt.result
    recorded = Outcome(result.outcome) if result is not None else None
    row = Rescored(attempt, recorded, float(result.partial_score) if result is not None else None)
    if result is None:
        row.note = "no result recorded (the recording ended first)"
        return row
    if attempt.final is None:
        if result.source == 1:
            row.note = "real robot: labelled by the operator"
        elif recorded in NOT_JUDGED:
            row.note = f"{recorded.word}: not judged by the world"
        else:
            row.note = "no final state recorded for it"
        return row
    if recorded in NOT_JUDGED:  # judged by the world, then given up on (e.g. the manager timed out)
        row.note = f"{recorded.word} after the world's check: not compared"
        return row
    final = attempt.final
    world = judges.world(final.world, final.world_options_json)
    setup = setup_of(attempt)
    try:
        world.restore(setup, state_of(final))
    except NotImplementedError:
        raise BagError(f"the {final.world} world cannot be judged from a recorded state") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise BagError(
            f"the recorded final state of {attempt.trial_id} does not fit the {final.world} world ({exc})"
        ) from None
    ev = world.evaluate()
    row.outcome, row.reason = verdict(ev, final.ending, int(final.steps), world.max_steps(setup))
    row.score = float(ev.partial_score)
    return row


def summary(rows: list[Rescored]) -> dict:
    compared = [r for r in rows if r.agrees is not None]
    return {
        "attempts": len(rows),
        "compared": len(compared),
        "agree": sum(bool(r.agrees) for r in compared),
        "disagree": [r.attempt.trial_id for r in compared if not r.agrees],
        "labelled": sum(r.note.startswith("real robot") for r in rows),
    }
