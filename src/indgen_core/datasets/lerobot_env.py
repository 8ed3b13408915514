"""lerobot's own environment, and running lerobot_io.py in it.

lerobot cannot live in IndGen's environment: 0.3.3 (the last release writing the v2.1 format
openpi's pinned lerobot reads) and 0.4.4 (v3.0) pin torch below 2.8 and 2.11, datasets at <= 3.6
and >= 4, and av at 15. `scripts/setup-lerobot.sh` (`make lerobot`, part of `make test`) builds
one interpreter with torch and the libraries both releases share, and one folder per format
holding that release and its datasets, put first on PYTHONPATH:

    .venv-lerobot/bin/python       $INDGEN_LEROBOT_ENV overrides the place
    .venv-lerobot/format-v2.1/     lerobot 0.3.3, datasets 3.6
    .venv-lerobot/format-v3.0/     lerobot 0.4.4, datasets 4

It runs offline (HF_HUB_OFFLINE=1): a dataset is written to and read from a local folder only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from indgen_core import paths
from indgen_core.errors import IndGenError

SCRIPT = Path(__file__).with_name("lerobot_io.py")


def env_root() -> Path:
    override = os.environ.get("INDGEN_LEROBOT_ENV")
    return Path(override) if override else paths.share_dir() / ".venv-lerobot"


def interpreter(fmt: str) -> tuple[Path, Path]:
    """(python, the format's folder); an IndGenError saying how to set it up when missing."""
    root = env_root()
    python, overlay = root / "bin" / "python", root / f"format-{fmt}"
    if not python.exists() or not (overlay / "lerobot").is_dir():
        raise IndGenError(
            f"lerobot's environment for the {fmt} format is not set up at {root}: run `make lerobot` "
            "(scripts/setup-lerobot.sh), or point INDGEN_LEROBOT_ENV at one"
        )
    return python, overlay


def run(fmt: str, args: list[str], on_line: Callable[[str], None] | None = None, cwd: Path | None = None) -> None:
    """lerobot_io.py ARGS in the format's environment; its stdout lines go to `on_line`. An
    IndGenError with its last line on stderr when it fails."""
    python, overlay = interpreter(fmt)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "AMENT", "ROS_", "LD_LIBRARY"))
    }
    env.update(
        PYTHONPATH=str(overlay),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TOKENIZERS_PARALLELISM="false",
    )
    env.setdefault("HF_HOME", str(Path(cwd or ".").resolve() / ".hf-home"))
    proc = subprocess.Popen(
        [str(python), str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for line in proc.stdout:
            if on_line is not None:
                on_line(line.rstrip("\n"))
        err = proc.stderr.read()
        code = proc.wait()
    except BaseException:  # Ctrl-C: the writer goes too, before the caller removes its folder
        proc.kill()
        proc.wait()
        raise
    if code != 0:
        lines = [line for line in err.splitlines() if line.strip() and "torchcodec" not in line]
        raise IndGenError(f"lerobot {fmt} failed: {lines[-1] if lines else f'exit status {code}'}")
