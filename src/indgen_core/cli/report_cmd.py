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
        "(or a --group) are drawn in one plot, one line per policy.",
    )
    p.add_argument("campaigns", nargs="*", metavar="ID", help="campaign ids")
    p.add_argument("--group", help="every campaign of this group (e.g. a Table-1 run)")
    p.add_argument(
        "--twin",
        metavar="ID",
        help="a twin campaign of the same policy, axis and levels that ran these "
        "campaigns' seeds: adds the twin-sharpened intervals beside the real-only ones",
    )
    p.add_argument("--out", type=Path, help="output folder (default: <artifacts>/reports/<first id>)")
    add_db_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from indgen_core import paths
    from indgen_core.analysis import refuse_hidden, summarize
    from indgen_core.report import print_table, write_report

    with open_store(args) as store:
        ids = campaign_ids(args, store)
        refuse_hidden(store, ids)
        summaries = [summarize(store, cid, twin=args.twin) for cid in ids]
        print_table(summaries)
        out = args.out or paths.inside(paths.artifacts_dir() / "reports", paths.check_id(args.group or ids[0]))
        files = write_report(store, ids, out, twin=args.twin)
    print(f"report: {files.html}\nmarkdown: {files.markdown}\nplot: {files.plots[0]}\nsummary: {files.json}")
    return 0
