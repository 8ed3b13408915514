"""One episode: world and policy in a loop, the same loop wherever it runs.

Used in-process (benchmarks, `indgen campaign run --in-process`, the BlockEnv evaluation)
and by the sim bridge, where `infer` is the round trip through the ROS graph. A policy's
action chunk is executed open-loop for the spec's horizon, then the policy is asked again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, cast

from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_core.specs import BadAction, Spec
from indgen_core.world import Evaluation, InvalidSetup, World

Infer = Callable[[dict[str, Any]], dict[str, Any]]
#: sees the world's final state (World.final_state), how the episode ended and its steps,
#: before the world judges it: what a bag needs to judge the episode again
OnFinal = Callable[[dict[str, Any], str, int], None]

#: how an episode that reached the world's check ended
DONE, LIMIT, OPERATOR, BAD_ACTION = "done", "step_limit", "operator", "bad_action"
ENDINGS = (DONE, LIMIT, OPERATOR, BAD_ACTION)


class _RendersOnRead(Protocol):
    """A world that renders its images when they are read, and counts the frames it rendered."""

    frames_rendered: int


class PolicyUnavailable(Exception):
    """The policy could not be reached (connection lost); the trial is aborted, not failed."""


def verdict(ev: Evaluation, ending: str, steps: int, max_steps: int) -> tuple[Outcome, str]:
    """The outcome of an episode from the world's check and how it ended: the one rule, used
    live and by `indgen bag rescore`."""
    if ending == BAD_ACTION:
        return Outcome.FAILURE, "policy sent an action that was not executed"
    if ev.outcome is Outcome.SUCCESS or ending == DONE:
        return ev.outcome, ev.reason
    if ev.outcome is Outcome.INVALID:
        return Outcome.INVALID, ev.reason
    if ending == OPERATOR:
        return Outcome.FAILURE, f"ended by the operator after {steps} steps: {ev.reason}"
    return Outcome.FAILURE, f"step limit {max_steps} reached: {ev.reason}"


def run_episode(
    world: World,
    infer: Infer,
    spec: Spec,
    setup: TaskSetup,
    on_step: Callable[[int, int], None] | None = None,
    on_reset: Callable[[dict[str, Any]], None] | None = None,
    should_end: Callable[[], bool] | None = None,
    on_final: OnFinal | None = None,
) -> TrialResult:
    """Reset, then ask and step until done, the step limit, or `should_end()` (a person ended
    the episode early: it is judged as it stands, or aborted and run again when the policy had
    not acted yet, as a system fault is: an end request that came during the reset, or from
    any node on the graph, says nothing of the policy); `on_reset` sees the first observation (a
    level image for the report), `on_step` the progress, `on_final` the final state."""
    wall0 = time.monotonic()
    max_steps = world.max_steps(setup)
    frames0 = getattr(world, "frames_rendered", None)

    def result(outcome: Outcome, reason: str, steps: int, score: float = 0.0, details=None) -> TrialResult:
        details = dict(details or {})
        if frames0 is not None:  # a world that renders on read: what the episode's images cost
            details["frames_rendered"] = cast(_RendersOnRead, world).frames_rendered - frames0
        return TrialResult(
            trial_id=setup.trial_id,
            outcome=outcome,
            reason=reason,
            partial_score=score,
            steps=steps,
            duration_s=steps * world.control_dt,
            wall_time_s=time.monotonic() - wall0,
            details=details,
        )

    def judged(ending: str, steps: int, why: str = "") -> TrialResult:
        if on_final is not None:
            state = world.final_state()
            if state is not None:
                on_final(state, ending, steps)
        ev = world.evaluate()
        outcome, reason = verdict(ev, ending, steps, max_steps)
        return result(outcome, f"{reason}: {why}" if why else reason, steps, ev.partial_score, ev.details)

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
            if step == 0:  # the policy never acted: nothing of its to judge, so the trial runs again
                return result(Outcome.ABORTED, "ended by the operator before the policy's first action", 0)
            ended = True
            break
        if not queue:
            try:
                queue = spec.actions(infer(spec.request(obs, setup, step)))[: spec.horizon]
            except BadAction as exc:
                return judged(BAD_ACTION, step, str(exc))
            except PolicyUnavailable as exc:
                return result(Outcome.ABORTED, f"policy unavailable: {exc}", step)
        outcome = world.step(queue.pop(0))
        obs, done = outcome.observation, outcome.done
        step += 1
        if on_step is not None:
            on_step(step, max_steps)
    return judged(DONE if done else OPERATOR if ended else LIMIT, step)
