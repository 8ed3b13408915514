"""How long a world's reset keeps a Python thread beside it from running: the sim bridge's
feedback thread is such a thread, and the progression manager takes a world that gives no
feedback for world_silence_s (reset_silence_s while it says it is resetting) for a dead one.

    .venv/bin/python bench/reset_quiet_bench.py [--levels -1 0 1]

A heartbeat thread wakes every 50 ms while LIBERO (task 2, the libero_goal_y axis) resets to
each level and renders its preview, as the sim bridge does at a level's first trial; printed:
each reset's wall time and the longest gap between two heartbeats, and the same for the DROID
twin (the baseline, measured in the same run) with the gaps' ratio to it. On an idle 2-core
machine LIBERO's longest gap was 1.3 to 1.6 s (18x the twin's): under a loaded machine's share of the CPU, a few times
that (why reset_silence_s is 20 s and world_silence_s 5 s).
"""

from __future__ import annotations

import argparse
import threading
import time

from indgen_core import registry, rendering
from indgen_core.axes.progression import library
from indgen_core.records import TaskSetup

PERIOD_S = 0.05


def longest_gaps(world, axis: str, levels: list[int], options: dict) -> list[tuple[int, float, float]]:
    """(level, reset + preview wall time, longest heartbeat gap) per level."""
    gaps: list[float] = []
    stop = threading.Event()

    def beat() -> None:
        last = time.monotonic()
        while not stop.wait(PERIOD_S):
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    out = []
    try:
        for k in levels:
            level = library().get(axis).level(k)
            setup = TaskSetup("bench", f"k{k}", world.name, axis, k, k == 0, level.parameters, 0, 0, "bench",
                              level.language_instruction or "", max_steps=10, options=options)
            gaps.clear()
            started = time.monotonic()
            world.reset(setup)
            world.preview()
            out.append((k, time.monotonic() - started, max(gaps, default=0.0)))
    finally:
        stop.set()
        thread.join(1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[-1, 0, 1])
    args = parser.parse_args()
    rendering.use_headless_gl()
    twin = registry.make(registry.WORLDS, "droid_twin", cameras=False, builtin=True)
    baseline = longest_gaps(twin, "stack", [max(k, 0) for k in args.levels], {})
    twin.close()
    libero = registry.make(registry.WORLDS, "libero", cameras=False)
    measured = longest_gaps(libero, "libero_goal_y", args.levels, {"task": 2})
    libero.close()
    base_gap = max(g for _, _, g in baseline)
    print(f"heartbeat every {PERIOD_S * 1000:.0f} ms beside each reset and preview")
    for name, rows in (("droid_twin (baseline)", baseline), ("libero task 2", measured)):
        for k, wall, gap in rows:
            print(f"{name:22s} k={k:+d}  reset+preview {wall:6.2f} s  longest gap {gap:5.2f} s  "
                  f"({gap / base_gap:.1f}x the baseline's longest)")


if __name__ == "__main__":
    main()
