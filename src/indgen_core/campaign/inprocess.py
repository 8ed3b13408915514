"""Running trials without ROS: the world and the policies in this process (or a policy
server reached over openpi's websocket protocol). Used by `indgen campaign run`, benchmarks
and the BlockEnv evaluation; the ROS graph runs the very same episode loop."""

from __future__ import annotations

from collections.abc import Mapping

from indgen_core import registry
from indgen_core.episode import run_episode
from indgen_core.errors import IndGenError
from indgen_core.policy import Policy, robot_mismatch
from indgen_core.records import TaskSetup, TrialResult
from indgen_core.world import World


def make_policy(name: str, endpoints: Mapping[str, str] | None = None) -> Policy:
    """A registered local policy, or a client of the policy server named in `endpoints`."""
    if endpoints and name in endpoints:
        from indgen_core.wire.client import RemotePolicy

        return RemotePolicy(endpoints[name])
    return registry.make(registry.POLICIES, name)


def check_runnable(world: str, policies: list[str], endpoints: Mapping[str, str] | None = None) -> None:
    """Every name a campaign run in this process will make resolves, before anything is written
    (else a misspelt policy plans its trials, fails at the first and leaves a campaign nobody
    can run). Loads (imports) each class without building it."""
    registry.load(registry.WORLDS, world)
    for name in policies:
        if not (endpoints and name in endpoints):
            registry.load(registry.POLICIES, name)


class InProcessExecutor:
    """Executor (TaskSetup -> TrialResult) over one world instance and lazily built policies."""

    def __init__(
        self,
        world: str | World,
        endpoints: Mapping[str, str] | None = None,
        policies: Mapping[str, Policy] | None = None,
    ):
        self.world = registry.make(registry.WORLDS, world) if isinstance(world, str) else world
        self.spec = registry.make(registry.SPECS, self.world.spec)
        self.endpoints = dict(endpoints or {})
        self.policies: dict[str, Policy] = dict(policies or {})

    def policy(self, name: str) -> Policy:
        if name not in self.policies:
            self.policies[name] = make_policy(name, self.endpoints)
        policy = self.policies[name]
        why = robot_mismatch(getattr(policy, "metadata", {}), self.world.robot_model)
        if why:
            raise IndGenError(why)
        return policy

    def __call__(self, setup: TaskSetup) -> TrialResult:
        policy = self.policy(setup.policy)
        policy.reset()
        infer = policy.infer
        if getattr(policy, "metadata", {}).get("privileged") is False:
            # a policy that says it sees no simulator state gets none (the graph's privileged:=false)
            def infer(request):
                return policy.infer({k: v for k, v in request.items() if not k.startswith("privileged/")})

        return run_episode(self.world, infer, self.spec, setup)

    def close(self) -> None:
        for p in self.policies.values():
            close = getattr(p, "close", None)
            if close:
                close()
        self.world.close()
