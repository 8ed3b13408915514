"""What tests take from the workspace's ../shared (conftest points MENAGERIE_ROOT at it): a
clone without it skips these cases with the reason, and runs everything else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_ROOT = os.environ.get("MENAGERIE_ROOT", "")
HAS_MENAGERIE = bool(_ROOT) and (Path(_ROOT) / "franka_fr3").is_dir()

needs_menagerie = pytest.mark.skipif(
    not HAS_MENAGERIE, reason="needs mujoco_menagerie's FR3 and Robotiq models: set MENAGERIE_ROOT "
    "(a workspace with ../shared/menagerie sets it; the built-in FR3 cases still run)")
