"""Worlds, policies and observation/action specs, registered by name (LeRobot-style).

A name resolves through an entry-point group (`indgen.worlds`, `indgen.policies`,
`indgen.specs`), so heavy modules are imported only when used, and another package can add
its own. Without packaging anything, the environment variables INDGEN_WORLDS,
INDGEN_POLICIES and INDGEN_SPECS add "name=module:attribute" entries (comma-separated),
which child processes inherit. A "module:attribute" string is accepted wherever a name is.
"""

from __future__ import annotations

import difflib
import importlib
import os
from importlib import metadata
from typing import Any

from indgen_core.errors import IndGenError, MissingDependencyError

WORLDS, POLICIES, SPECS = "indgen.worlds", "indgen.policies", "indgen.specs"
DEMOS = "indgen.demos"  # world name -> its oracle demonstrations (indgen dataset export --oracle)
_KIND = {
    WORLDS: "world",
    POLICIES: "policy",
    SPECS: "observation/action spec",
    DEMOS: "world with oracle demonstrations",
}
#: optional modules a registered entry may need -> the extra that installs them (setup.py)
OPTIONAL_MODULES = {"mujoco": "sim", "torch": "torch", "robosuite": "libero", "libero": "libero"}
_ENV = {WORLDS: "INDGEN_WORLDS", POLICIES: "INDGEN_POLICIES", SPECS: "INDGEN_SPECS"}


def _env_entries(group: str) -> dict[str, str]:
    out = {}
    for item in os.environ.get(_ENV.get(group, ""), "").split(","):
        name, sep, target = item.strip().partition("=")
        if sep and name and ":" in target:
            out[name.strip()] = target.strip()
    return out


class UnknownName(IndGenError):
    pass


def names(group: str) -> list[str]:
    return sorted({ep.name for ep in metadata.entry_points(group=group)} | set(_env_entries(group)))


def import_target(target: str, what: str = "object") -> Any:
    """The attribute named by "module:attribute"."""
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise UnknownName(f"cannot load {what} '{target}': {exc}") from None


def load(group: str, name: str) -> Any:
    """The object registered as `name` in `group` (or named by "module:attribute")."""
    if ":" in name:
        return import_target(name, _KIND.get(group, group))
    env = _env_entries(group)
    if name in env:
        return load(group, env[name])
    for ep in metadata.entry_points(group=group):
        if ep.name == name:
            try:
                return ep.load()
            except ModuleNotFoundError as exc:  # an optional dependency (mujoco: the sim extra)
                missing = (exc.name or "").split(".")[0]
                extra = OPTIONAL_MODULES.get(missing)
                if extra is None:
                    raise
                raise MissingDependencyError(missing, extra, f"the {_KIND.get(group, group)} '{name}'") from None
    known = names(group)
    guess = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{guess[0]}'?" if guess else f"; known: {', '.join(known) or 'none'}"
    raise UnknownName(f"unknown {_KIND.get(group, group)} '{name}'{hint}")


def make(group: str, name: str, **kwargs: Any) -> Any:
    return load(group, name)(**kwargs)
