"""The report on the terminal: rich tables, one per campaign and policy, and one for the
twin's help; a few lines for overrides, invalid setups and the operator's labels."""

from __future__ import annotations

from collections.abc import Sequence

from indgen_core.report.analysis import CampaignSummary
from indgen_core.report.rows import (
    _break_text,
    guarantee_text,
    interval_text,
    level_rows,
    percent,
    search_text,
    twin_rows,
)


def wide_console(piped_width: int = 120):
    """A rich console as wide as the terminal it prints on (rich wraps a table's cells to fit);
    a log or a pipe gets `piped_width` columns, not the 80 rich assumes there."""
    import sys

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else piped_width)


def print_table(summaries: Sequence[CampaignSummary], console=None) -> None:
    from rich.table import Table

    console = console or wide_console()
    for s in summaries:
        for c in s.curves:
            table = Table(
                title=f"{s.record.id}: {c.policy} on '{s.record.axis}' ({s.record.world}) - {_break_text(c)}",
                caption=f"with a stated error: {guarantee_text(c)}; intervals: 95% {s.interval_kind}"
                + (f"; break search: {search_text(c)}" if c.search else ""),
            )
            for col in ("k", "parameters", "n", "succ.", "rate", "95% interval", "verdict", "marks"):
                table.add_column(col, justify="left" if col == "parameters" else "right")
            for row in level_rows(s, c):
                style = "bold red" if "BREAK" in row["tags"] else ("dim" if row["n"] == 0 else "")
                table.add_row(
                    str(row["k"]),
                    row["parameters"],
                    str(row["n"]),
                    str(row["successes"]),
                    percent(row["rate"], s.threshold),
                    interval_text((row["ci_low"], row["ci_high"]), s.threshold),
                    row["verdict"],
                    row["tags"],
                    style=style,
                )
            console.print(table)
            if c.monotonicity is not None:
                console.print(f"  monotonicity (black-box): {c.monotonicity.describe()}")
        if s.twin:
            table = Table(
                title=f"{s.record.id} with the twin's help (campaign {s.twin_id}, prediction-powered)",
                caption="exact bounds on the twin's rate and the real-minus-twin difference, joined: 95% "
                "at every n; width ratio below 1: the twin narrowed the interval",
            )
            for col in (
                "policy",
                "k",
                "real",
                "real-only 95%",
                "twin",
                "agreement",
                "estimate",
                "prediction-powered 95%",
                "width ratio",
            ):
                table.add_column(col, justify="right")
            for row in twin_rows(s):
                table.add_row(
                    row["policy"],
                    str(row["k"]),
                    f"{row['real_successes']}/{row['real_n']}",
                    interval_text(row["real_only_ci"], s.threshold),
                    f"{row['twin_successes']}/{row['twin_n']}",
                    f"{row['agreement']:.0%}",
                    percent(row["estimate"], s.threshold),
                    interval_text(row["twin_ppi_ci"], s.threshold),
                    f"{row['width_ratio']:.2f}",
                )
            console.print(table)
        elif s.twin_note:
            console.print(f"  twin campaign {s.twin_id} not used: {s.twin_note}")
        if s.record.override_uncertified:
            console.print(f"  [yellow]uncertified levels scored by override:[/] {s.record.override_reason}")
        if s.invalid:
            console.print(f"  invalid setups (not scored): {len(s.invalid)}")
        if s.operator:
            totals = {k: sum(c[k] for c in s.operator.values()) for k in next(iter(s.operator.values()))}
            console.print("  operator: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
