"""run_episode's endings when a person ends the episode: judged as it stands once the policy
has acted, aborted (the trial runs again) when it had not, as a system fault is; seen when the
fuzzed graph's end request landed during a trial's reset and was scored a policy failure."""

from __future__ import annotations

from indgen_core.axes.progression import library
from indgen_core.episode import run_episode
from indgen_core.records import Outcome, TaskSetup
from indgen_core.specs.blockenv import BlockEnvSpec
from indgen_sim.blockenv.policies import BlockEnvOraclePolicy
from indgen_sim.blockenv.world import BlockEnvWorld


def _episode(end_after: int):
    level = library().get("blockenv_depth").level(4)
    setup = TaskSetup("c", "t/k+4/000", "blockenv", "blockenv_depth", 4, False, level.parameters, 0, 123, "p")
    policy, asked = BlockEnvOraclePolicy(), []
    policy.reset()

    def infer(request):
        asked.append(request)
        return policy.infer(request)

    return run_episode(BlockEnvWorld(), infer, BlockEnvSpec(), setup, should_end=lambda: len(asked) >= end_after), asked


def test_an_end_before_the_policys_first_action_aborts_the_attempt_and_nothing_is_judged():
    result, asked = _episode(end_after=0)
    assert asked == []
    assert result.outcome is Outcome.ABORTED and result.steps == 0
    assert result.reason == "ended by the operator before the policy's first action"


def test_an_end_after_the_policy_acted_is_judged_as_it_stands():
    result, asked = _episode(end_after=2)
    assert len(asked) == 2 and result.steps == 2
    assert result.outcome is Outcome.FAILURE
    assert result.reason.startswith("ended by the operator after 2 steps: ")
    untouched, _ = _episode(end_after=99)  # the oracle solves level 4 in k + 1 = 5 grasps
    assert untouched.outcome is Outcome.SUCCESS and untouched.steps == 5
