"""`indgen report ID [ID ...]`"""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core.cli.common import add_db_option, campaign_ids, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="table, plots, Markdown/HTML report and JSON summary of campaigns",
        description="Print the per-level table of one or more campaigns and write report.md, "
        "report.html (self-contained), success_per_level.png and summary.json. Several campaigns "
        "(or a --group) are drawn in one plot, one line per policy. --index writes one page over every "
        "campaign in the store.",
    )
    p.add_argument("campaigns", nargs="*", metavar="ID", help="campaign ids")
    p.add_argument("--group", help="every campaign of this group (e.g. a Table-1 run)")
    p.add_argument(
        "--twin",
        metavar="ID",
        help="a twin campaign of the same policy, axis and levels that ran these campaigns' seeds: adds the "
        "twin's agreement, estimate and prediction-powered interval beside the real-only ones",
    )
    p.add_argument(
        "--index",
        action="store_true",
        help="write index.html over every campaign in the store (filter, sort, overlay their curves); "
        "also refreshed after every campaign",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="output folder (default: <artifacts>/reports/<first id>; with --index <artifacts>/reports)",
    )
    add_db_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from indgen_core import paths
    from indgen_core.report import print_table, write_report
    from indgen_core.report.analysis import refuse_hidden, summarize

    if args.index:
        return _index(args)
    with open_store(args) as store:
        ids = campaign_ids(args, store)
        refuse_hidden(store, ids)
        summaries = [summarize(store, cid, twin=args.twin) for cid in ids]
        print_table(summaries)
        out = args.out or paths.inside(paths.artifacts_dir() / "reports", paths.check_id(args.group or ids[0]))
        files = write_report(store, ids, out, twin=args.twin)
    print(f"report: {files.html}\nmarkdown: {files.markdown}\nplot: {files.plots[0]}\nsummary: {files.json}")
    return 0


def _index(args: argparse.Namespace) -> int:
    from indgen_core import paths
    from indgen_core.errors import IndGenError
    from indgen_core.report.index_page import write_index

    if args.campaigns or args.group or args.twin:
        raise IndGenError("--index covers every campaign in the store: give it no campaign, --group or --twin")
    out = args.out or paths.artifacts_dir() / "reports"
    if out.exists() and not out.is_dir():
        raise IndGenError(f"--out {out} is a file; give a folder for index.html")
    with open_store(args) as store:
        path = write_index(store, out)
        n = len(store.campaigns())
    print(f"index: {path} ({n} campaigns)" if n else f"index: {path} (no campaign in {store.path} yet)")
    return 0
