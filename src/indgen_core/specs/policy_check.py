"""`indgen policy check`: does a policy answer what a world sends, before any rollout.

It builds one real first request of the world at a level of an axis (the world reset, the
spec's request, exactly what a trial's first step sends), sends it to the policy (a server by
its ws:// address, or a registered policy by name), and judges the reply by the spec's own
rules (`Spec.actions`: what the episode loop would refuse to execute) and its declared fields
(`Spec.reply_fields`), and the time it took against the time a step may wait. Each problem is
one sentence. `field_problems` is also what holds the specs' declarations true to their
requests (test_policy_check.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indgen_core import registry
from indgen_core.errors import IndGenError
from indgen_core.records import TaskSetup
from indgen_core.specs import BadAction, Spec, WireField


def _field_for(fields: tuple[WireField, ...], key: str) -> WireField | None:
    for f in fields:
        if f.key == key or (f.key.endswith("/") and key.startswith(f.key)):
            return f
    return None


def _shape_fits(shape: tuple[int, ...], declared: tuple[int | str, ...]) -> bool:
    return len(shape) == len(declared) and all(
        isinstance(d, str) or d == s for s, d in zip(shape, declared, strict=True)
    )


def field_problems(fields: tuple[WireField, ...], message: dict[str, Any], what: str) -> list[str]:
    """Where `message` differs from `fields`: an undeclared key, a missing key that is always
    sent, a wrong dtype or shape. One sentence each."""
    problems = []
    for key, value in message.items():
        f = _field_for(fields, key)
        if f is None:
            problems.append(f"the {what} carries '{key}', which the spec does not declare")
            continue
        if f.dtype == "str":
            if not isinstance(value, str):
                problems.append(f"the {what}'s '{key}' should be a string, not {type(value).__name__}")
            continue
        arr = np.asarray(value)
        if arr.dtype.name != f.dtype:
            problems.append(f"the {what}'s '{key}' is {arr.dtype.name}, the spec says {f.dtype}")
        if not _shape_fits(arr.shape, f.shape):
            problems.append(f"the {what}'s '{key}' has shape {arr.shape}, the spec says {f.shape}")
    for f in fields:
        if f.when == "always" and not f.key.endswith("/") and f.key not in message:
            problems.append(f"the {what} has no '{f.key}'")
    return problems


def reply_problems(spec: Spec, reply: Any) -> list[str]:
    """What the episode loop would refuse in this reply, and where it differs from what the spec
    reads (extra keys a server sends are fine: they are ignored)."""
    if not isinstance(reply, dict):
        return [f"the reply is a {type(reply).__name__}, not a dict of arrays (openpi's format)"]
    try:
        spec.actions(reply)
    except BadAction as exc:
        return [str(exc)]
    problems = []
    for f in spec.reply_fields:
        arr = np.asarray(reply[f.key]) if f.key in reply else None
        if arr is not None and arr.ndim == len(f.shape) and not _shape_fits(arr.shape, f.shape):
            problems.append(f"the reply's '{f.key}' has shape {arr.shape}, the spec says {f.shape}")
    return problems


def sample_setup(world: str, axis_name: str | None, level: int, seed: int) -> TaskSetup:
    """The setup of a trial at `level` of `axis_name` (the first axis defined for `world` when
    None), as a campaign would plan it."""
    from indgen_core.axes.progression import library

    registry.load(registry.WORLDS, world)  # an unknown world: its did-you-mean, before anything else
    axes = library()
    if axis_name is None:
        fitting = [a for a in axes.names() if world in axes.get(a).spec.worlds]
        if not fitting:
            raise IndGenError(f"no axis is defined for world '{world}'; name one with --axis")
        axis_name = fitting[0]
    axis = axes.get(axis_name)
    if world not in axis.spec.worlds:
        raise IndGenError(f"axis '{axis_name}' is defined for worlds {axis.spec.worlds}, not '{world}'")
    lv = axis.level(level)
    return TaskSetup(
        "policy-check", f"check/k+{level}/000", world, axis_name, level, level == 0, lv.parameters, 0, seed,
        "policy-check", lv.language_instruction or "",
    )  # fmt: skip


@dataclass
class CheckReport:
    setup: TaskSetup
    spec: Spec
    request: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    reply: Any = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def first_request(world_name: str, setup: TaskSetup, privileged: bool, options: dict[str, Any]) -> tuple[Spec, dict]:
    """The spec and the request a trial's first step sends (privileged keys only if asked)."""
    world = registry.make(registry.WORLDS, world_name, **options)
    try:
        spec = registry.make(registry.SPECS, world.spec)
        request = spec.request(world.reset(setup), setup, 0)
    finally:
        world.close()
    if not privileged:
        request = {k: v for k, v in request.items() if not k.startswith("privileged/")}
    return spec, request


def check(
    target: str,
    world: str,
    setup: TaskSetup,
    privileged: bool = False,
    timeout: float = 30.0,
    options: dict[str, Any] | None = None,
    api_key: str | None = None,
) -> CheckReport:
    spec, request = first_request(world, setup, privileged, dict(options or {}))
    report = CheckReport(setup, spec, request)
    if target.startswith(("ws://", "wss://")):
        from indgen_core.episode import PolicyUnavailable
        from indgen_core.wire.client import RemotePolicy

        remote = RemotePolicy(target, api_key=api_key, connect_timeout=timeout, request_timeout=timeout)
        try:
            report.metadata = dict(remote.connect(timeout=timeout))
            started = time.monotonic()
            report.reply = remote.infer(request, timeout=timeout)
            report.seconds = time.monotonic() - started
        except PolicyUnavailable as exc:  # unreachable, refused, or no answer within the timeout
            report.problems.append(str(exc))
            return report
        finally:
            remote.close()
    else:
        policy = registry.make(registry.POLICIES, target)
        report.metadata = dict(getattr(policy, "metadata", {}) or {})
        policy.reset()
        started = time.monotonic()
        try:
            report.reply = policy.infer(request)
        except Exception as exc:  # the policy's own failure is the finding
            report.problems.append(f"the policy raised {type(exc).__name__}: {exc}")
            return report
        report.seconds = time.monotonic() - started
    report.problems += reply_problems(spec, report.reply)
    if report.seconds > timeout:
        report.problems.append(f"the reply took {report.seconds:.1f} s, more than the {timeout:g} s a step may wait")
    return report
