"""Config folders and stores for tests that run campaigns on the toy world."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from helpers import toy_world
from indgen_core.axes.progression import AxisLibrary
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign

REPO = Path(__file__).resolve().parents[2]


def config_dir(tmp: Path) -> Path:
    """A copy of config/ with the toy axis added; point INDGEN_CONFIG_DIR at it."""
    dest = tmp / "config"
    if not (dest / "axes" / "toy_depth.yaml").exists():
        shutil.copytree(REPO / "config", dest, dirs_exist_ok=True)
        (dest / "axes" / "toy_depth.yaml").write_text(toy_world.AXIS_YAML)
    return dest


def toy_env(monkeypatch, tmp: Path) -> dict[str, str]:
    test_dir = str(Path(__file__).parents[1])  # where the `helpers` package is importable from
    pythonpath = os.pathsep.join(p for p in (test_dir, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(toy_world.ENV, INDGEN_CONFIG_DIR=str(config_dir(tmp)), PYTHONPATH=pythonpath)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def campaign_yaml(tmp: Path, name: str = "toy_campaign", **overrides) -> Path:
    doc = {"name": name, "axis": "toy_depth", "world": "toy", "policies": ["skilled"], "trials_per_level": 4,
           "seed": 11}
    doc.update(overrides)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def plan_toy(store, tmp: Path, certify_first: bool = True, campaign_id: str | None = None, **overrides):
    """Plan a toy campaign in `store` (after an oracle-style certify campaign, by default)."""
    lib = AxisLibrary([config_dir(tmp) / "axes"])
    if certify_first:
        from indgen_core.campaign.inprocess import InProcessExecutor
        from indgen_core.campaign.runner import run_campaign

        cert = plan_campaign(store, CampaignConfig(name="toy_cert", axis="toy_depth", world="toy",
                                                   policies=["skilled"], trials_per_level=6, purpose="certify",
                                                   seed=3), axes=lib)
        run_campaign(store, cert.id, InProcessExecutor(toy_world.ToyWorld(), policies={"skilled": toy_world.Skilled()}))
    doc = {"name": "toy_campaign", "axis": "toy_depth", "world": "toy", "policies": ["skilled"],
           "trials_per_level": 4, "seed": 11, "levels": [0, 1, 2, 3]}
    doc.update(overrides)
    return plan_campaign(store, CampaignConfig(**doc), campaign_id=campaign_id, axes=lib)
