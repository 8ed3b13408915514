"""`indgen compare A B [C ...]`: policies against each other, level by level."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from indgen_core.cli.common import add_db_option, campaign_ids, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare policies level by level (paired by seed, Holm-adjusted)",
        description="Compare every policy of the named campaigns (or of a --group) with every other, "
        "at each level: the difference in success rate with its 95% interval, the p-value adjusted by "
        "Holm over all levels and pairs, and which policy is shown better. A single campaign whose "
        "file registered an analysis runs exactly that one. Trials with the same planned seed are pairs "
        "(exact McNemar, Tango's interval); where the seeds differ, Boschloo's exact test and "
        "Newcombe's interval. A campaign run with the sequential rule is compared by an anytime-valid paired test "
        "over the seeds both ran (fixed-size tests are not valid where the rule chose a level's size). Writes "
        "comparison.png and comparison.json.",
    )
    p.add_argument(
        "campaigns",
        nargs="*",
        metavar="ID",
        help="campaign ids (one campaign of several policies, or several campaigns on the same axis and levels)",
    )
    p.add_argument("--group", help="every campaign of this group")
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--paired",
        action="store_const",
        dest="pairing",
        const="paired",
        help="insist on the paired analysis: refuse when the seeds differ",
    )
    how.add_argument(
        "--unpaired",
        action="store_const",
        dest="pairing",
        const="unpaired",
        help="ignore the pairing (Boschloo's test at every level)",
    )
    p.add_argument("--out", type=Path, help="output folder (default: <artifacts>/reports/compare-<first id>)")
    add_db_option(p)
    p.set_defaults(func=run, pairing="auto")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from indgen_core import paths
    from indgen_core.campaign import blind
    from indgen_core.errors import IndGenError
    from indgen_core.report import analysis, comparison_rows
    from indgen_core.report.plots import difference_plot
    from indgen_core.report.terminal import wide_console
    from indgen_core.stats import comparisons as comparisons_mod

    with open_store(args) as store:
        ids = campaign_ids(args, store)
        analysis.refuse_hidden(store, ids)
        sequential = any(analysis.sequential_design(store.campaign(cid)) for cid in ids)
        record = store.campaign(ids[0])
        axis = record.axis
        registered = len(ids) == 1 and analysis.registered_analysis(record) and args.pairing == "auto"
        if registered:  # exactly the comparison the campaign file registered before its trials ran
            comparisons, plan = analysis.registered_comparisons(
                store.rows(record.id), record, blind.shown_names(store, record)
            )
            print(f"pre-registered analysis: {plan}")
            if not comparisons:
                raise IndGenError(f"the pre-registered analysis ({plan}) gave no comparison")
        else:
            arms = analysis.arms_of(store, ids, analysis.shown_labels(store, ids))
            comparisons = analysis.compare_arms(arms, pairing=args.pairing, sequential=sequential)
    if not comparisons:
        raise IndGenError("the campaigns share no level where both policies have a scored trial")
    console = wide_console(200)
    conf = f"{1 - comparisons[0].alpha:.0%}"
    table = Table(
        title=f"policy differences along '{axis}' ({conf} intervals; p adjusted by Holm over "
        f"{len(comparisons)} comparisons)"
    )
    # numbered, not lettered: a blind campaign's policies are letters themselves
    columns = ("k", "policy 1", "policy 2", "rate 1", "rate 2", "1 - 2", f"{conf} interval", "method", "p", "Holm p")
    for col in (*columns, "better"):
        table.add_column(col, justify="left" if col in ("policy 1", "policy 2", "method") else "right")
    for c in comparisons:
        table.add_row(
            str(c.level),
            c.a,
            c.b,
            f"{c.successes_a}/{c.n_a}",
            f"{c.successes_b}/{c.n_b}",
            f"{c.difference:+.0%}",
            f"[{c.interval[0]:+.0%}, {c.interval[1]:+.0%}]",
            (
                f"{'anytime-valid' if c.method == comparisons_mod.SEQUENTIAL else 'paired'}, {c.pairs} pairs "
                f"({c.a_only} only {c.a}, {c.b_only} only {c.b})"
                + (f", {c.dropped} dropped (a side not scored)" if c.dropped else "")
                if c.pairs
                else "unpaired"
            ),
            f"{c.p_value:.3g}",
            f"{c.p_adjusted:.3g}",
            c.better or "-",
        )
    console.print(table)
    out = args.out or paths.inside(paths.artifacts_dir() / "reports", "compare-" + paths.check_id(args.group or ids[0]))
    out.mkdir(parents=True, exist_ok=True)
    plot = difference_plot(comparisons, out / "comparison.png", axis)
    data = out / "comparison.json"
    data.write_text(
        json.dumps(
            {"campaigns": ids, "axis": axis, "pairing": args.pairing, "comparisons": comparison_rows(comparisons)},
            indent=2,
        )
    )
    console.print(f"plot: {plot}\ndata: {data}")
    return 0
