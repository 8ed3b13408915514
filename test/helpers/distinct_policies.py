"""Two policies that say who they are, as a lab's own servers do: the twin's oracle under two
names, each announcing its name, team and checkpoint in its server metadata (openpi's
serve_policy.py sends the policy's metadata on connect). The blind tests look for every word
of it where a person at the cell could read it. Served with
INDGEN_POLICIES=zebra_policy=helpers.distinct_policies:ZebraPolicy,yak_policy=helpers.distinct_policies:YakPolicy
and the test folder on PYTHONPATH."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from indgen_sim.twin.oracle import TwinOracle

TEST_DIR = str(Path(__file__).parents[1])  # where the `helpers` package is importable from
POLICIES = "zebra_policy=helpers.distinct_policies:ZebraPolicy,yak_policy=helpers.distinct_policies:YakPolicy"


class ZebraPolicy(TwinOracle):
    metadata: Mapping[str, Any] = {**TwinOracle.metadata, "policy": "zebra_policy", "team": "zebra-lab",
                "checkpoint": "/ckpt/zebra_v7/params"}


class YakPolicy(TwinOracle):
    metadata: Mapping[str, Any] = {**TwinOracle.metadata, "policy": "yak_policy", "team": "yak-lab",
                "checkpoint": "/ckpt/yak_step30k/params"}


def environment() -> dict[str, str]:
    """The environment a server process needs to serve them by name."""
    pythonpath = os.pathsep.join(p for p in (TEST_DIR, os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, INDGEN_POLICIES=POLICIES, PYTHONPATH=pythonpath)
