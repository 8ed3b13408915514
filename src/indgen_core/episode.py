"""One episode: world and policy in a loop, the same loop wherever it runs.

Used in-process (benchmarks, `indgen campaign run --in-process`, the BlockEnv evaluation)
and by the sim bridge, where `infer` is the round trip through the ROS graph. A policy's
action chunk is executed open-loop for the spec's horizon, then the policy is asked again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_core.specs import BadAction, Spec
from indgen_core.world import InvalidSetup, World

Infer = Callable[[dict[str, Any]], dict[str, Any]]


class PolicyUnavailable(Exception):
    """The policy could not be reached (connection lost); the trial is aborted, not failed."""


def run_episode(world: World, infer: Infer, spec: Spec, setup: TaskSetup,
                on_step: Callable[[int, int], None] | None = None,
                on_reset: Callable[[dict[str, Any]], None] | None = None,
                should_end: Callable[[], bool] | None = None) -> TrialResult:
    """Reset, then ask and step until done, the step limit, or `should_end()` (a person ended
    the episode early: it is judged as it stands); `on_reset` sees the first observation (a
    level image for the report), `on_step` the progress."""
    wall0 = time.monotonic()
    max_steps = world.max_steps(setup)

    def result(outcome: Outcome, reason: str, steps: int, score: float = 0.0, details=None) -> TrialResult:
        return TrialResult(trial_id=setup.trial_id, outcome=outcome, reason=reason, partial_score=score,
                           steps=steps, duration_s=steps * world.control_dt,
                           wall_time_s=time.monotonic() - wall0, details=details or {})

    try:
        obs = world.reset(setup)
    except InvalidSetup as exc:
        return result(Outcome.INVALID, str(exc), 0)
    if on_reset is not None:
        on_reset(obs)
    queue: list = []
    step = 0
    done = False
    ended = False
    while step < max_steps and not done:
        if should_end is not None and should_end():
            ended = True
            break
        if not queue:
            try:
                queue = spec.actions(infer(spec.request(obs, setup, step)))[: spec.horizon]
            except BadAction as exc:
                ev = world.evaluate()
                return result(Outcome.FAILURE, f"policy sent an action that was not executed: {exc}", step,
                              ev.partial_score, ev.details)
            except PolicyUnavailable as exc:
                return result(Outcome.ABORTED, f"policy unavailable: {exc}", step)
        outcome = world.step(queue.pop(0))
        obs, done = outcome.observation, outcome.done
        step += 1
        if on_step is not None:
            on_step(step, max_steps)
    ev = world.evaluate()
    if ev.outcome is Outcome.SUCCESS or done:
        return result(ev.outcome, ev.reason, step, ev.partial_score, ev.details)
    if ev.outcome is Outcome.INVALID:
        return result(Outcome.INVALID, ev.reason, step, ev.partial_score, ev.details)
    if ended:
        return result(Outcome.FAILURE, f"ended by the operator after {step} steps: {ev.reason}", step,
                      ev.partial_score, ev.details)
    return result(Outcome.FAILURE, f"step limit {max_steps} reached: {ev.reason}", step, ev.partial_score,
                  ev.details)
