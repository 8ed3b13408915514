"""`indgen libero ...`: certify LIBERO-Object levels with the oracle and tabulate them."""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core.cli.common import add_db_option, int_list, name_list, open_store

AXES = ("libero_pick_y", "libero_goal_y", "libero_scale")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "libero",
        help="LIBERO-Object: certify levels with the oracle, tabulate them",
        description="LIBERO-Object (paper section 5.2) behind the world interface.",
    )
    lsub = p.add_subparsers(dest="libero_command", metavar="ACTION", required=True)
    c = lsub.add_parser(
        "certify",
        help="run the oracle on every (task, axis, k) and write the table",
        description="One certify campaign per (task, axis): the oracle at every level k=-3..3. "
        "A level is certified when the oracle solves it, infeasible when every valid trial "
        "fails, rejected when its setup is physically broken (interpenetration, launch). Writes "
        "certification.md/.json and prints the table.",
    )
    c.add_argument("--tasks", type=int_list, default="0-9", help="tasks, e.g. 0-9 or 0,3,5 (default: all ten)")
    c.add_argument(
        "--axes", type=name_list, default=",".join(AXES), help=f"comma-separated axes (default: {','.join(AXES)})"
    )
    c.add_argument("--levels", type=int_list, default="-3,-2,-1,0,1,2,3", help="levels, e.g. -3-3 or 0,2")
    c.add_argument("--trials", type=int, default=1, help="oracle trials per level")
    c.add_argument("--workers", type=int, default=0, help="worker processes (0: one per core)")
    c.add_argument("--out", type=Path, default=Path("."), help="folder for certification.md and .json")
    add_db_option(c)
    c.set_defaults(func=cmd_certify)


def cmd_certify(args: argparse.Namespace) -> int:
    from indgen_sim.libero.certify import certify, write_table

    with open_store(args) as store:
        rows = certify(store, args.tasks, args.axes, args.levels, args.trials, args.workers or None)
    md = write_table(rows, args.levels, args.out)
    print(md.read_text())
    return 0
