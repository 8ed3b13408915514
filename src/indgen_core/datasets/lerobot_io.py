"""LeRobot datasets written and read by the lerobot library itself, in lerobot's environment.

IndGen never imports this module: `indgen dataset export` runs it as a script with the
interpreter of lerobot's own environment (`scripts/setup-lerobot.sh`), because lerobot's pins
(torch, datasets, av) conflict with IndGen's and with each other across the two releases that
write the two formats users ask for (0.3.3 writes v2.1, the format openpi's pinned lerobot
reads; 0.4.4 writes v3.0). It imports nothing from IndGen, only lerobot, numpy and the standard
library.

    python lerobot_io.py write STAGING ROOT REPO_ID   # staged episodes -> a dataset at ROOT
    python lerobot_io.py read ROOT REPO_ID OUT.npz    # every frame as lerobot's loader gives it

STAGING holds manifest.json (format, fps, robot_type, features, episodes) and one .npz per
episode (staging.py writes them); every array there has one row per frame. A line of JSON on
stdout per episode written is the progress IndGen shows. Any error: one line on stderr, exit 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def _features(manifest: dict) -> dict:
    return {name: {**f, "shape": tuple(f["shape"])} for name, f in manifest["features"].items()}


def write(staging: Path, root: Path, repo_id: str) -> None:
    from lerobot.datasets.lerobot_dataset import CODEBASE_VERSION, LeRobotDataset

    manifest = json.loads((staging / "manifest.json").read_text())
    if manifest["format"] != CODEBASE_VERSION:
        raise SystemExit(f"this lerobot writes {CODEBASE_VERSION}, not the {manifest['format']} asked for")
    features = _features(manifest)
    dataset = LeRobotDataset.create(
        repo_id=repo_id,
        fps=manifest["fps"],
        features=features,
        root=root,
        robot_type=manifest["robot_type"],
        use_videos=False,
    )
    for index, episode in enumerate(manifest["episodes"]):
        with np.load(staging / episode["file"]) as arrays:
            columns = {name: arrays[name] for name in features}
        frames = len(columns["actions"])
        for t in range(frames):
            frame = {name: column[t] for name, column in columns.items()}
            if CODEBASE_VERSION == "v2.1":  # lerobot 0.3: the task is an argument
                dataset.add_frame(frame, task=episode["task"])
            else:  # lerobot 0.4: the task is a key of the frame
                dataset.add_frame({**frame, "task": episode["task"]})
        dataset.save_episode()
        print(json.dumps({"episode": index, "frames": frames}), flush=True)
    if hasattr(dataset, "finalize"):  # v3.0 buffers parquet footers until this call
        dataset.finalize()


def read(root: Path, repo_id: str, out: Path) -> None:
    """Every frame through LeRobotDataset, as a training loop would get it: images back to
    uint8 HWC (lerobot gives float CHW in [0, 1]), everything else as stored."""
    from lerobot.datasets.lerobot_dataset import CODEBASE_VERSION, LeRobotDataset

    dataset = LeRobotDataset(repo_id, root=root)
    columns: dict[str, list] = {}
    for i in range(len(dataset)):
        item = dataset[i]
        for name, value in item.items():
            array = value.numpy() if hasattr(value, "numpy") else value
            if name in dataset.meta.camera_keys:
                array = np.round(np.transpose(array, (1, 2, 0)) * 255).astype(np.uint8)
            columns.setdefault(name, []).append(array)
    arrays: dict[str, Any] = {name: np.asarray(values) for name, values in columns.items() if name != "task"}
    arrays["task"] = np.asarray(columns.get("task", []), dtype=str)
    np.savez(out, **arrays)
    info = {
        "codebase_version": dataset.meta.info["codebase_version"],
        "lerobot_writes": CODEBASE_VERSION,
        "fps": dataset.fps,
        "episodes": dataset.num_episodes,
        "frames": len(dataset),
        "robot_type": dataset.meta.robot_type,
        "features": sorted(dataset.features),
        "tasks": sorted(set(columns.get("task", []))),
    }
    print(json.dumps(info), flush=True)


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["write"] and len(argv) == 4:
            write(Path(argv[1]), Path(argv[2]), argv[3])
        elif argv[:1] == ["read"] and len(argv) == 4:
            read(Path(argv[1]), argv[2], Path(argv[3]))
        else:
            print("usage: lerobot_io.py write STAGING ROOT REPO_ID | read ROOT REPO_ID OUT.npz", file=sys.stderr)
            return 2
    except Exception as exc:  # one line for IndGen to pass on; lerobot's traceback is not for the user
        print(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
