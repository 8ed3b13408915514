"""`indgen report ID [ID ...]`"""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core.cli.common import add_db_option, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="table, plots, Markdown/HTML report and JSON summary of campaigns",
                       description="Print the per-level table of one or more campaigns and write report.md, "
                       "report.html (self-contained), success_per_level.png and summary.json. Several campaigns "
                       "(or a --group) are drawn in one plot, one line per policy.")
    p.add_argument("campaigns", nargs="*", metavar="ID", help="campaign ids")
    p.add_argument("--group", help="every campaign of this group (e.g. a Table-1 run)")
    p.add_argument("--out", type=Path, help="output folder (default: <artifacts>/reports/<first id>)")
    add_db_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from indgen_core import paths
    from indgen_core.analysis import summarize
    from indgen_core.errors import IndGenError
    from indgen_core.report import print_table, write_report

    with open_store(args) as store:
        ids = list(args.campaigns)
        if args.group:
            ids += [c.id for c in store.campaigns(group=args.group) if c.id not in ids]
            if not ids:
                raise IndGenError(f"no campaigns in group '{args.group}' in {store.path}")
        if not ids:
            raise IndGenError("name at least one campaign id (see `indgen campaign list`) or --group")
        summaries = [summarize(store, cid) for cid in ids]
        print_table(summaries)
        out = args.out or paths.inside(paths.artifacts_dir() / "reports", paths.check_id(args.group or ids[0]))
        files = write_report(store, ids, out)
    print(f"report: {files.html}\nmarkdown: {files.markdown}\nplot: {files.plots[0]}\nsummary: {files.json}")
    return 0
