"""What starting a node or a command costs before it does anything: the CPU of importing it.

    .venv/bin/python bench/startup_bench.py [--runs 5]

Every node a graph starts (and restarts, after a crash or a kill -9) and every `indgen`
command pays its imports first; on a 2-core machine that CPU is taken from the simulator and
the robot loop. For each node module and the CLI, the least CPU time (user + system) of
importing it in a fresh interpreter over --runs runs, and its ratio to the baseline measured
in the same run: a fresh interpreter importing rclpy and numpy, which every node needs.
Target: each node within 3x the baseline (scipy.stats and statsmodels, most of a second, are
imported only by the functions that use them: indgen_core/stats/level_stats.py).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys

MODULES = {
    "baseline (rclpy, numpy)": "import rclpy, numpy",
    "indgen (the CLI)": "import indgen_core.cli",
    "progression_manager": "import indgen_core.ros.progression_manager",
    "scorer": "import indgen_core.ros.scorer",
    "recorder": "import indgen_core.ros.recorder",
    "sim_bridge": "import indgen_sim.ros.sim_bridge",
    "policy_node": "import indgen_robot.ros.policy_node",
    "fr3_runner": "import indgen_robot.ros.fr3_runner",
    "fr3_stand_in": "import indgen_sim.ros.fr3_stand_in",
}


def cpu_of(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures = {name: min(cpu_of(code) for _ in range(args.runs)) for name, code in MODULES.items()}
    baseline = figures["baseline (rclpy, numpy)"]
    print(f"{'import':<26} {'CPU s':>7} {'x baseline':>11}")
    for name, cpu in figures.items():
        print(f"{name:<26} {cpu:7.2f} {cpu / baseline:11.1f}")


if __name__ == "__main__":
    main()
