"""Where IndGen finds its configs and keeps its data.

Configs (axes, campaigns, graphs) are looked up in this order: $INDGEN_CONFIG_DIR; the
source tree when running from a checkout (pip -e); <prefix>/share/indgen/config for a
wheel or colcon install. Results go to $INDGEN_DB, or $XDG_DATA_HOME/indgen/results.sqlite.

Campaign ids, names and trial ids end up in file names (reports, level images, bags), so
they are slugs (ID_PATTERN), and every path built from one is checked to stay inside its base
folder (`inside`): an id such as `../../x` or `/etc` never escapes.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from indgen_core.errors import IndGenError

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


def named_config(folder: str, name: str, what: str) -> Path:
    """config/<folder>/<name>.yaml, or `name` itself when it is a YAML file; one sentence
    listing what exists when neither is there."""
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    path = config_dir() / folder / f"{name}.yaml"
    if not path.is_file():
        from indgen_core.configfile import ConfigError

        known = sorted(p.stem for p in (config_dir() / folder).glob("*.yaml"))
        raise ConfigError(path, f"no {what} '{name}'; known: {', '.join(known) or 'none'}")
    return path


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


#: campaign ids, campaign names and trial ids: 1-128 characters, letters, digits, '.', '_' and
#: '-', starting with a letter or a digit (so never '..', never a path separator)
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_ID = re.compile(ID_PATTERN)


class UnsafePath(IndGenError):
    pass


def check_id(value: str, what: str = "campaign id") -> str:
    """`value` if it is a valid id, else one sentence saying why not."""
    if not isinstance(value, str) or not _ID.fullmatch(value) or ".." in value:
        shown = value if isinstance(value, str) and len(value) <= 60 else f"{str(value)[:60]}..."
        raise UnsafePath(
            f"{what} {shown!r} is not allowed: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no '/', no '..')"
        )
    return value


def inside(base: str | Path, *parts: str) -> Path:
    """base/parts..., refused unless the result stays inside `base` (no '..', no absolute
    part, no symlink out)."""
    root = Path(base).resolve()
    path = root.joinpath(*parts).resolve()
    if path != root and root not in path.parents:
        raise UnsafePath(f"{'/'.join(parts)!r} would leave the folder {root}; refused")
    return path
