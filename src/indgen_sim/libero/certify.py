"""The LIBERO-Object certification table: for each (task, axis, k) whether the oracle solved
it (certified), failed on every valid trial (infeasible), or the setup itself was broken
(rejected: interpenetration or a launched object). Levels are never silently dropped."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from indgen_core.campaign import cluster
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign
from indgen_core.records import Outcome
from indgen_core.store.tallies import LevelCounts
from indgen_sim.libero import suite

logger = logging.getLogger(__name__)

MARK = {"certified": "ok", "infeasible": "INFEASIBLE", "rejected": "rejected", "not run": "not run"}


def certify(store, tasks, axes, levels, trials: int = 1, workers: int | None = None) -> list[dict]:
    """One oracle certify campaign per (axis, task), run on worker processes; the table rows."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with cluster.connect(workers=workers or cluster.default_workers()) as client:
        for axis, task in ((a, t) for a in axes for t in tasks):
            config = CampaignConfig(
                name=f"libero_certify_{axis}_t{task}",
                axis=axis,
                world="libero",
                world_options={"task": task},
                policies=["libero_oracle"],
                levels=levels,
                trials_per_level=trials,
                purpose="certify",
                seed=task,
                group=f"certify-{stamp}",
            )
            record = plan_campaign(store, config, campaign_id=f"{config.name}-{stamp}")
            t0 = time.monotonic()
            cluster.run_campaign_cluster(store, record.id, client, world_options={"cameras": False})
            rows = level_rows(store, record.id, task, axis, levels)
            logger.info(
                f"{axis} task {task}: "
                + " ".join(f"k={r['k']}:{MARK[r['state']]}" for r in rows)
                + f" ({time.monotonic() - t0:.0f} s)"
            )
    return table_from_store(store, tasks, axes, levels)


def level_rows(store, campaign_id: str, task: int, axis: str, levels) -> list[dict]:
    counts = store.counts(campaign_id)
    rows = []
    for k in levels:
        c = counts.get(("libero_oracle", k), LevelCounts())
        failed = c.of(Outcome.FAILURE) + c.of(Outcome.TIMEOUT)
        state = (
            "certified" if c.successes else "infeasible" if failed else "rejected" if c.invalid else "not run"
        )  # aborted attempts only
        reasons = sorted(
            {
                r.reason
                for r in store.rows(campaign_id)
                if r.level == k and r.outcome not in (None, Outcome.SUCCESS) and r.reason
            }
        )
        rows.append(
            {
                "task": task,
                "name": suite.task_name(task),
                "axis": axis,
                "k": k,
                "state": state,
                "counts": c,
                "reasons": reasons,
                "campaign": campaign_id,
            }
        )
    return rows


def table_from_store(store, tasks, axes, levels) -> list[dict]:
    """The rows of the latest certify campaign of each (axis, task) in the store."""
    rows = []
    campaigns = sorted(store.campaigns(), key=lambda r: r.id)
    for axis in axes:
        for task in tasks:
            mine = [r for r in campaigns if r.name == f"libero_certify_{axis}_t{task}" and r.status == "done"]
            if mine:
                rows += level_rows(store, mine[-1].id, task, axis, levels)
    return rows


def write_table(rows: list[dict], levels: list[int], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "certification.json").write_text(json.dumps(rows, indent=2, default=str))
    lines = []
    for axis in sorted({r["axis"] for r in rows}):
        ks = sorted({r["k"] for r in rows if r["axis"] == axis} & set(levels))
        lines += [
            f"**{axis}**",
            "",
            "| task | " + " | ".join(f"k={k}" for k in ks) + " |",
            "| --- | " + " | ".join("---" for _ in ks) + " |",
        ]
        for task in sorted({r["task"] for r in rows if r["axis"] == axis}):
            cells = {r["k"]: MARK[r["state"]] for r in rows if r["axis"] == axis and r["task"] == task}
            name = next(r["name"] for r in rows if r["task"] == task).removeprefix("pick_up_the_").split("_and_")[0]
            lines.append(f"| {task} {name} | " + " | ".join(cells.get(k, "") for k in ks) + " |")
        lines.append("")
    problems = [r for r in rows if r["state"] != "certified"]
    if problems:
        lines += ["Not certified:", ""]
        lines += [
            f"- {r['axis']} task {r['task']} k={r['k']}: {r['state']} ({'; '.join(r['reasons'])})" for r in problems
        ]
    md = out / "certification.md"
    md.write_text("\n".join(lines) + "\n")
    return md
