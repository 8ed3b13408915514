"""The policy interface: openpi's, so that a local policy and a remote pi0.5 server are
interchangeable. `infer` takes an observation dict (the wire request a spec built) and
returns a dict with "actions"; `reset` starts a new episode. Local policies register under
the `indgen.policies` entry-point group and are served with `indgen serve-policy NAME`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any


class Policy(abc.ABC):
    #: sent to clients on connect (openpi: the policy metadata frame); a class default is shared
    #: by every instance (read-only), a policy with its own metadata sets it on the instance
    metadata: Mapping[str, Any] = {}

    @abc.abstractmethod
    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        """One request: an observation dict in, {"actions": array, ...} out."""

    def reset(self) -> None:
        """A new episode starts."""


def robot_mismatch(metadata: dict[str, Any], world_robot: str | None) -> str | None:
    """Why a policy must not run on a world, when its checkpoint learned another robot model's
    images (its metadata's robot_model); None when nothing speaks against it."""
    trained = metadata.get("robot_model") if isinstance(metadata, dict) else None
    if not trained or not world_robot or trained == world_robot:
        return None
    switch = "builtin_fr3:=true" if trained == "builtin" else "builtin_fr3:=false with MENAGERIE_ROOT set"
    return (
        f"policy {str(metadata.get('policy', '?'))[:60]} was trained on the {str(trained)[:20]} FR3's images and "
        f"this world renders the {world_robot} one: run the world with {switch}, or train on this model"
    )
