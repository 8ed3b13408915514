"""`indgen stand-in build-scene`: the person's hands in a rehearsal against the FR3 stand-in
(`robot:=mock`). On the real cell a person builds the scene the console asks for and presses
Enter; against the stand-in nobody can touch the simulated table, so this command builds the
latest task setup's scene in it (the stand-in's /indgen/sim/stand_in/build_scene service, which
the tests call), before Enter in the console."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stand-in",
        help="the FR3 stand-in (robot:=mock): do what the person at the cell does with their hands",
        description="Commands for a rehearsal against the FR3 stand-in (indgen launch stack_axis sim:=false "
        "robot:=mock).",
    )
    ssub = p.add_subparsers(dest="stand_in_command", metavar="ACTION", required=True)
    b = ssub.add_parser(
        "build-scene",
        help="build the scene the console asks for, in the stand-in (then press Enter in the console)",
        description="Build the latest task setup's scene in the stand-in's simulated cell: what the person "
        "does with their hands on a real cell when the console says BUILD THE SCENE. Then press Enter in "
        "the console (scene ready).",
    )
    b.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the stand-in (default 10)")
    b.set_defaults(func=cmd_build_scene)


def cmd_build_scene(args: argparse.Namespace) -> int:
    from indgen_core.errors import IndGenError
    from indgen_core.ros.oneshot import trigger
    from indgen_sim.node_interfaces import STAND_IN

    ok, message = trigger(f"{STAND_IN}/build_scene", args.timeout)
    if not ok:
        raise IndGenError(f"the stand-in built no scene: {message}")
    print(message)
    return 0
