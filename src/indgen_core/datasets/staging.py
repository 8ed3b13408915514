"""Episodes as arrays on disk, handed to the writer that runs in lerobot's environment.

The two sides share no Python objects (different interpreters, different numpy), so the
hand-over is files: one .npz per episode with a row per frame for every feature, and
manifest.json naming the format, the frame rate, the features and the episodes in order
(lerobot_io.py reads it). Every episode of a dataset must have the same features: one with
other cameras than the first is refused, not written with holes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core.datasets import layout
from indgen_core.errors import IndGenError


class Staging:
    def __init__(self, folder: Path, fmt: str):
        self.folder = folder
        self.format = fmt
        self.features: dict | None = None
        self.episodes: list[layout.Episode] = []
        folder.mkdir(parents=True, exist_ok=True)

    def add(self, episode: layout.Episode) -> None:
        wanted = layout.features(episode.cameras)
        if self.features is None:
            self.features = wanted
        elif wanted != self.features:
            first = self.episodes[0]
            raise IndGenError(
                f"trial {episode.trial_id} has the cameras {episode.cameras or 'none'} and trial {first.trial_id} "
                f"{first.cameras or 'none'}: a dataset holds one set of cameras (export them separately)"
            )
        for name, feature in wanted.items():
            column = episode.columns[name]
            shape = (episode.frames, *feature["shape"])
            if column.shape != shape:
                raise IndGenError(f"{name} of trial {episode.trial_id} has the shape {column.shape}, not {shape}")
        name = f"episode_{len(self.episodes):06d}.npz"
        arrays: dict[str, Any] = {key: episode.columns[key] for key in wanted}
        np.savez(self.folder / name, **arrays)
        episode.notes["staged_as"] = name
        self.episodes.append(episode)

    def close(self) -> Path:
        manifest = {
            "format": self.format,
            "fps": layout.FPS,
            "robot_type": layout.ROBOT_TYPE,
            "features": self.features or {},
            "episodes": [{"file": e.notes["staged_as"], "task": e.task} for e in self.episodes],
        }
        path = self.folder / "manifest.json"
        path.write_text(json.dumps(manifest, indent=1))
        return path
