"""Where RoboCasa's assets are and which of them are there, without importing RoboCasa (it
lives in its own environment): what `indgen doctor` reports and the world checks before it
runs the full kitchen.

The wheel ships the procedural fixtures (counters, cabinets, drawers, handles), the layouts
and styles; RoboCasa's download script (`robocasa-download-assets`, the rlinf redistribution's
command for robocasa/scripts/download_kitchen_assets.py, about 10 GB) adds the textures, the
model fixtures (sinks, stoves, fridges, ...) and the objects. The asset root is
$ROBOCASA_ASSETS_PATH, else robocasa/models/assets inside RoboCasa's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: what the download adds, each as a folder under the asset root with RoboCasa's layout
DOWNLOADED = {
    "textures": "textures",
    "model fixtures (sinks, stoves, ...)": "fixtures/sinks",
    "objects (objaverse)": "objects/objaverse",
    "objects (lightwheel)": "objects/lightwheel",
}
#: what the wheel ships and the reduced kitchen needs
SHIPPED = {"layouts": "scenes/kitchen_layouts", "styles": "scenes/kitchen_styles", "counters": "fixtures/counters"}
DOWNLOAD_COMMAND = (
    "robocasa-download-assets --assets-path DIR -y (in .venv-robocasa), then export ROBOCASA_ASSETS_PATH=DIR"
)


@dataclass(frozen=True)
class AssetReport:
    root: Path | None
    shipped: dict[str, bool]
    downloaded: dict[str, bool]

    @property
    def full(self) -> bool:
        return bool(self.downloaded) and all(self.downloaded.values())

    def missing(self) -> list[str]:
        return [name for name, there in self.downloaded.items() if not there]


def _has_files(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def asset_root(env: Path) -> Path | None:
    """$ROBOCASA_ASSETS_PATH, else the robocasa package's assets in the environment `env`."""
    override = os.environ.get("ROBOCASA_ASSETS_PATH")
    if override:
        return Path(override)
    found = sorted(env.glob("lib/python3*/site-packages/robocasa/models/assets"))
    return found[0] if found else None


def inspect_assets(root: Path | None) -> AssetReport:
    if root is None:
        return AssetReport(None, dict.fromkeys(SHIPPED, False), dict.fromkeys(DOWNLOADED, False))
    return AssetReport(
        root,
        {name: _has_files(root / sub) for name, sub in SHIPPED.items()},
        {name: _has_files(root / sub) for name, sub in DOWNLOADED.items()},
    )


def doctor_check() -> tuple[str, str, str, str]:
    """(item, status, detail, fix) for `indgen doctor` (group indgen.doctor)."""
    from indgen_sim.robocasa.world import env_root

    env = env_root()
    if not (env / "bin" / "python").exists():
        return "RoboCasa", "missing", f"optional: the robocasa world (no environment at {env})", "make robocasa"
    report = inspect_assets(asset_root(env))
    if not report.root or not all(report.shipped.values()):
        return "RoboCasa", "warn", f"{env} has no RoboCasa wheel assets", "make robocasa"
    if report.full:
        return "RoboCasa", "ok", f"full kitchen assets at {report.root}", ""
    return (
        "RoboCasa",
        "warn",
        f"reduced kitchen only (wheel assets at {report.root}; not downloaded: {', '.join(report.missing())})",
        DOWNLOAD_COMMAND,
    )
