#!/usr/bin/env python3
"""The level pictures of docs/guides/robocasa.md: one RoboCasa axis' levels side by side, each
the scene camera's view (IndGen's fixed camera in the kitchen) right after the reset of that
level with the same seed, so that only what the axis moves changes between pictures.

    .venv/bin/python scripts/robocasa-level-images.py robocasa_horizon docs/images/robocasa_horizon_levels.jpg
    .venv/bin/python scripts/robocasa-level-images.py robocasa_clutter OUT.jpg --task PickPlaceCabinetToCounter

Needs RoboCasa's environment (`make robocasa`)."""

from __future__ import annotations

import argparse

import numpy as np
from PIL import Image, ImageDraw

from indgen_core.axes.progression import load_axis
from indgen_core.records import TaskSetup
from indgen_sim.robocasa.world import TASKS, RobocasaWorld

TILE = 240  # px


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("axis", help="a robocasa_* axis")
    parser.add_argument("out", help="the picture to write (JPEG)")
    parser.add_argument("--task", default=TASKS[0], choices=TASKS)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    axis = load_axis(args.axis)
    tiles = []
    with RobocasaWorld() as world:
        for level in axis.levels():
            setup = TaskSetup("levels", f"k{level.k}", "robocasa", axis.name, level.k, level.in_distribution,
                              level.parameters, 0, args.seed, "none", options={"task": args.task})  # fmt: skip
            world.reset(setup)
            tile = Image.fromarray(np.asarray(world.preview())).resize((TILE, TILE))
            value = level.parameters[0]
            draw = ImageDraw.Draw(tile)
            draw.rectangle((0, 0, TILE // 2, 16), fill=(0, 0, 0))
            draw.text((4, 3), f"k={level.k}: {value.value:g} {value.unit}", fill=(255, 255, 255))
            tiles.append(tile)
    out = Image.new("RGB", (TILE * len(tiles), TILE))
    for i, tile in enumerate(tiles):
        out.paste(tile, (TILE * i, 0))
    out.save(args.out, quality=85)
    print(f"{args.out}: {len(tiles)} levels of {axis.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
