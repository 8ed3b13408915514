"""The visual-distractor axis: k extra LIBERO-Object items placed where they touch none of the
task's objects. LIBERO builds a scene from its BDDL problem file, so a level with k distractors
is the task's BDDL with k more objects (of the kinds that are not in the scene yet) and k small
floor regions for them, chosen far from every existing region. The task's own objects and the
robot then take their stock initial state, copied joint by joint."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from indgen_core import paths

KINDS = (
    "alphabet_soup",
    "cream_cheese",
    "salad_dressing",
    "bbq_sauce",
    "ketchup",
    "tomato_sauce",
    "butter",
    "milk",
    "chocolate_pudding",
    "orange_juice",
)
MIN_GAP = 0.11  # m between a distractor's region and any other region's centre
HALF = 0.01  # half size of a distractor's region
# where the task's objects stand, so that distractors stay in the cameras' view
CANDIDATES = [(round(x, 3), round(y, 3)) for x in np.arange(-0.22, 0.221, 0.02) for y in np.arange(-0.28, 0.281, 0.02)]


def _regions(text: str) -> list[tuple[float, float]]:
    centres = []
    for m in re.finditer(r"\(\s*(-?[\d.e-]+)\s+(-?[\d.e-]+)\s+(-?[\d.e-]+)\s+(-?[\d.e-]+)\s*\)", text):
        x0, y0, x1, y1 = (float(v) for v in m.groups())
        centres.append(((x0 + x1) / 2, (y0 + y1) / 2))
    return centres


def with_distractors(bddl: str, count: int) -> str:
    """The path of a BDDL file: `bddl` with `count` distractors (the file itself for 0)."""
    if count <= 0:
        return bddl
    text = Path(bddl).read_text()
    present = set(re.findall(r"^\s*\w+_\d+\s+-\s+(\w+)\s*$", text, flags=re.M))
    kinds = [k for k in KINDS if k not in present]
    if count > len(kinds):
        raise ValueError(f"only {len(kinds)} kinds of object are left for distractors, not {count}")
    taken = _regions(text)
    spots: list[tuple[float, float]] = []
    for _ in range(count):  # farthest-point choice: deterministic, well spread
        best = max(CANDIDATES, key=lambda c: min(np.hypot(c[0] - t[0], c[1] - t[1]) for t in taken + spots))
        if min(np.hypot(best[0] - t[0], best[1] - t[1]) for t in taken + spots) < MIN_GAP:
            raise ValueError(f"no room for {count} distractors")
        spots.append(best)
    regions = "".join(
        f"      (distractor_region_{i}\n          (:target floor)\n          (:ranges (\n"
        f"              ({x - HALF:.4f} {y - HALF:.4f} {x + HALF:.4f} {y + HALF:.4f})\n"
        "            )\n          )\n      )\n"
        for i, (x, y) in enumerate(spots)
    )
    objects = "".join(f"    {kinds[i]}_1 - {kinds[i]}\n" for i in range(count))
    init = "".join(f"    (On {kinds[i]}_1 floor_distractor_region_{i})\n" for i in range(count))
    out = re.sub(r"(\(:regions\s*\n)", lambda m: m.group(1) + regions, text, count=1)
    out = re.sub(r"(\(:objects\s*\n)", lambda m: m.group(1) + objects, out, count=1)
    out = re.sub(r"(\(:init\s*\n)", lambda m: m.group(1) + init, out, count=1)
    digest = hashlib.sha1(out.encode()).hexdigest()[:10]
    path = paths.data_dir() / "libero" / "bddl" / f"{Path(bddl).stem}_d{count}_{digest}.bddl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(out)
        tmp.replace(path)
    return str(path)
