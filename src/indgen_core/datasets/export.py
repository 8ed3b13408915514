"""`indgen dataset export`: episodes in, a LeRobot dataset out, all or nothing.

Everything is built in a hidden folder beside OUT (`.OUT.partial-<pid>`: the staged arrays, the
dataset lerobot writes, IndGen's episode records) and renamed to OUT only once lerobot has
written every episode. An error, a refused episode or Ctrl-C removes the hidden folder: OUT
either does not exist or is a whole dataset. OUT is never overwritten.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from indgen_core.datasets import layout, lerobot_env
from indgen_core.datasets.staging import Staging
from indgen_core.errors import IndGenError

log = logging.getLogger(__name__)
EPISODES_FILE = "meta/indgen_episodes.jsonl"


@dataclass
class Exported:
    path: Path
    format: str
    episodes: int
    frames: int
    cameras: list[str]


def export(
    episodes: Iterable[layout.Episode],
    out: Path,
    fmt: str,
    repo_id: str = "local/indgen",
    progress: Callable[[str], None] = log.info,
) -> Exported:
    if fmt not in layout.FORMATS:
        raise IndGenError(f"--format must be one of {', '.join(layout.FORMATS)}, not {fmt!r}")
    out = Path(out)
    if out.exists():
        raise IndGenError(f"{out} already exists: export to a new folder (a dataset is never written over)")
    if not out.parent.is_dir():
        raise IndGenError(f"{out.parent} is not a folder")
    lerobot_env.interpreter(fmt)  # before any work: says how to set it up
    work = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        staging = Staging(work / "staging", fmt)
        for episode in episodes:
            staging.add(episode)
            progress(
                f"episode {len(staging.episodes)}: {episode.trial_id} (level {episode.level}, {episode.outcome}, "
                f"{episode.frames} frames)"
            )
        if not staging.episodes:
            raise IndGenError("no episode to export")
        staging.close()
        dataset = work / "dataset"
        total = len(staging.episodes)

        def written(line: str) -> None:
            try:
                index = json.loads(line)["episode"]
            except (ValueError, KeyError, TypeError):
                return
            progress(f"lerobot {fmt}: wrote episode {index + 1} of {total}")

        lerobot_env.run(fmt, ["write", str(work / "staging"), str(dataset), repo_id], written, cwd=work)
        with (dataset / EPISODES_FILE).open("w") as f:
            for index, episode in enumerate(staging.episodes):
                record = {"episode_index": index, **episode.record()}
                record.pop("staged_as", None)
                f.write(json.dumps(record) + "\n")
        dataset.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    frames = sum(e.frames for e in staging.episodes)
    return Exported(out, fmt, len(staging.episodes), frames, staging.episodes[0].cameras)


def read_back(path: Path, fmt: str, out_npz: Path, repo_id: str = "local/indgen") -> dict:
    """Every frame of the dataset at `path` through lerobot's own LeRobotDataset (into
    `out_npz`), and what its metadata says: how a test, or a doubtful user, checks an export."""
    lines: list[str] = []
    lerobot_env.run(fmt, ["read", str(path), repo_id, str(out_npz)], lines.append, cwd=out_npz.parent)
    return json.loads(lines[-1])


def episode_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in (Path(path) / EPISODES_FILE).read_text().splitlines()]
