"""The policy interface: openpi's, so that a local policy and a remote pi0.5 server are
interchangeable. `infer` takes an observation dict (the wire request a spec built) and
returns a dict with "actions"; `reset` starts a new episode. Local policies register under
the `indgen.policies` entry-point group and are served with `indgen serve-policy NAME`.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar


class Policy(abc.ABC):
    #: sent to clients on connect (openpi: the policy metadata frame)
    metadata: ClassVar[dict[str, Any]] = {}

    @abc.abstractmethod
    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        """One request: an observation dict in, {"actions": array, ...} out."""

    def reset(self) -> None:
        """A new episode starts."""
