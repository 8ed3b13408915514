"""`index.html`: one static page over the whole results store, so a lab with dozens of
campaigns (policies, axes, worlds, sim and real) finds one without opening folders.

One row per campaign: world, axis, the policies as a person may see them now (a blind
campaign's letters until it is unblinded), purpose, status, trials done, the paper's break
level and k* (the last level held with a guarantee), date, who labelled, and links to its
page of trials (trials/<id>.html: each trial's outcome, reason, steps, aborted attempts, and
its view and video where `indgen bag view` / `bag video` wrote them), report, bags and videos,
relative to the page so the folder can move. A filter box and sortable columns; tick rows to
overlay their per-level curves. Plain HTML, CSS and JavaScript in one file (the template:
index_page.html): nothing is fetched from the network, so it opens offline and from file://.
"""

from __future__ import annotations

import html
import json
import logging
import os
import time
from importlib import resources
from pathlib import Path
from typing import Any

from indgen_core import paths
from indgen_core.campaign import blind
from indgen_core.errors import first_line
from indgen_core.report.analysis import summarize
from indgen_core.store import CampaignRecord, ResultsStore

INDEX_NAME = "index.html"
logger = logging.getLogger(__name__)
#: a campaign that says "running" with nothing recorded for this long is shown as likely dead
#: (a run that was killed leaves its status "running"); a person building a scene is quicker
QUIET_S = 30 * 60


def _status(record: CampaignRecord, last_activity: float, now: float) -> str:
    if record.status != "running" or now - last_activity < QUIET_S:
        return record.status
    quiet = now - last_activity
    since = f"{quiet / 3600:.0f} h" if quiet >= 3600 else f"{quiet / 60:.0f} min"
    return f"running? nothing recorded for {since} (killed? `indgen campaign resume {record.id}`)"


def campaign_entry(store: ResultsStore, record: CampaignRecord, out_dir: Path) -> dict[str, Any]:
    """What the index shows of one campaign (only what a person may see now)."""
    names = blind.shown_names(store, record)
    hidden = blind.rates_hidden(store, record)
    planned = store.planned_trials(record.id)
    counts = store.counts(record.id)
    done = sum(c.scored + c.invalid for c in counts.values())
    recorded = [row.recorded_at for row in store.rows(record.id) if row.recorded_at]
    last_activity = max([record.updated_at, *recorded])
    entry: dict[str, Any] = {
        "id": record.id,
        "world": record.world,
        "axis": record.axis,
        "policies": sorted(names.values()),
        "blind": blind.blinded(store, record),
        "purpose": record.purpose,
        "status": _status(record, last_activity, time.time()),
        "done": done,
        "planned": len(planned),
        "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created_at)),
        "created": record.created_at,
        "operators": sorted({h["operator"] for h in store.label_history(record.id) if h["operator"]}),
        "breaks": "",
        "k_star": "",
        "curves": [],
        "links": [["trials", f"trials/{record.id}.html"], *_links(store, record.id, out_dir)],
    }
    if hidden:
        entry["breaks"] = entry["k_star"] = "hidden (blind, running)"
        return entry
    if not done:  # "breaks at: none" would say the policy held, on no evidence
        entry["breaks"] = entry["k_star"] = "no trials yet"
        return entry
    summary = summarize(store, record.id)
    breaks, held = [], []
    for curve in summary.curves:
        shown = names.get(curve.policy, curve.policy)
        point = [f"k={k}" for k in curve.breaks.point.values() if k is not None]
        breaks.append(f"{shown}: {', '.join(point) or 'none'}")
        guarantee = [g.held_through for g in curve.guarantee.values() if g.held_through is not None]
        held.append(f"{shown}: {', '.join(f'k={k}' for k in guarantee) or 'none'}")
        entry["curves"].append(
            {
                "label": f"{record.id}: {shown}",
                "points": [
                    [lv.level, round(lv.rate, 4), round(lv.interval[0], 4), round(lv.interval[1], 4)]
                    for lv in curve.levels
                    if lv.n
                ],
            }
        )
    entry["breaks"], entry["k_star"] = "; ".join(breaks), "; ".join(held)
    return entry


def _links(store: ResultsStore, campaign_id: str, out_dir: Path) -> list[list[str]]:
    """[label, relative href] of the campaign's report, bags and videos that exist on disk."""
    links: list[list[str]] = []
    seen: set[str] = set()
    for kind, label in (("report", "report"), ("bag", "bag"), ("video", "video")):
        for art in store.artifacts(campaign_id, kind=kind):
            path = Path(art["path"])
            if kind == "bag" and path.is_file() and path.parent.is_dir():
                path = path.parent  # a bag is its folder (metadata.yaml and the .mcap files)
            if str(path) in seen or not path.exists():
                continue
            seen.add(str(path))
            href = os.path.relpath(path.resolve(), out_dir.resolve())
            if path.is_dir():
                href += "/"
            n = sum(1 for link in links if link[0].startswith(label))
            links.append([label if not n else f"{label} {n + 1}", href])
    return links


#: under the table of trials: where a trial's view comes from when its row has none
VIEW_HINT = (
    "A trial's view (its frames and the policy's actions per step) comes from the campaign's bag: "
    "`indgen bag view BAG` writes one per trial and links it here; `indgen bag video BAG --trial ID` a video."
)
TRIAL_COLUMNS = ("trial", "policy", "k", "seed", "status", "outcome", "reason", "steps", "aborted attempts", "files")


def write_trials_page(store: ResultsStore, record: CampaignRecord, out_dir: Path) -> Path:
    """`trials/<id>.html`: every planned trial of one campaign, with its outcome, the reason the
    world or the person gave, its steps and aborted attempts, and its videos; what a person may
    see now (a blind campaign's letters; its outcomes hidden while its trials run)."""
    names = blind.shown_names(store, record)
    hidden = blind.rates_hidden(store, record)
    folder = out_dir / "trials"
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, str]] = {}  # trial -> kind -> its newest file
    for art in store.artifacts(record.id):
        if art["kind"] in ("view", "video") and art["trial_id"] and Path(art["path"]).exists():
            href = os.path.relpath(Path(art["path"]).resolve(), folder.resolve())
            files.setdefault(art["trial_id"], {})[art["kind"]] = href
    rows = []
    for row in store.rows(record.id):
        if hidden:
            outcome, reason = "hidden (blind, running)", ""
        else:
            outcome, reason = (row.outcome.word if row.outcome is not None else ""), row.reason or ""
        links = " ".join(
            f'<a href="{html.escape(h)}">{k}</a>' for k, h in sorted(files.get(row.trial_id, {}).items(), reverse=True)
        )
        cells = [row.trial_id, names.get(row.policy, row.policy), row.level, row.seed, row.status, outcome, reason,
                 "" if hidden or row.steps is None else row.steps, row.aborted_attempts]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + f"<td>{links}</td></tr>")
    head = "".join(f"<th>{c}</th>" for c in TRIAL_COLUMNS)
    page = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(record.id)}: trials</title>"
        "<link rel='icon' href='data:,'><style>body{font-family:system-ui,sans-serif;margin:1em;color:#222}"
        "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;"
        "vertical-align:top}th{background:#f3f3f3}</style></head><body>"
        f"<h1>{html.escape(record.id)}: every trial</h1><p><a href='../{INDEX_NAME}'>all campaigns</a></p>"
        f"<p>{html.escape(VIEW_HINT)}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>"
    )
    path = folder / f"{paths.check_id(record.id)}.html"
    path.write_text(page)
    return path


def write_index(store: ResultsStore, out_dir: Path) -> Path:
    """Write (or refresh) `out_dir/index.html` over every campaign in the store, and each
    campaign's page of trials (trials/<id>.html)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = store.campaigns()
    for record in records:
        write_trials_page(store, record, out_dir)
    entries = [campaign_entry(store, r, out_dir) for r in records]
    entries.sort(key=lambda e: e["created"], reverse=True)
    data = json.dumps(entries, default=str).replace("</", "<\\/")  # never ends the script element
    template = resources.files("indgen_core.report").joinpath("index_page.html").read_text()
    page = template.replace("__DATA__", data).replace("__STORE__", html.escape(str(store.path)))
    page = page.replace("__WHEN__", time.strftime("%Y-%m-%d %H:%M:%S"))
    path = out_dir / INDEX_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(page)
    tmp.replace(path)  # a browser never reads a half-written page
    return path


def refresh_index(store: ResultsStore, out_dir: Path | None = None) -> Path | None:
    """After a campaign: the index is a convenience, never worth failing a campaign over."""
    try:
        return write_index(store, out_dir or paths.artifacts_dir() / "reports")
    except Exception as exc:
        logger.warning(f"the results index was not refreshed: {first_line(exc)}")
        return None
