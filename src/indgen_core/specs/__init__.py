"""Observation/action specs: how a world's observation becomes a policy request on the wire
(openpi's dict-of-arrays format) and how a policy's reply becomes world actions.

One spec per family of policies: BlockEnv's grid, pi0.5-DROID's joint-velocity interface,
pi0.5-LIBERO's end-effector interface. The policy node and in-process loops use the same
spec objects, so a policy cannot tell them apart.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from indgen_core.errors import IndGenError
from indgen_core.records import TaskSetup
from indgen_core.world import Action, Observation


class BadAction(IndGenError):
    """A reply that must not be executed (NaN, wrong shape, out of range); nothing is sent."""


class Spec(abc.ABC):
    name: ClassVar[str] = "spec"
    #: actions of a chunk executed open-loop before the next request
    horizon: int = 1
    #: what each column of a reply's actions means (tables of `indgen bag replay`)
    action_names: ClassVar[tuple[str, ...]] = ()

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
