"""`indgen doctor`: print what this machine can do for IndGen, and how to fix what it cannot."""

from __future__ import annotations

import argparse
import dataclasses
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the installation: ROS 2, interfaces, simulators, policies",
        description="Report, one line per item, whether IndGen's dependencies are usable here "
        "and the command that fixes each one that is not. Exit status 1 when a required item is missing.",
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON instead of a table")
    p.add_argument("--no-render", action="store_true", help="skip the headless rendering probe (faster)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from indgen_core import doctor

    results = doctor.run_checks(render_probe=not args.no_render)
    if args.json:
        print(json.dumps([dataclasses.asdict(c) for c in results], indent=2))
    else:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(title="indgen doctor", show_lines=False)
        for col in ("item", "status", "detail", "fix"):
            table.add_column(col, overflow="fold")
        style = {doctor.OK: "green", doctor.MISSING: "red", doctor.WARN: "yellow"}
        for c in results:
            label = c.status + (" (required)" if c.required and c.status != doctor.OK else "")
            table.add_row(c.item, f"[{style[c.status]}]{label}[/]", escape(c.detail), escape(c.fix))
        Console(width=160).print(table)
    return doctor.exit_status(results)
