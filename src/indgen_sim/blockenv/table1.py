"""`indgen blockenv table1`: the paper's Table 1 from scratch, on a CPU.

Generates (or loads) the oracle demonstrations at L0-L2, trains every baseline by behaviour
cloning, evaluates each at L0..L6 (the oracle at L0..L10) with the same fixed seeds, records
one campaign per policy in the results store (the oracle's campaign certifies the levels),
prints the table in the paper's form and writes the report with every curve in one plot.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from indgen_core import paths
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign
from indgen_core.campaign.runner import run_campaign_batched
from indgen_core.records import TaskSetup, TrialResult
from indgen_core.store import ResultsStore
from indgen_sim.blockenv import demos as demos_mod
from indgen_sim.blockenv.evaluate import run_model
from indgen_sim.blockenv.models import MODELS, PAPER_NAMES
from indgen_sim.blockenv.policies import checkpoint_dir
from indgen_sim.blockenv.train import TrainConfig, load_checkpoint, save_checkpoint, train
from indgen_sim.blockenv.world import BlockEnvWorld, evaluation, level_of

logger = logging.getLogger(__name__)

PAPER_TABLE1: dict[str, tuple[list[float], int | None]] = {  # success % at L0..L3 and "breaks at", from the paper
    "maml": ([100, 100, 100, 0.0], 3),
    "rnn": ([96.0, 90.0, 94.0, 0.0], 3),
    "transformer": ([97.0, 79.0, 93.0, 4.0], 3),
    "transformer_rope": ([97.0, 88.0, 90.0, 1.0], 3),
    "transformer_goal_action": ([96.0, 81.0, 88.0, 0.0], 3),
    "trm": ([100, 100, 92.0, 0.0], 3),
    "ind": ([100, 100, 100, 86.0], 5),
    "oracle": ([100, 100, 100, 100], None),
}


@dataclass
class Table1Config:
    demos_per_level: int = 3000
    noise: float = 0.5
    episodes: int = 100
    max_level: int = 6
    oracle_max_level: int = 10
    models: tuple[str, ...] = tuple(MODELS)
    #: models also evaluated to oracle_max_level: how far Ind and IndGen's own variant hold
    extended: tuple[str, ...] = ("ind", "equivariant")
    #: scripted controls, no training, evaluated to oracle_max_level with every run
    controls: tuple[str, ...] = ("random_legal",)
    epochs: dict[str, int] = field(
        default_factory=lambda: {
            "maml": 100,
            "rnn": 60,
            "transformer": 80,
            "transformer_rope": 20,
            "transformer_goal_action": 20,
            "trm": 8,
            "ind": 20,
            "ind_linear": 20,
            "equivariant": 5,
        }
    )
    lr: dict[str, float] = field(
        default_factory=lambda: {
            "maml": 3e-3,
            "transformer": 7e-4,
            "transformer_rope": 5e-4,
            "transformer_goal_action": 5e-4,
            "ind": 5e-4,
            "ind_linear": 5e-4,
        }
    )
    batch_size: dict[str, int] = field(default_factory=lambda: {"trm": 64})
    seed: int = 0


QUICK = Table1Config(
    demos_per_level=150,
    episodes=20,
    max_level=3,
    oracle_max_level=4,
    epochs=dict.fromkeys(MODELS, 2),
    batch_size={"trm": 64},
)


def batch_executor(model):
    """Run one level's trials together (model None: the oracle), judged like BlockEnvWorld."""

    def run(setups: list[TaskSetup]) -> list[TrialResult]:
        k = level_of(setups[0])
        if any(level_of(s) != k for s in setups):
            raise ValueError("a batch must hold one level")
        t0 = time.monotonic()
        out = run_model(model, k, np.array([s.seed for s in setups], dtype=np.uint64))
        wall = (time.monotonic() - t0) / len(setups)
        results = []
        for i, s in enumerate(setups):
            ev = evaluation(bool(out.success[i]), int(out.steps[i]), int(out.removed[i]), k)
            results.append(
                TrialResult(
                    s.trial_id,
                    ev.outcome,
                    ev.reason,
                    ev.partial_score,
                    int(out.steps[i]),
                    int(out.steps[i]) * BlockEnvWorld.control_dt,
                    wall,
                    details=ev.details,
                )
            )
        return results

    return run


def _campaign(store, group, name, policy, levels, episodes, purpose):
    config = CampaignConfig(
        name=name,
        axis="blockenv_depth",
        world="blockenv",
        policies=[policy],
        trials_per_level=episodes,
        levels=list(levels),
        order="sequential",
        purpose=purpose,
        seeds=[int(s) for s in demos_mod.eval_seeds(episodes)],
        group=group,
    )
    return plan_campaign(store, config, campaign_id=f"{group}-{name}")


def run_table1(
    config: Table1Config,
    store: ResultsStore,
    out_dir: Path,
    checkpoints: Path | None = None,
    eval_only: bool = False,
    group: str | None = None,
) -> dict:
    import torch

    torch.set_num_threads(max(torch.get_num_threads(), 1))
    t_start = time.monotonic()
    checkpoints = Path(checkpoints or checkpoint_dir())
    group = group or f"table1-{time.strftime('%Y%m%d-%H%M%S')}"
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    models = {}
    if not eval_only:
        t0 = time.monotonic()
        demos, demo_path = demos_mod.load_or_generate((0, 1, 2), config.demos_per_level, noise=config.noise)
        steps = int(demos.target.sum())
        logger.info(
            f"demonstrations: {len(demos)} oracle episodes ({config.demos_per_level} per level at L0-L2, "
            f"{steps} imitated grasps, recovery noise {config.noise}) in {demo_path}"
        )
        timings["demonstrations"] = time.monotonic() - t0
        for name in config.models:
            t0 = time.monotonic()
            tc = TrainConfig(
                epochs=config.epochs.get(name, 10),
                lr=config.lr.get(name, 1e-3),
                batch_size=config.batch_size.get(name, 128),
                seed=config.seed,
                max_seconds=1e9,
            )
            logger.info(f"training {PAPER_NAMES[name]} ({tc.epochs} epochs)")
            model, info = train(name, demos, tc)
            save_checkpoint(model, checkpoints / f"{name}.pt", {k: v for k, v in info.items() if k != "history"})
            models[name] = model
            timings[f"train_{name}"] = time.monotonic() - t0
    else:
        for name in config.models:
            models[name] = load_checkpoint(checkpoints / f"{name}.pt")

    t0 = time.monotonic()
    ids = {}
    oracle = _campaign(
        store, group, "oracle", "blockenv_oracle", range(config.oracle_max_level + 1), config.episodes, "certify"
    )
    run_campaign_batched(store, oracle.id, batch_executor(None))
    ids["oracle"] = oracle.id
    for name in config.controls:
        record = _campaign(
            store, group, name, f"blockenv_{name}", range(config.oracle_max_level + 1), config.episodes, "evaluate"
        )
        run_campaign_batched(store, record.id, batch_executor(name))
        ids[name] = record.id
    for name, model in models.items():
        top = config.oracle_max_level if name in config.extended else config.max_level
        record = _campaign(store, group, name, f"blockenv_{name}", range(top + 1), config.episodes, "evaluate")
        run_campaign_batched(store, record.id, batch_executor(model))
        ids[name] = record.id
        logger.info(f"evaluated {PAPER_NAMES[name]}")
    timings["evaluation"] = time.monotonic() - t0

    from indgen_core.report import write_report
    from indgen_core.report.analysis import summarize

    rows = {}
    for name, cid in ids.items():
        curve = summarize(store, cid).curves[0]
        rows[name] = {
            "rates": {lv.level: lv.rate for lv in curve.levels},
            "breaks_at": curve.breaks.point.get(1),
            "campaign": cid,
        }
    files = write_report(store, [ids[n] for n in ["oracle", *config.controls, *models]], out_dir / "report")
    timings["total"] = time.monotonic() - t_start
    result = {
        "group": group,
        "rows": rows,
        "timings_s": timings,
        "config": asdict(config),
        "checkpoints": str(checkpoints),
        "report": str(files.html),
    }
    (out_dir / "table1.json").write_text(json.dumps(result, indent=2, default=str))
    (out_dir / "table1.md").write_text(markdown_table(rows, config.max_level))
    return result


def markdown_table(rows: dict, max_level: int) -> str:
    """The paper's form (success % per level, breaks at), plus the levels beyond L{max_level}
    for the policies evaluated that far (the oracle and IndGen's variant)."""
    head = "| Method | " + " | ".join(f"L{k}" for k in range(max_level + 1)) + " | Breaks at | beyond |"
    lines = [head, "|" + "---|" * (max_level + 4)]
    for name in [n for n in (*MODELS, "random_legal", "oracle") if n in rows]:
        r = rows[name]
        cells = [f"{100 * r['rates'][k]:.0f}" if k in r["rates"] else "-" for k in range(max_level + 1)]
        brk = f"L{r['breaks_at']}" if r["breaks_at"] is not None else "-"
        beyond = sorted((k, v) for k, v in r["rates"].items() if k > max_level)
        extra = f"L{beyond[0][0]}-L{beyond[-1][0]}: " + "/".join(f"{100 * v:.0f}" for _, v in beyond) if beyond else ""
        lines.append(f"| {PAPER_NAMES[name]} | " + " | ".join(cells) + f" | {brk} | {extra} |")
    return "\n".join(lines) + "\n"


def print_table(rows: dict, max_level: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="BlockEnv, success rate (%) per level; trained on L0-L2 (L3+ out of distribution)")
    table.add_column("Method")
    for k in range(max_level + 1):
        table.add_column(f"L{k}", justify="right", style="dim" if k <= 2 else "")
    table.add_column("Breaks at", justify="right")
    table.add_column("paper L0-L3 / breaks", justify="right", style="cyan")
    for name in [n for n in (*MODELS, "random_legal", "oracle") if n in rows]:
        r = rows[name]
        paper = PAPER_TABLE1.get(name)
        paper_text = (
            " / ".join(f"{v:g}" for v in paper[0]) + f"  L{paper[1]}"
            if paper and paper[1]
            else (" / ".join(f"{v:g}" for v in paper[0]) + "  -" if paper else "")
        )
        table.add_row(
            PAPER_NAMES[name],
            *[f"{100 * r['rates'][k]:.0f}" if k in r["rates"] else "-" for k in range(max_level + 1)],
            f"L{r['breaks_at']}" if r["breaks_at"] is not None else "-",
            paper_text,
        )
    console = Console(width=200)
    console.print(table)
    for name, r in rows.items():
        beyond = {k: v for k, v in r["rates"].items() if k > max_level}
        if beyond and name != "oracle":
            console.print(
                f"{PAPER_NAMES[name]} beyond L{max_level}: "
                + ", ".join(f"L{k} {100 * v:.0f}%" for k, v in sorted(beyond.items()))
            )


def quick_config(**overrides) -> Table1Config:
    return replace(QUICK, **overrides)


def default_out_dir() -> Path:
    return paths.artifacts_dir() / "blockenv"
