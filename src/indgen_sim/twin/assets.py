"""Where the FR3 and Robotiq 2F-85 models come from.

1. $MENAGERIE_ROOT/{franka_fr3,robotiq_2f85} (a local mujoco_menagerie checkout, Apache-2.0 / BSD);
2. the `mujoco-menagerie` package's download cache (it fetches from GitHub on first use,
   which fails offline; then this step is skipped);
3. the built-in FR3 (builtin_fr3.py): simple shapes with the FR3's published kinematics and
   joint limits, and a simple parallel gripper. Said once in the log when used.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("indgen.twin")
_warned = False


@dataclass(frozen=True)
class RobotSource:
    kind: str  # "menagerie" or "builtin"
    fr3_xml: Path | None = None
    gripper_xml: Path | None = None
    detail: str = ""


def _menagerie_dirs() -> tuple[Path, Path] | None:
    root = os.environ.get("MENAGERIE_ROOT")
    if root:
        fr3, grip = Path(root) / "franka_fr3" / "fr3.xml", Path(root) / "robotiq_2f85" / "2f85.xml"
        if fr3.is_file() and grip.is_file():
            return fr3, grip
    return None


def _menagerie_package() -> tuple[Path, Path] | None:
    try:
        import mujoco_menagerie
    except ImportError:
        return None
    try:
        fr3 = Path(mujoco_menagerie.get("franka_fr3").xml("fr3"))
        grip = Path(mujoco_menagerie.get("robotiq_2f85").xml("2f85"))
    except Exception:  # offline, or a layout this code does not know
        return None
    return (fr3, grip) if fr3.is_file() and grip.is_file() else None


def robot_source(prefer_builtin: bool = False) -> RobotSource:
    global _warned
    if not prefer_builtin:
        for finder, how in ((_menagerie_dirs, "MENAGERIE_ROOT"), (_menagerie_package, "mujoco-menagerie cache")):
            found = finder()
            if found:
                return RobotSource("menagerie", found[0], found[1], f"mujoco_menagerie via {how}: {found[0].parent}")
    if not _warned:
        log.warning(
            "no mujoco_menagerie FR3 found (set MENAGERIE_ROOT); using the built-in FR3 made of simple "
            "shapes with the FR3's kinematics and joint limits"
        )
        _warned = True
    return RobotSource("builtin", detail="built-in FR3 (simple shapes, FR3 kinematics and joint limits)")
