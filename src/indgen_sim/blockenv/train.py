"""Behaviour cloning of the BlockEnv models on oracle demonstrations (L0-L2), and their
checkpoints. Model selection uses held-out training-level episodes only: the evaluation
levels are never looked at."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from indgen_sim.blockenv.demos import Demos
from indgen_sim.blockenv.models import MODELS, BlockEnvModel, MAMLPolicy

logger = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    epochs: int = 30
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 0
    max_seconds: float = 600.0
    grad_clip: float = 1.0


def _episodes(d: Demos) -> dict[str, torch.Tensor]:
    """`mask`: the steps to imitate (oracle grasps, not injected failures or padding)."""
    valid = np.arange(d.grids.shape[1])[None, :] < d.lengths[:, None]
    return {
        "grids": torch.as_tensor(d.grids, dtype=torch.long),
        "actions": torch.as_tensor(d.actions),
        "mask": torch.as_tensor(valid & d.target),
        "levels": torch.as_tensor(d.levels, dtype=torch.long),
    }


def _steps(d: Demos) -> dict[str, torch.Tensor]:
    grids, actions, levels = d.steps()
    return {
        "grids": torch.as_tensor(grids, dtype=torch.long),
        "actions": torch.as_tensor(actions),
        "levels": torch.as_tensor(levels, dtype=torch.long),
    }


def _take(data: dict[str, torch.Tensor], idx) -> dict[str, torch.Tensor]:
    return {k: v[idx] for k, v in data.items()}


def _batches(data: dict[str, torch.Tensor], batch_size: int, rng: np.random.Generator):
    """Shuffled batches. Episodes are batched within their level and cut to the longest
    episode of the batch, so short L0 episodes are not padded to the length of L2 ones."""
    n = len(next(iter(data.values())))
    if "mask" not in data:
        order = rng.permutation(n)
        for i in range(0, n, batch_size):
            yield _take(data, torch.as_tensor(order[i : i + batch_size]))
        return
    levels = data["levels"].numpy()
    lengths = data["grids"].flatten(2).any(-1).sum(1).numpy()
    chunks = []
    for k in np.unique(levels):
        idx = rng.permutation(np.flatnonzero(levels == k))
        chunks += [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]
    for j in rng.permutation(len(chunks)):
        idx = chunks[j]
        batch = _take(data, torch.as_tensor(idx))
        t = int(lengths[idx].max())
        yield {k: (v[:, :t] if v.dim() >= 2 and k != "levels" else v) for k, v in batch.items()}


def _task_batches(data: dict[str, torch.Tensor], batch_size: int, rng: np.random.Generator):
    """MAML: one (support, query) pair per training level per meta-step."""
    levels = sorted(set(data["levels"].tolist()))
    per_level = {k: np.flatnonzero(data["levels"].numpy() == k) for k in levels}
    steps = max(len(v) for v in per_level.values()) // batch_size
    for _ in range(max(steps, 1)):
        tasks = []
        for k in levels:
            idx = rng.choice(per_level[k], size=2 * min(batch_size, len(per_level[k]) // 2), replace=False)
            half = len(idx) // 2
            tasks.append((_take(data, torch.as_tensor(idx[:half])), _take(data, torch.as_tensor(idx[half:]))))
        yield tasks


def validation_accuracy(model: BlockEnvModel, data: dict[str, torch.Tensor]) -> float:
    """Teacher-forced accuracy of the predicted action on held-out training-level steps (for
    picking the best epoch; the evaluation levels are never used)."""
    from indgen_sim.blockenv.models.common import select_actions

    model.eval()
    with torch.no_grad():
        if model.data == "episodes":
            correct = total = 0
            mask = data["mask"]
            for t in range(data["grids"].shape[1]):
                state = model.start(len(data["levels"]), data["levels"])
                prev = None
                for s in range(t + 1):
                    logits = model.logits(state, data["grids"][:, s], prev, s)
                    prev = data["actions"][:, s]
                acts = select_actions(logits, np.zeros(len(data["levels"]), np.uint64), 0, greedy=True)
                ok = (torch.as_tensor(acts) == data["actions"][:, t]).all(1) & mask[:, t]
                correct += int(ok.sum())
                total += int(mask[:, t].sum())
            return correct / max(total, 1)
        state = model.start(len(data["levels"]), data["levels"])
        acts = select_actions(
            model.logits(state, data["grids"], None, 0), np.zeros(len(data["levels"]), np.uint64), 0, greedy=True
        )
        return float((torch.as_tensor(acts) == data["actions"]).all(1).float().mean())


def train(
    name: str, demos: Demos, config: TrainConfig | None = None, **model_kwargs
) -> tuple[BlockEnvModel, dict[str, Any]]:
    config = config or TrainConfig()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = MODELS[name](**model_kwargs)
    order = rng.permutation(len(demos))
    n_val = max(len(demos) // 10, 1)
    train_d, val_d = demos.select(order[n_val:]), demos.select(order[:n_val])
    as_data = _episodes if model.data == "episodes" else _steps
    train_data, val_data = as_data(train_d), as_data(val_d)
    opt = torch.optim.AdamW(model.param_groups(config.lr), lr=config.lr, weight_decay=config.weight_decay)
    start = time.monotonic()
    best: tuple[float, dict[str, torch.Tensor] | None, int] = (-1.0, None, -1)  # (accuracy, weights, epoch)
    history = []
    for epoch in range(config.epochs):
        model.train()
        losses = []
        batches = (_task_batches if model.data == "tasks" else _batches)(train_data, config.batch_size, rng)
        for batch in batches:
            loss, _ = cast(MAMLPolicy, model).meta_loss(batch) if model.data == "tasks" else model.loss(batch)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            opt.step()
            losses.append(loss.item())
        acc = validation_accuracy(model, val_data)
        extra = model.validation_metrics(val_data)
        history.append(
            {
                "epoch": epoch,
                "loss": float(np.mean(losses)),
                "val_accuracy": acc,
                "seconds": time.monotonic() - start,
                **extra,
            }
        )
        logger.info(
            f"  {name} epoch {epoch + 1}/{config.epochs}: loss {np.mean(losses):.4f}, "
            f"held-out L0-L2 accuracy {acc:.3f}" + "".join(f", {k.replace('_', ' ')} {v:.3f}" for k, v in extra.items())
        )
        if acc > best[0]:
            best = (acc, {k: v.detach().clone() for k, v in model.state_dict().items()}, epoch)
        if time.monotonic() - start > config.max_seconds:
            logger.info(f"  {name}: time budget of {config.max_seconds:.0f} s reached")
            break
    assert best[1] is not None, "no epoch ran (config.epochs < 1)"
    model.load_state_dict(best[1])
    info = {
        "best_epoch": best[2],
        "val_accuracy": best[0],
        "history": history,
        **{k: v for k, v in history[best[2]].items() if k not in ("epoch", "loss", "val_accuracy", "seconds")},
        "seconds": time.monotonic() - start,
        "train_episodes": len(train_d),
        "config": vars(config),
    }
    return model.eval(), info


def save_checkpoint(model: BlockEnvModel, path: Path, info: dict[str, Any] | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.name, "config": model.config, "state_dict": model.state_dict(), "info": info or {}}, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(path: Path) -> BlockEnvModel:
    from indgen_core.errors import IndGenError, first_line

    path = Path(path)
    if not path.is_file():
        raise IndGenError(f"no BlockEnv checkpoint at {path}: train it with `indgen blockenv table1`")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        model = MODELS[ckpt["model"]](**ckpt["config"])
        model.load_state_dict(ckpt["state_dict"])
    except Exception as exc:  # a truncated or foreign file
        raise IndGenError(f"{path} is not a readable BlockEnv checkpoint ({first_line(exc)})") from None
    return model.eval()
