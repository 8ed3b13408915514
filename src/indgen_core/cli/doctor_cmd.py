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
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="check the Dask cluster at ADDRESS instead: its workers, "
        "their IndGen version and the worlds and policies each has",
    )
    p.add_argument(
        "--world",
        action="append",
        default=[],
        metavar="NAME",
        help="with --cluster: a world every worker must have (repeat for more)",
    )
    p.add_argument(
        "--campaign",
        metavar="FILE",
        help="with --cluster: a campaign YAML; every worker must have its world and its policies",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.cluster:
        return _cluster(args)
    from indgen_core import doctor

    results = doctor.run_checks(render_probe=not args.no_render)
    if args.json:
        print(json.dumps([dataclasses.asdict(c) for c in results], indent=2))
    else:
        from rich.markup import escape
        from rich.table import Table

        from indgen_core.report.terminal import wide_console

        table = Table(title="indgen doctor", show_lines=False)
        for col in ("item", "status", "detail", "fix"):
            table.add_column(col, overflow="fold")
        style = {doctor.OK: "green", doctor.MISSING: "red", doctor.WARN: "yellow"}
        for c in results:
            label = c.status + (" (required)" if c.required and c.status != doctor.OK else "")
            table.add_row(c.item, f"[{style[c.status]}]{label}[/]", escape(c.detail), escape(c.fix))
        wide_console(160).print(table)
    return doctor.exit_status(results)


def _cluster(args: argparse.Namespace) -> int:
    """Every worker of the cluster against this machine: the same IndGen, the worlds asked for."""
    from indgen_core import __version__
    from indgen_core.campaign import cluster

    worlds, policies = list(args.world), []
    if args.campaign:  # before the cluster: a bad file is one sentence, not a connection
        from indgen_core.campaign.config import load_campaign_config

        config = load_campaign_config(args.campaign)
        worlds.append(config.world)
        policies = list(config.policies)
    with cluster.connect(args.cluster) as client:
        facts = cluster.cluster_facts(client)
    if not facts:
        print(f"cluster {args.cluster}: no workers")
        return 1
    problems = []
    for address, f in sorted(facts.items()):
        missing = [w for w in dict.fromkeys(worlds) if w not in f["worlds"]]
        lacking = [p for p in policies if p not in f["policies"]]
        line = f"  {address}: IndGen {f['indgen']}, Python {f['python']}, worlds {', '.join(f['worlds'])}"
        if f["indgen"] != __version__:
            problems.append(f"{address} runs IndGen {f['indgen']}, this machine {__version__}")
        if missing:
            problems.append(f"{address} lacks the world(s) {', '.join(missing)}")
        if lacking:
            problems.append(f"{address} lacks the policy(ies) {', '.join(lacking)}")
        print(line)
    same = (
        "same IndGen as this machine"
        if all(f["indgen"] == __version__ for f in facts.values())
        else "NOT the same IndGen everywhere"
    )
    print(f"cluster {args.cluster}: {len(facts)} worker{'s' * (len(facts) != 1)}, {same} ({__version__})")
    for problem in problems:
        print(f"problem: {problem}")
    return 1 if problems else 0
