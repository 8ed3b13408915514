"""The result of one episode on the real robot, from how it ended: the rule that tells a system
fault (aborted: never scored, the trial runs again) from a stop the policy's own motion caused
or that nobody could explain (the episode ended: a failure unless the operator, who labels
every real episode, saw otherwise). Every result says `judged: false`."""

from __future__ import annotations

from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_robot.episode_loop import EpisodeEnd
from indgen_robot.safety import StopKind


def trial_result(setup: TaskSetup, end: EpisodeEnd) -> TrialResult:
    stop = end.stop
    details = {"judged": False, "end": stop.reason, "stop_kind": stop.kind.value, "timing": end.timing}

    def result(outcome: Outcome, reason: str, details: dict) -> TrialResult:
        return TrialResult(
            setup.trial_id,
            outcome,
            reason,
            steps=end.steps,
            duration_s=end.duration_s,
            wall_time_s=end.duration_s,
            details=details,
        )

    if stop.kind is StopKind.SYSTEM:
        return result(Outcome.ABORTED, stop.reason, {**details, **stop.details})
    if stop.kind in (StopKind.POLICY, StopKind.UNEXPLAINED):
        details["robot_stop"] = stop.details
        return result(
            Outcome.FAILURE,
            f"episode ended: {stop.reason}; to be labelled by the operator (failure unless they saw otherwise)",
            details,
        )
    return result(Outcome.FAILURE, f"episode ended: {stop.reason}; to be labelled by the operator", details)


def malformed_goal_setup() -> TaskSetup:
    """The setup a result names when the goal's own could not be read: no trial to name."""
    return TaskSetup.blank(world="fr3")
