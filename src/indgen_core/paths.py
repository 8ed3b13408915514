"""Where IndGen finds its configs and keeps its data.

Configs (axes, campaigns, graphs) are looked up in this order: $INDGEN_CONFIG_DIR; the
source tree when running from a checkout (pip -e); <prefix>/share/indgen/config for a
wheel or colcon install. Results go to $INDGEN_DB, or $XDG_DATA_HOME/indgen/results.sqlite.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def share_dir() -> Path:
    """The folder holding config/ and launch/ (the package's share/indgen)."""
    override = os.environ.get("INDGEN_SHARE_DIR")
    if override:
        return Path(override)
    if (_SOURCE_ROOT / "config").is_dir() and (_SOURCE_ROOT / "package.xml").is_file():
        return _SOURCE_ROOT
    for prefix in (sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidate = Path(prefix) / "share" / "indgen"
        if (candidate / "config").is_dir():
            return candidate
    return _SOURCE_ROOT


def config_dir() -> Path:
    override = os.environ.get("INDGEN_CONFIG_DIR")
    return Path(override) if override else share_dir() / "config"


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "indgen"


def default_db() -> Path:
    """The results store: $INDGEN_DB, else $XDG_DATA_HOME/indgen/results.sqlite."""
    override = os.environ.get("INDGEN_DB")
    return Path(override) if override else data_dir() / "results.sqlite"


def artifacts_dir() -> Path:
    override = os.environ.get("INDGEN_ARTIFACTS")
    return Path(override) if override else data_dir() / "artifacts"
