"""`indgen campaign list | plan | run | status | resume | export`"""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core import paths
from indgen_core.cli.common import add_db_option, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="plan, run, resume, inspect and export campaigns",
                       description="A campaign runs N trials per level of an axis for one or more policies, "
                       "and records every result in the results store.")
    csub = p.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)

    lp = csub.add_parser("list", help="campaigns in the store", description="List the campaigns in the store.")
    add_db_option(lp)
    lp.set_defaults(func=cmd_list)

    for name, helptext, func in (
        ("plan", "check and write a campaign's plan without running it", cmd_plan),
        ("run", "plan a campaign and run it in this process (no ROS)", cmd_run),
    ):
        pp = csub.add_parser(name, help=helptext, description=helptext[0].upper() + helptext[1:] + ". The "
                             "protocol checks of Definition 4 run first; uncertified levels are refused unless "
                             "--allow-uncertified is given with a --reason, which is recorded with the results.")
        pp.add_argument("config", type=Path, help="campaign YAML (config/campaigns/*.yaml)")
        pp.add_argument("--id", help="campaign id (default: <name>-<date>-<time>)")
        pp.add_argument("--allow-uncertified", action="store_true",
                        help="score levels that have no feasibility certificate (recorded in the results)")
        pp.add_argument("--reason", default="", help="why uncertified levels are acceptable (required with the above)")
        if name == "run":
            _workers_option(pp)
        add_db_option(pp)
        pp.set_defaults(func=func)

    for name, helptext, func in (("status", "progress and per-level counts", cmd_status),
                                 ("resume", "run the pending trials of a campaign in this process", cmd_resume)):
        sp = csub.add_parser(name, help=helptext, description=helptext[0].upper() + helptext[1:] + ".")
        sp.add_argument("id", help="campaign id")
        if name == "resume":
            _workers_option(sp)
        add_db_option(sp)
        sp.set_defaults(func=func)

    ep = csub.add_parser("export", help="every trial with its result as CSV or JSON",
                         description="Export every planned trial with its result (CSV), or with the campaign, "
                         "events and artifacts (JSON).")
    ep.add_argument("id", help="campaign id")
    ep.add_argument("--format", choices=("csv", "json"), default="csv")
    ep.add_argument("--out", type=Path, help="output file (default: <id>.<format> in the current folder)")
    add_db_option(ep)
    ep.set_defaults(func=cmd_export)


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    with open_store(args) as store:
        table = Table(title=f"campaigns in {store.path}")
        for col in ("id", "axis", "world", "policies", "purpose", "status", "done"):
            table.add_column(col)
        for c in store.campaigns():
            rows = store.rows(c.id)
            done = sum(r.status != "pending" for r in rows)
            table.add_row(c.id, c.axis, c.world, ", ".join(c.policies), c.purpose, c.status, f"{done}/{len(rows)}")
        Console(width=200).print(table)
    return 0


def _plan(args: argparse.Namespace, store):
    from indgen_core.campaign import load_campaign_config, plan_campaign

    config = load_campaign_config(args.config)
    record = plan_campaign(store, config, campaign_id=args.id, allow_uncertified=args.allow_uncertified,
                           override_reason=args.reason, source=str(args.config))
    print(f"planned campaign {record.id}: {len(store.planned_trials(record.id))} trials "
          f"({record.order_mode} order) in {store.path}")
    return record


def cmd_plan(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        _plan(args, store)
    return 0


def _workers_option(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_worker_count, default=1, metavar="N",
                       help="spread the trials over N worker processes on this machine (a Dask LocalCluster on "
                       "127.0.0.1; 0: one per core); a worker that dies costs a retry of its trial, never a result")
    where.add_argument("--cluster", metavar="ADDRESS",
                       help="run the trials on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786); "
                       "this process alone writes the results store")


def _worker_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers takes a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--workers must be 0 (one per core) or more, not {value}")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        record = _plan(args, store)
        return _run(store, record.id, args.workers, args.cluster)


def cmd_resume(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        store.campaign(args.id)
        return _run(store, args.id, args.workers, args.cluster)


def _run(store, campaign_id: str, workers: int = 1, cluster: str | None = None) -> int:
    from indgen_core.analysis import summarize
    from indgen_core.inprocess import InProcessExecutor
    from indgen_core.progress import ProgressPrinter
    from indgen_core.report import print_table
    from indgen_core.runner import run_campaign

    record = store.campaign(campaign_id)
    total = len(store.planned_trials(campaign_id))
    if cluster or workers != 1:
        from indgen_core import campaign as campaign_mod
        from indgen_core import cluster as cluster_mod
        from indgen_core.errors import IndGenError

        if campaign_mod.adaptive_rule(record) is not None:  # before a cluster is started or joined
            raise IndGenError("an adaptive campaign decides trial by trial: run it with --workers 1 and no --cluster")

        with cluster_mod.connect(cluster, workers or cluster_mod.default_workers()) as client, \
                ProgressPrinter(total, f"campaign {campaign_id}") as bar:
            summary = cluster_mod.run_campaign_cluster(store, campaign_id, client,
                                                       progress=lambda done, tot, trial, res: bar.update(
                                                           done, f"{trial.trial_id}: {res.outcome.name.lower()}"))
    else:
        executor = InProcessExecutor(record.world, endpoints=record.config.get("endpoints"))
        try:
            with ProgressPrinter(total, f"campaign {campaign_id}") as bar:
                summary = run_campaign(store, campaign_id, executor,
                                       progress=lambda done, tot, trial, res: bar.update(
                                           done, f"{trial.trial_id}: {res.outcome.name.lower()}"))
        finally:
            executor.close()
    print_table([summarize(store, campaign_id)])
    print(f"ran {summary.ran} trials, skipped {summary.skipped}, {summary.remaining} pending; "
          f"`indgen report {campaign_id}` writes the report")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    with open_store(args) as store:
        c = store.campaign(args.id)
        counts = store.counts(args.id)
        console = Console(width=200)
        console.print(f"[bold]{c.id}[/]: axis {c.axis}, world {c.world}, purpose {c.purpose}, status {c.status}, "
                      f"order {c.order_mode}, seed {c.seed}")
        if c.override_uncertified:
            console.print(f"[yellow]uncertified levels allowed:[/] {c.override_reason}")
        table = Table()
        for col in ("policy", "k", "planned", "success", "failure", "timeout", "invalid", "pending", "skipped",
                    "aborted attempts"):
            table.add_column(col, justify="right")
        for (policy, k), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            table.add_row(policy, str(k), *(str(n[f]) for f in ("planned", "success", "failure", "timeout",
                                                                 "invalid", "pending", "skipped", "aborted")))
        console.print(table)
        pending = sum(n["pending"] for n in counts.values())
        total = sum(n["planned"] for n in counts.values())
        console.print(f"{total - pending}/{total} trials finished")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        store.campaign(args.id)
        out = args.out or Path(f"{paths.check_id(args.id)}.{args.format}")
        path = store.export(args.id, out, args.format)
    print(f"exported {args.id} to {path}")
    return 0
