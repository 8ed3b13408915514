"""Reports: a table on the terminal, and Markdown, self-contained HTML, PNG plots and a JSON
summary on disk, for one campaign or several shown together (one line per policy).

The package, by idea (each module reads in one sitting):

    rows.py        the rows every output is built from (levels, comparisons, the twin's help),
                   the break and guarantee texts, and the JSON summary
    markdown.py    the Markdown report, section by section
    html_page.py   the Markdown rendered into one self-contained HTML page
    provenance.py  when, by what, on which machine, and each policy's identity
    failures.py    why trials failed, per level, with a trial of each
    terminal.py    the tables printed on the terminal

This module writes the folder (`write_report`): the plot, the images copied beside the
report, the videos linked where they are, and the three files.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from indgen_core.report import plots
from indgen_core.report.analysis import summarize
from indgen_core.report.failures import failure_lines
from indgen_core.report.html_page import _CSS, _md_to_html
from indgen_core.report.markdown import markdown
from indgen_core.report.provenance import provenance_lines
from indgen_core.report.rows import comparison_rows, summary_json
from indgen_core.report.terminal import print_table
from indgen_core.store import ResultsStore

__all__ = ["ReportFiles", "comparison_rows", "print_table", "write_report"]


@dataclass
class ReportFiles:
    directory: Path
    markdown: Path
    html: Path
    json: Path
    plots: list[Path]


def write_report(
    store: ResultsStore, campaign_ids: Sequence[str], out_dir: Path, twin: str | None = None
) -> ReportFiles:
    summaries = [summarize(store, cid, twin=twin) for cid in campaign_ids]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = plots.success_curves(summaries, out_dir / "success_per_level.png")
    files = {plot.name: plot}
    images: dict[int, str] = {}
    for s in summaries:
        for art in store.artifacts(s.record.id, kind="level_image"):
            src = Path(art["path"])
            if art["level"] is not None and src.is_file() and art["level"] not in images:
                # copied next to the report, so that the folder is complete on its own
                local = out_dir / f"level_k{art['level']}{src.suffix}"
                if src.resolve() != local.resolve():
                    shutil.copyfile(src, local)
                images[art["level"]] = local.name
                files[local.name] = local
    videos: dict[int, str] = {}
    for s in summaries:
        for art in store.artifacts(s.record.id, kind="video"):
            path = Path(art["path"])
            if art["level"] is not None and path.is_file() and art["level"] not in videos:
                # linked where it is (videos are large): relative to the report when they can be
                videos[art["level"]] = os.path.relpath(path.resolve(), out_dir.resolve())
    failures = {s.record.id: failure_lines(store, s) for s in summaries}
    md = markdown(summaries, [plot.name], images, videos, provenance_lines(store, summaries), failures)
    md_path = out_dir / "report.md"
    md_path.write_text(md)
    html_path = out_dir / "report.html"
    html_path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>IndGen report</title>"
        f"<style>{_CSS}</style></head><body>{_md_to_html(md, files)}</body></html>"
    )
    json_path = out_dir / "summary.json"
    json_path.write_text(json.dumps(summary_json(summaries), indent=2, default=str))
    for s in summaries:
        store.add_artifact(s.record.id, "report", str(html_path))
    return ReportFiles(out_dir, md_path, html_path, json_path, [plot])
