"""Observation/action specs: how a world's observation becomes a policy request on the wire
(openpi's dict-of-arrays format) and how a policy's reply becomes world actions.

One spec per family of policies: BlockEnv's grid, pi0.5-DROID's joint-velocity interface,
pi0.5-LIBERO's end-effector interface. The policy node and in-process loops use the same
spec objects, so a policy cannot tell them apart.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from indgen_core.errors import IndGenError
from indgen_core.records import TaskSetup
from indgen_core.world import Action, Observation


@dataclass(frozen=True)
class WireField:
    """One key of a request or a reply on the wire, as a policy author needs it: the docs' table
    of each spec is generated from these, `indgen policy check` judges a reply by them, and a
    test holds every world's real request to them (so they cannot drift from `request`).
    `shape` uses "chunk" for a reply's variable first dimension and "n" for a count that
    depends on the scene."""

    key: str
    dtype: str  # a numpy dtype name, or "str"
    shape: tuple[int | str, ...]
    meaning: str
    when: str = "always"  # "simulation only (privileged)", "when the camera is sent", ...


#: the keys every spec's request carries for stateful and stochastic policies
EPISODE_FIELDS = (
    WireField("episode/seed", "uint64", (), "the trial's seed: a stochastic policy seeds its draws from it"),
    WireField("episode/step", "int64", (), "the step within the episode; 0 starts a new one (reset a history)"),
    WireField("episode/id", "str", (), "the trial id (a blind campaign's letter, never a policy name)"),
)


#: the privileged keys of a pick-and-place world (LIBERO, RoboCasa), sent in simulation only:
#: what a scripted oracle reads and a trained policy must never be given
PICK_PLACE_PRIVILEGED = (
    WireField(
        "privileged/objects/",
        "float64",
        (7,),
        "each object's pose: position (m) and quaternion (w, x, y, z), in the world",
        "simulation only (privileged:=true)",
    ),
    WireField("privileged/pick", "str", (), "the object to pick", "simulation only (privileged:=true)"),
    WireField("privileged/place", "str", (), "where it goes", "simulation only (privileged:=true)"),
    WireField(
        "privileged/grasp",
        "float64",
        ("n",),
        "the pick object's top centre and the yaw of its footprint's short axis",
        "simulation only (privileged:=true)",
    ),
)


def action_names(spec: str) -> tuple[str, ...]:
    """What each column of a reply's actions means under the spec registered as `spec` (a bag's
    policy exchanges name theirs); empty for a spec this install does not have."""
    from indgen_core import registry

    if spec not in registry.names(registry.SPECS):
        return ()
    return tuple(getattr(registry.load(registry.SPECS, spec), "action_names", ()))


def add_pick_place_privileged(request: dict[str, Any], obs: Observation) -> None:
    """The PICK_PLACE_PRIVILEGED keys from a world's observation (none when it has no objects)."""
    for name, pose in (obs.get("objects") or {}).items():
        request[f"privileged/objects/{name}"] = np.asarray(pose, dtype=np.float64)
    if obs.get("objects"):
        request["privileged/pick"], request["privileged/place"] = obs["pick"], obs["place"]
        request["privileged/grasp"] = np.asarray(obs["grasp"], dtype=np.float64)


class BadAction(IndGenError):
    """A reply that must not be executed (NaN, wrong shape, out of range); nothing is sent."""


class Spec(abc.ABC):
    name: ClassVar[str] = "spec"
    #: actions of a chunk executed open-loop before the next request
    horizon: int = 1
    #: what each column of a reply's actions means (tables of `indgen bag replay`)
    action_names: ClassVar[tuple[str, ...]] = ()
    #: the request's keys (a key whose name ends in "/" is a family: privileged/objects/<name>)
    request_fields: ClassVar[tuple[WireField, ...]] = ()
    #: the reply's keys IndGen reads (a server may send more: they are ignored)
    reply_fields: ClassVar[tuple[WireField, ...]] = ()

    @abc.abstractmethod
    def request(self, obs: Observation, setup: TaskSetup, step: int) -> dict[str, Any]:
        """The wire request for one inference."""

    @abc.abstractmethod
    def actions(self, reply: dict[str, Any]) -> list[Action]:
        """The world actions of a reply's chunk, validated, at most `horizon` of them."""

    def warmup_observation(self, cameras: list[str]) -> Observation | None:
        """An observation of the right shapes for a warm-up request (the policy node sends one
        before the first trial: openpi's server compiles its model on its first request), or
        None when this spec's servers need none."""
        return None


#: a request carrying this key is a warm-up: answered, never acted on (openpi's transforms
#: ignore keys they do not read; IndGen's server answers it without calling the policy)
WARMUP_KEY = "indgen/warmup"


def reply_array(reply: dict[str, Any], key: str = "actions", ndim: int = 2, width: int | None = None) -> np.ndarray:
    """reply[key] as a finite float array of shape (chunk, width); BadAction otherwise."""
    if not isinstance(reply, dict) or key not in reply:
        raise BadAction(f"policy reply has no '{key}' (keys: {sorted(reply) if isinstance(reply, dict) else reply!r})")
    try:
        arr = np.asarray(reply[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise BadAction(f"policy reply '{key}' is not numeric") from None
    if arr.ndim == ndim - 1:
        arr = arr[None]
    if arr.ndim != ndim or arr.shape[0] == 0:
        raise BadAction(f"policy reply '{key}' has shape {arr.shape}, expected (chunk, {width or 'n'})")
    if width is not None and arr.shape[-1] < width:
        raise BadAction(f"policy reply '{key}' has {arr.shape[-1]} values per action, expected {width}")
    if not np.all(np.isfinite(arr)):
        raise BadAction(f"policy reply '{key}' contains NaN or infinite values")
    return arr
