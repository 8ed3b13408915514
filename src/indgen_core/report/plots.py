"""Plots in the style of the paper's Figures 3-4: success rate per level, one line per
policy with its 95% interval as a band, the in-distribution level(s) shaded, the break
threshold dashed, and each policy's break level marked."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from indgen_core.report.analysis import CampaignSummary

FIGSIZE_IN = (7.0, 4.5)
DPI = 150
IMAGE_SIZE = (int(FIGSIZE_IN[0] * DPI), int(FIGSIZE_IN[1] * DPI))  # (width, height) in pixels


@contextlib.contextmanager
def _figure():
    """A figure of the house size on the file-only backend, closed whatever happens."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=FIGSIZE_IN, dpi=DPI)
    try:
        yield fig, ax, plt
    finally:
        plt.close(fig)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    return path


def success_curves(summaries: Sequence[CampaignSummary], path: Path, title: str | None = None) -> Path:
    with _figure() as (fig, ax, plt):
        threshold = summaries[0].threshold
        ids = sorted({k for s in summaries for k in s.in_distribution})
        all_levels = sorted({lv.level for s in summaries for c in s.curves for lv in c.levels})
        if ids:
            ax.axvspan(
                min(ids) - 0.5,
                max(ids) + 0.5,
                color="0.92",
                zorder=0,
                label="in distribution" if len(ids) > 1 else f"in distribution (k={ids[0]})",
            )
        ax.axhline(threshold * 100, color="0.4", ls="--", lw=1, label=f"break threshold ({threshold:.0%})")
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        curves = [(s, c) for s in summaries for c in s.curves if any(lv.n for lv in c.levels)]
        names = [c.policy for _, c in curves]
        many = len(curves) > 3
        i = 0
        for s in summaries:
            for curve in s.curves:
                pts = [lv for lv in curve.levels if lv.n > 0]
                if not pts:
                    continue
                color = colors[i % len(colors)]
                i += 1
                x = [lv.level for lv in pts]
                y = [lv.rate * 100 for lv in pts]
                low = [lv.interval[0] * 100 for lv in pts]
                high = [lv.interval[1] * 100 for lv in pts]
                label = curve.policy + (f" ({s.record.id})" if names.count(curve.policy) > 1 else "")
                ax.fill_between(
                    x,
                    low,
                    high,
                    color=color,
                    alpha=0.15,
                    lw=0,
                    label=f"95% {'confidence sequence' if pts[0].anytime else 'exact interval'}" if i == 1 else None,
                )
                ax.plot(x, y, "-o", color=color, lw=2, ms=5, label=label)
                for side, k in curve.breaks.point.items():
                    if k is None:
                        continue
                    lv = curve.level(k)
                    assert lv is not None, "a break level is one of the curve's levels"
                    ax.plot(
                        [k], [lv.rate * 100], marker="X", color=color, ms=12, mec="black", mew=0.8, zorder=5, label=None
                    )
                    if not many:  # with many curves the X markers alone stay readable
                        ax.annotate(
                            f"breaks k={k}",
                            (k, lv.rate * 100),
                            textcoords="offset points",
                            xytext=(6, 8 if side > 0 else -14),
                            fontsize=8,
                            color=color,
                        )
        ax.set_xticks(all_levels)
        ax.set_xticklabels([f"τ{k}" for k in all_levels])
        ax.set_xlim(min(all_levels, default=0) - 0.5, max(all_levels, default=1) + 0.5)
        ax.set_ylim(-3, 103)
        ax.set_ylabel("success rate (%)")
        axis = summaries[0].record.axis
        ax.set_xlabel(f"level k along axis '{axis}'")
        ax.set_title(title or f"Inductive generalization along '{axis}' ({summaries[0].record.world})")
        ax.grid(alpha=0.3)
        ax.plot([], [], "X", color="0.5", mec="black", ms=9, ls="none", label="break level")
        if many:  # beside the axes, so no curve hides behind it
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
        else:
            ax.legend(fontsize=8, loc="best", framealpha=0.9)
        return _save(fig, path)


def difference_plot(comparisons, path: Path, axis: str) -> Path:
    """`indgen compare`: per level, each pair's success difference (policy 1 - policy 2) with its 95%
    interval; a filled marker where Holm's adjustment shows one better."""
    with _figure() as (fig, ax, plt):
        pairs = list(dict.fromkeys((c.a, c.b) for c in comparisons))
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        width = 0.5 / max(len(pairs), 1)
        for i, (a, b) in enumerate(pairs):
            rows = [c for c in comparisons if (c.a, c.b) == (a, b)]
            color = colors[i % len(colors)]
            x = [c.level + (i - (len(pairs) - 1) / 2) * width for c in rows]
            y = [c.difference * 100 for c in rows]
            err = [
                [(c.difference - c.interval[0]) * 100 for c in rows],
                [(c.interval[1] - c.difference) * 100 for c in rows],
            ]
            ax.errorbar(x, y, yerr=err, fmt="none", ecolor=color, capsize=3, lw=1.5)
            for xi, c in zip(x, rows, strict=True):
                ax.plot([xi], [c.difference * 100], "o", color=color, ms=7, mfc=color if c.better else "white", mew=1.5)
            ax.plot([], [], "o", color=color, label=f"{a} - {b}")
        ax.axhline(0, color="0.4", lw=1, ls="--")
        ax.plot([], [], "o", color="0.3", label="shown better (Holm)")
        ax.plot([], [], "o", color="0.3", mfc="white", label="not shown")
        levels = sorted({c.level for c in comparisons})
        ax.set_xticks(levels)
        ax.set_xticklabels([f"τ{k}" for k in levels])
        ax.set_ylim(-103, 103)
        ax.set_ylabel("difference in success rate (percentage points)")
        ax.set_xlabel(f"level k along axis '{axis}'")
        ax.set_title(f"Policy differences along '{axis}' with 95% intervals")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best", framealpha=0.9)
        return _save(fig, path)
