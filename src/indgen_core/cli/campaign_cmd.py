"""`indgen campaign list | plan | run | status | resume | unblind | export`"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from indgen_core import paths
from indgen_core.campaign import blind
from indgen_core.cli.common import add_db_option, open_store
from indgen_core.records import Outcome


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "campaign",
        help="plan, run, resume, inspect and export campaigns",
        description="A campaign runs N trials per level of an axis for one or more policies, "
        "and records every result in the results store.",
    )
    csub = p.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)

    lp = csub.add_parser("list", help="campaigns in the store", description="List the campaigns in the store.")
    add_db_option(lp)
    lp.set_defaults(func=cmd_list)

    for name, helptext, func in (
        ("plan", "check and write a campaign's plan without running it", cmd_plan),
        ("run", "plan a campaign and run it in this process (no ROS)", cmd_run),
    ):
        pp = csub.add_parser(
            name,
            help=helptext,
            description=helptext[0].upper() + helptext[1:] + ". The "
            "protocol checks of Definition 4 run first; uncertified levels are refused unless "
            "--allow-uncertified is given with a --reason, which is recorded with the results.",
        )
        pp.add_argument("config", type=Path, help="campaign YAML (config/campaigns/*.yaml)")
        pp.add_argument("--id", help="campaign id (default: <name>-<date>-<time>)")
        pp.add_argument(
            "--allow-uncertified",
            action="store_true",
            help="score levels that have no feasibility certificate (recorded in the results)",
        )
        pp.add_argument("--reason", default="", help="why uncertified levels are acceptable (required with the above)")
        if name == "run":
            _workers_option(pp)
        else:
            pp.add_argument(
                "--expect",
                nargs="+",
                default=[],
                metavar="K=RATE",
                help="the success rate you expect at level K (e.g. 0=0.9 3=0.4); levels without one are "
                "sized against the threshold +- 0.15",
            )
            pp.add_argument(
                "--trial-s",
                type=float,
                default=60.0,
                metavar="SECONDS",
                help="seconds one trial takes, reset included, for the robot time (default 60)",
            )
            pp.add_argument(
                "--size-only", action="store_true", help="print how many trials each level needs and write nothing"
            )
        add_db_option(pp)
        pp.set_defaults(func=func)

    for name, helptext, func in (
        ("status", "progress and per-level counts", cmd_status),
        ("resume", "run the pending trials of a campaign in this process", cmd_resume),
    ):
        sp = csub.add_parser(name, help=helptext, description=helptext[0].upper() + helptext[1:] + ".")
        sp.add_argument("id", help="campaign id")
        if name == "resume":
            _workers_option(sp)
        add_db_option(sp)
        sp.set_defaults(func=func)

    dp = csub.add_parser(
        "delete",
        help="remove a campaign, its results and its artifacts from the store",
        description="Remove a campaign and everything the store holds of it (trials, attempts, results, "
        "labels, events, the certificates it earned) and its artifact files under the artifacts folder "
        "(reports, level images, videos); bags are kept, as a bag may hold other campaigns. A running "
        "campaign is refused unless --force (a run that was killed leaves its status 'running').",
    )
    dp.add_argument("id", help="campaign id")
    dp.add_argument("--yes", action="store_true", help="do not ask")
    dp.add_argument("--force", action="store_true", help="delete a campaign whose status says running")
    add_db_option(dp)
    dp.set_defaults(func=cmd_delete)

    up = csub.add_parser(
        "unblind",
        help="reveal which policy each letter of a blind campaign is",
        description="Reveal the policies behind the letters of a blind campaign. The store records "
        "who unblinded it, when and why, every time; from then on reports and comparisons name the "
        "policies. Before the campaign is done it needs --reason, and the cell's console stays blind.",
    )
    up.add_argument("id", help="campaign id")
    up.add_argument("--by", required=True, metavar="NAME", help="who unblinds it (recorded)")
    up.add_argument("--reason", default="", help="why (required while the campaign still runs; recorded)")
    add_db_option(up)
    up.set_defaults(func=cmd_unblind)

    ep = csub.add_parser(
        "export",
        help="every trial with its result as CSV or JSON",
        description="Export every planned trial with its result (CSV), or with the campaign, "
        "events and artifacts (JSON).",
    )
    ep.add_argument("id", help="campaign id")
    ep.add_argument("--format", choices=("csv", "json"), default="csv")
    ep.add_argument("--out", type=Path, help="output file (default: <id>.<format> in the current folder)")
    add_db_option(ep)
    ep.set_defaults(func=cmd_export)


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from indgen_core.report.terminal import wide_console

    with open_store(args) as store:
        table = Table(title=f"campaigns in {store.path}")
        for col in ("id", "axis", "world", "policies", "purpose", "status", "done"):
            table.add_column(col)
        for c in store.campaigns():
            rows = store.rows(c.id)
            done = sum(r.status != "pending" for r in rows)
            table.add_row(
                c.id,
                c.axis,
                c.world,
                ", ".join(blind.shown_names(store, c).values()),
                c.purpose,
                c.status,
                f"{done}/{len(rows)}",
            )
        wide_console(200).print(table)
    return 0


def _plan(args: argparse.Namespace, store):
    from indgen_core.campaign.config import load_campaign_config
    from indgen_core.campaign.planning import plan_campaign

    config = load_campaign_config(args.config)
    record = plan_campaign(
        store,
        config,
        campaign_id=args.id,
        allow_uncertified=args.allow_uncertified,
        override_reason=args.reason,
        source=str(args.config),
    )
    print(
        f"planned campaign {record.id}: {len(store.planned_trials(record.id))} trials "
        f"({record.order_mode} order) in {store.path}"
    )
    return record


def cmd_plan(args: argparse.Namespace) -> int:
    _print_sizes(args)
    if args.size_only:
        return 0
    with open_store(args) as store:
        _plan(args, store)
    return 0


def _print_sizes(args: argparse.Namespace) -> None:
    """The planner's table: per level, trials for a fixed exact design and under the
    sequential rule, and the robot time both take (sample_sizes.py)."""
    from rich.table import Table

    from indgen_core.axes.progression import library
    from indgen_core.campaign.config import load_campaign_config
    from indgen_core.campaign.planning import campaign_levels, config_threshold
    from indgen_core.report.terminal import wide_console
    from indgen_core.stats import sample_sizes

    config = load_campaign_config(args.config)
    axis = library().get(config.axis)
    adaptive = bool(config.adaptive and config.adaptive.enabled)
    threshold = config_threshold(config, axis)
    plan = sample_sizes.plan_levels(
        campaign_levels(config, axis, str(args.config)),
        threshold,
        config.trials_per_level,
        adaptive,
        sample_sizes.parse_expect(args.expect),
        len(config.policies),
        args.trial_s,
    )
    conf, power = f"{plan.confidence:.0%}", f"{plan.power:.0%}"
    table = Table(
        title=f"trials per level to tell the rate from the threshold {threshold:g} ({conf} confidence, {power} power)",
        caption="fixed: exact one-sided binomial test sized in advance; sequential: "
        "the adaptive rule (anytime-valid), computed exactly per level, "
        "at most the cap",
    )
    for col in ("k", "planned rate", "fixed design", "sequential mean", "sequential p90", "cap", "undecided at cap"):
        table.add_column(col, justify="right")
    for lv in plan.levels:
        table.add_row(
            str(lv.level),
            " or ".join(f"{r:g}" for r in lv.rates),
            str(lv.fixed),
            f"{lv.sequential.mean:.1f}",
            str(lv.sequential.p90),
            str(lv.cap),
            f"{lv.sequential.undecided:.0%}",
        )
    console = wide_console(200)
    console.print(table)
    who = f"{plan.policies} policies" if plan.policies > 1 else "1 policy"
    fixed_h = plan.robot_hours([lv.fixed for lv in plan.levels])
    decided_h = plan.robot_hours([lv.to_decision.mean for lv in plan.levels])
    capped_h = plan.robot_hours([lv.sequential.mean for lv in plan.levels])
    written_h = plan.robot_hours([config.trials_per_level] * len(plan.levels))
    console.print(
        f"robot time at {args.trial_s:g} s per trial for {who}, every level to a decision: fixed design "
        f"{fixed_h:.1f} h, sequential rule {decided_h:.1f} h on average; as written ({config.trials_per_level} "
        f"per level{', adaptive' if adaptive else ''}): at most {written_h:.1f} h"
        + (f", {capped_h:.1f} h on average with the cap" if adaptive else "")
    )
    short = [lv.level for lv in plan.levels if not adaptive and config.trials_per_level < lv.fixed]
    if short:
        console.print(
            f"[yellow]note:[/] trials_per_level {config.trials_per_level} is fewer than the fixed design "
            f"needs at levels {short}: those verdicts will often stay undecided"
        )
    undecided = [lv.level for lv in plan.levels if adaptive and lv.sequential.undecided > 0.2]
    if undecided:
        console.print(
            f"[yellow]note:[/] with a cap of {config.trials_per_level} trials, levels {undecided} stay "
            "undecided in more than 20% of runs; raise trials_per_level"
        )
    if adaptive and config.adaptive is not None and config.adaptive.search == "break":
        _print_search(console, config, axis, threshold, sample_sizes.parse_expect(args.expect), args.trial_s)


def _print_search(console, config, axis, threshold: float, expect: dict[int, float], trial_s: float) -> None:
    """The break search on the curve the user expects, beside the per-level sweep."""
    from indgen_core.campaign import plan as plan_mod
    from indgen_core.campaign.planning import campaign_levels
    from indgen_core.stats import sample_sizes

    levels = campaign_levels(config, axis, str(config.name))
    places = {k: axis.distance(k) for k in levels}
    for chain in plan_mod.chains(places).values():
        missing = [k for k in chain if k not in expect]
        if missing:
            console.print(
                f"break search: give every level's expected rate (--expect K=RATE) to plan it; "
                f"missing on this side: {missing}"
            )
            continue
        found = sample_sizes.simulate_search(chain, [expect[k] for k in chain], threshold, config.trials_per_level)
        hours = len(config.policies) * trial_s / 3600.0
        console.print(
            f"break search along {chain}: {found.mean:.1f} trials on average (90th percentile {found.p90}), "
            f"{found.narrowed:.0%} of runs narrow the set to one or two adjacent levels, "
            f"{found.missed:.1%} miss the true break; the per-level sweep: {found.sweep_mean:.1f} trials, "
            f"naming another level in {found.sweep_missed:.1%}; robot time {found.mean * hours:.1f} h "
            f"against {found.sweep_mean * hours:.1f} h ({sample_sizes.SIMULATED_RUNS} simulated runs)"
        )


def _workers_option(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=_worker_count,
        default=1,
        metavar="N",
        help="spread the trials over N worker processes on this machine (a Dask LocalCluster on "
        "127.0.0.1; 0: one per core); a worker that dies costs a retry of its trial, never a result",
    )
    where.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run the trials on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786); "
        "this process alone writes the results store",
    )


def _worker_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers takes a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--workers must be 0 (one per core) or more, not {value}")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    from indgen_core.campaign.config import load_campaign_config
    from indgen_core.campaign.inprocess import check_runnable

    config = load_campaign_config(args.config)
    if not args.cluster:  # a cluster's workers make them, in their own environment
        check_runnable(config.world, config.policies, config.endpoints)
    with open_store(args) as store:
        record = _plan(args, store)
        return _run(store, record.id, args.workers, args.cluster)


def cmd_resume(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        store.campaign(args.id)
        return _run(store, args.id, args.workers, args.cluster)


def _run(store, campaign_id: str, workers: int = 1, cluster: str | None = None) -> int:
    from indgen_core.report import print_table
    from indgen_core.report.analysis import summarize

    record = store.campaign(campaign_id)
    total = len(store.planned_trials(campaign_id))
    already = total - len(store.pending_trials(campaign_id))
    try:
        summary = _run_trials(store, record, total, already, workers, cluster)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: say where it stands and how to go on
        left = len(store.pending_trials(campaign_id))
        store.set_status(campaign_id, "interrupted", f"interrupted with {left} of {total} trials pending")
        print(
            f"campaign {campaign_id} interrupted: {total - left} of {total} trials done, {left} pending; "
            f"`indgen campaign resume {campaign_id}` goes on",
            file=sys.stderr,
        )
        raise
    if blind.rates_hidden(store, store.campaign(campaign_id)):
        print(f"blind campaign: its rates stay hidden until it is done (`indgen campaign resume {campaign_id}`)")
    else:
        print_table([summarize(store, campaign_id)])
    print(
        f"ran {summary.ran} trials, skipped {summary.skipped}, {summary.remaining} pending; "
        f"`indgen report {campaign_id}` writes the report"
    )
    from indgen_core.report.index_page import refresh_index

    index = refresh_index(store)
    if index is not None:
        print(f"index: {index}")
    return 0


def _run_trials(store, record, total: int, already: int, workers: int, cluster: str | None):
    """The campaign's pending trials, in this process or on workers, with a progress bar whose
    time left counts this run's pace only."""
    from indgen_core.campaign.inprocess import InProcessExecutor
    from indgen_core.campaign.progress import ProgressPrinter
    from indgen_core.campaign.runner import run_campaign
    from indgen_core.report.provenance import record_policy

    def progress(bar):
        return lambda done, tot, trial, res: bar.update(done, f"{trial.trial_id}: {res.outcome.word}")

    if cluster or workers != 1:
        from indgen_core.campaign import cluster as cluster_mod

        with (
            cluster_mod.connect(cluster, workers or cluster_mod.default_workers()) as client,
            ProgressPrinter(total, f"campaign {record.id}", already=already) as bar,
        ):
            return cluster_mod.run_campaign_cluster(store, record.id, client, progress=progress(bar))
    executor = InProcessExecutor(record.world, endpoints=record.config.endpoints)
    try:
        with ProgressPrinter(total, f"campaign {record.id}", already=already) as bar:
            return run_campaign(store, record.id, executor, progress=progress(bar))
    finally:
        for name, policy in executor.policies.items():  # who ran: the report's provenance
            record_policy(store, record.id, name, dict(getattr(policy, "metadata", {}) or {}))
        executor.close()


def cmd_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from indgen_core.report.terminal import wide_console

    with open_store(args) as store:
        c = store.campaign(args.id)
        counts = store.counts(args.id)
        names, hidden = blind.shown_names(store, c), blind.rates_hidden(store, c)
        console = wide_console(200)
        console.print(
            f"[bold]{c.id}[/]: axis {c.axis}, world {c.world}, purpose {c.purpose}, status {c.status}, "
            f"order {c.order_mode}, seed {c.seed}"
        )
        if c.override_uncertified:
            console.print(f"[yellow]uncertified levels allowed:[/] {c.override_reason}")
        table = Table()
        for col in (
            "policy",
            "k",
            "planned",
            "success",
            "failure",
            "timeout",
            "invalid",
            "pending",
            "skipped",
            "aborted attempts",
        ):
            table.add_column(col, justify="right")
        shown = (Outcome.SUCCESS, Outcome.FAILURE, Outcome.TIMEOUT, Outcome.INVALID)
        for (policy, k), n in sorted(counts.items(), key=lambda kv: (names[kv[0][0]], kv[0][1])):
            table.add_row(
                names[policy],
                str(k),
                str(n.planned),
                *("hidden" if hidden and o.scored else str(n.of(o)) for o in shown),
                *(str(v) for v in (n.pending, n.skipped, n.aborted)),
            )
        console.print(table)
        if blind.labels(c):
            event = blind.unblinding(store, c)
            console.print(
                f"blind: {event['message']}"
                if event
                else "blind: policies named by letter" + (", outcomes hidden until it is done" if hidden else "")
            )
        pending = sum(n.pending for n in counts.values())
        total = sum(n.planned for n in counts.values())
        console.print(f"{total - pending}/{total} trials finished")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    import shutil
    import time

    from indgen_core import paths
    from indgen_core.errors import IndGenError

    with open_store(args) as store:
        record = store.campaign(args.id)
        if record.status == "running" and not args.force:
            age = time.time() - record.updated_at
            raise IndGenError(
                f"campaign {args.id} is running (its last change {age / 60:.0f} min ago): stop it first, or pass "
                "--force if nothing runs it any more (a killed run leaves it 'running')"
            )
        planned = len(store.planned_trials(args.id))
        what = f"campaign {args.id} ({planned} trials, {len(store.artifacts(args.id))} artifacts)"
        if not args.yes:
            if not sys.stdin.isatty():
                raise IndGenError(f"deleting {what} needs --yes where nobody can answer a question")
            if input(f"delete {what}? [y/N] ").strip().lower() not in ("y", "yes"):
                print("nothing deleted")
                return 1
        files = store.delete_campaign(args.id)
    root = paths.artifacts_dir().resolve()
    removed = kept = 0
    for name in files:
        path = Path(name).resolve()
        if root not in path.parents or path.suffix == ".mcap" or (path / "metadata.yaml").exists():
            kept += 1  # outside the artifacts folder, or a bag: another campaign's too
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed += 1
    report = paths.artifacts_dir() / "reports" / args.id
    if report.is_dir():
        shutil.rmtree(report, ignore_errors=True)
        removed += 1
    kept_text = f", {kept} kept (bags, or outside {root})" if kept else ""
    print(f"deleted {what}: {removed} artifact(s) removed{kept_text}")
    return 0


def cmd_unblind(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        for letter, policy in blind.unblind(store, args.id, args.by, args.reason).items():
            print(f"{letter} = {policy}")
        for event in blind.unblindings(store, store.campaign(args.id)):
            print(event["message"])
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from indgen_core.errors import IndGenError

    with open_store(args) as store:
        if blind.blinded(store, store.campaign(args.id)):
            raise IndGenError(
                f"campaign {args.id} is blind: its export names the policies, so it waits for "
                f"`indgen campaign unblind {args.id} --by NAME`"
            )
        out = args.out or Path(f"{paths.check_id(args.id)}.{args.format}")
        path = store.export(args.id, out, args.format)
    print(f"exported {args.id} to {path}")
    return 0
