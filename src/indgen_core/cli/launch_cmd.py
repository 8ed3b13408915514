"""`indgen launch PROFILE [name:=value ...]`"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "launch",
        help="bring a node graph up (the same graph as `ros2 launch indgen ...`)",
        description="Start every process of a graph profile (config/graphs/PROFILE.yaml) with "
        "prefixed logs; Ctrl-C or SIGTERM stops them all. Arguments are given as name:=value, as "
        "with ros2 launch. `--show` prints the commands without starting anything.",
    )
    p.add_argument("profile", nargs="?", help="graph profile, e.g. blockenv_axis (see --list)")
    p.add_argument("assignments", nargs="*", metavar="name:=value", help="profile arguments")
    p.add_argument("--show", action="store_true", help="print the resolved commands and exit")
    p.add_argument("--list", action="store_true", help="list the profiles and their arguments, then exit")
    p.set_defaults(func=run)


def parse_assignments(items: list[str]) -> dict[str, str]:
    from indgen_core.errors import IndGenError

    out = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise IndGenError(f"arguments are written name:=value, got '{item}'")
        out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    from indgen_core import graph, paths
    from indgen_core.errors import IndGenError
    from indgen_core.nodes import launcher

    if args.list:
        for path in sorted((paths.config_dir() / "graphs").glob("*.yaml")):
            profile = graph.load_profile(path.stem)
            print(f"{profile.name}: {profile.spec.description}")
            for name, arg in profile.spec.arguments.items():
                print(f"    {name}:={arg.default!s:<24} {arg.description}")
        return 0
    if not args.profile:
        raise IndGenError("name a graph profile (indgen launch --list shows them)")
    profile = graph.load_profile(args.profile)
    nodes = profile.resolve(parse_assignments(args.assignments))
    if args.show:
        for node in nodes:
            print(f"{node.name}: {' '.join(launcher.command(node))}")
        return 0
    return launcher.run(nodes)
