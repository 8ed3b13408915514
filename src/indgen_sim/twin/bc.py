"""The twin's tau_0 policy: a small torch MLP behaviour-cloned on oracle demonstrations at
tau_0 only (no spacer under the blue block, the tau_0 bowl), for both tasks.

State-based, with privileged object poses (a simulation-only shortcut, said so wherever its
numbers are shown): joint positions, gripper position, the gripper's pinch point (forward
kinematics of the joint positions), the object to pick and the target relative to it, the
pick object's yaw (as sin/cos of 4 x yaw: a block looks the same every 90 degrees) and the
task (the layout is policy_input.py's, shared with the camera-based policy). It predicts the
gripper's Cartesian twist and the gripper command; the robot's Jacobian (the same damped least
squares as the oracle's) turns the twist into DROID's 7 normalised joint velocities.

Training data are oracle labels at tau_0 only: first oracle episodes with small noise on
the executed actions (DART), then DAgger rounds in which the policy itself drives and the
oracle labels every state it visits, so the policy learns to recover from its own errors.
A training plan (training_plan.py; `train-bc --axis A --levels L`) spreads one task's
episodes over more levels instead, for the paper's train-on-tau_0..tau_n experiment.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core import paths
from indgen_core.errors import IndGenError, require
from indgen_core.policy import Policy
from indgen_sim.twin.policy_input import FEATURES, TWIST_SCALE, features, object_poses
from indgen_sim.twin.training_plan import TAU0, TrainingPlan

logger = logging.getLogger(__name__)


#: the tau_0 checkpoint IndGen ships for the built-in FR3 (`make twin-checkpoint` trains it again):
#: a first `make demo` on a machine without a menagerie FR3 starts from it instead of training for
#: three minutes; test_twin_shipped_checkpoint.py drives the twin with it at tau_0
SHIPPED_BUILTIN = Path(__file__).parent / "checkpoints" / "bc_tau0_builtin.pt"


def checkpoint_path() -> Path:
    override = os.environ.get("INDGEN_TWIN_CHECKPOINT")
    return Path(override) if override else paths.data_dir() / "twin" / "bc_tau0.pt"


def _mlp(hidden: int):
    torch = require("torch", "all", "the twin's tau_0 policy")
    nn = torch.nn
    return nn.Sequential(
        nn.Linear(FEATURES, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 7),
    )


def collect(
    episodes: int,
    policy: Policy | None = None,
    noise: float = 0.02,
    seed_base: int = 7_000_000,
    builtin: bool = False,
    plan: TrainingPlan = TAU0,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Oracle-labelled states of both tasks at the plan's levels: (features, oracle actions,
    stats). The oracle drives (plus `noise`) when `policy` is None; otherwise the policy drives
    (DAgger)."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.oracle import TwinOracle
    from indgen_sim.twin.world import DroidTwinWorld

    world, oracle, spec = DroidTwinWorld(cameras=False, builtin=builtin), TwinOracle(builtin=builtin), DroidSpec()
    xs, ys = [], []
    solved, visited = 0, collections.Counter[str]()
    rng = np.random.default_rng(plan.stream(seed_base))
    t0 = time.monotonic()
    for e, setup in enumerate(plan.setups(episodes, seed_base, "droid_twin_oracle", "demo")):
        visited[f"{setup.axis} tau_{setup.level}"] += 1  # what it trained on, kept in the checkpoint
        obs = world.reset(setup)
        oracle.reset()
        done = False
        for step in range(world.max_steps(setup)):
            request = spec.request(obs, setup, step)
            clean = oracle.infer(request)["actions"][0]
            twist, grip = oracle.command(
                request["observation/joint_position"],
                float(obs["gripper_position"]),
                obs["task"],
                object_poses(request),
            )
            xs.append(features(request, builtin))
            ys.append(np.concatenate([twist / TWIST_SCALE, [grip]]))
            if policy is None:
                executed = clean.copy()
                executed[:7] = np.clip(executed[:7] + rng.normal(0, noise, 7), -1, 1)
            else:
                executed = policy.infer(request)["actions"][0]
            result = world.step({"joint_velocity": executed[:7], "gripper": float(executed[7] > 0.5)})
            obs = result.observation
            if result.done:
                done = True
                break
        solved += done and world.evaluate().outcome.name == "SUCCESS"
        progress(e, episodes, policy is None, t0)
    world.close()
    return (
        np.array(xs, dtype=np.float32),
        np.array(ys, dtype=np.float32),
        {"episodes": episodes, "solved": solved, "samples": len(xs), "levels": dict(visited)},
    )


def progress(e: int, episodes: int, demonstrations: bool, t0: float, extra: str = "") -> None:
    if (e + 1) % 10 == 0:
        logger.info(
            f"  {'demonstrations' if demonstrations else 'DAgger'}: {e + 1}/{episodes} episodes "
            f"({time.monotonic() - t0:.0f} s{extra})"
        )


def fit(
    params,
    n: int,
    loss_of,
    epochs: int,
    batch: int,
    seed: int,
    label: str,
    every: int,
    max_lr: float = 3e-3,
    quiet: bool = False,
) -> None:
    """Adam over shuffled minibatches of n samples with a one-cycle learning rate (warm up to
    `max_lr`, anneal to ~0); `loss_of(indices)` is one batch's loss. The annealing matters:
    the oracle's phases meet at sharp boundaries (close within 5 mm, open within 8 mm), and at a
    constant 1e-3 the MLP stayed ten times further from its labels (loss 0.036 against 0.004
    on the same 32,000 states) and solved 8 of 30 tau_0 Stack episodes instead of 20."""
    torch = require("torch", "all", "the twin's tau_0 policy")
    opt = torch.optim.Adam(params, lr=max_lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=max(1, epochs * -(-n // batch)))
    gen = torch.Generator().manual_seed(seed)
    for epoch in range(epochs):
        order = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, batch):
            idx = order[i : i + batch]
            loss = loss_of(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        if (epoch + 1) % every == 0 or epoch + 1 == epochs:
            logger.log(
                logging.DEBUG if quiet else logging.INFO, f"  {label}epoch {epoch + 1}/{epochs}: loss {total / n:.4f}"
            )


def train(
    x: np.ndarray, y: np.ndarray, epochs: int = 200, hidden: int = 256, seed: int = 0, quiet: bool = False
) -> dict:
    torch = require("torch", "all", "the twin's tau_0 policy")
    torch.manual_seed(seed)
    mean, std = x.mean(0), x.std(0) + 1e-6
    model = _mlp(hidden)
    xt = torch.as_tensor((x - mean) / std)
    vel, grip = torch.as_tensor(y[:, :6]), torch.as_tensor((y[:, 6] > 0.5).astype(np.float32))

    def loss_of(idx):
        out = model(xt[idx])
        return torch.nn.functional.mse_loss(
            out[:, :6], vel[idx]
        ) + torch.nn.functional.binary_cross_entropy_with_logits(out[:, 6], grip[idx])

    fit(model.parameters(), len(xt), loss_of, epochs, 256, seed, "", 50, quiet=quiet)
    return {"state_dict": model.state_dict(), "mean": mean, "std": std, "hidden": hidden}


def save(ckpt: dict, path: Path, info: dict) -> Path:
    torch = require("torch", "all", "the twin's tau_0 policy")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({**ckpt, "mean": ckpt["mean"].tolist(), "std": ckpt["std"].tolist(), "info": info}, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(path: Path, what: str, command: str) -> dict:
    """A torch checkpoint of tensors and plain values only, or one sentence why not."""
    torch = require("torch", "all", f"the twin's {what}")
    if not path.is_file():
        raise IndGenError(f"no {what} checkpoint at {path}: run `{command}`")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise IndGenError(f"{path} is not a readable {what} checkpoint ({exc.__class__.__name__})") from None


def outdated(path: Path) -> bool:
    """A state-based checkpoint at `path` from an older input layout (retrain it)."""
    try:
        return len(load_checkpoint(path, "twin policy", "indgen twin train-bc")["mean"]) != FEATURES
    except (IndGenError, KeyError, TypeError):
        return False  # missing or unreadable: the caller's load says so in its own words


def trained_on_levels(ckpt: dict) -> str:
    """What a checkpoint's policy was trained on, for its metadata (and so the results store):
    checkpoints before training plans existed were all trained at tau_0."""
    plan = (ckpt.get("info") or {}).get("plan") or {}
    return f"{plan.get('text', 'tau_0')} oracle labels"


class TwinBCPolicy(Policy):
    metadata: Mapping[str, Any] = {
        "policy": "droid_twin_bc",
        "spec": "droid",
        "privileged": True,
        "trained_on": "tau_0 oracle labels",
    }

    def __init__(self, checkpoint: str | Path | dict | None = None, builtin: bool = False):
        torch = require("torch", "all", "the twin's tau_0 policy")
        if isinstance(checkpoint, dict):  # straight from train()
            ckpt = checkpoint
        else:
            ckpt = load_checkpoint(
                Path(checkpoint) if checkpoint else checkpoint_path(), "twin policy", "indgen twin train-bc"
            )
        # the kinematics of the model it was trained on (recorded since the built-in one exists):
        # a world of the other model refuses it, like the camera policy
        trained_on = (ckpt.get("info") or {}).get("robot_model")
        builtin = builtin or trained_on == "builtin"
        if trained_on:
            self.metadata = {**type(self).metadata, "robot_model": trained_on, "trained_on": trained_on_levels(ckpt)}
        if len(ckpt["mean"]) != FEATURES:
            raise IndGenError(
                f"this twin policy checkpoint reads {len(ckpt['mean'])} state features where this IndGen "
                f"computes {FEATURES}: it predates the current input layout; retrain it (`indgen twin "
                f"train-bc`, with --vision for the camera policy)"
            )
        self.model = _mlp(ckpt["hidden"])
        self.model.load_state_dict(ckpt["state_dict"])
        self.model.eval()
        self.mean = np.asarray(ckpt["mean"], dtype=np.float32)
        self.std = np.asarray(ckpt["std"], dtype=np.float32)
        self.torch = torch
        from indgen_sim.twin.oracle import TwinOracle

        self.builtin = builtin
        self.ik = TwinOracle(builtin)  # only its kinematics: twist -> joint velocities

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        q = np.asarray(obs["observation/joint_position"], dtype=float).reshape(7)
        return {"actions": self.act(features(obs, self.builtin), q)[None, :]}

    def act(self, x: np.ndarray, q: np.ndarray) -> np.ndarray:
        """One DROID action (7 joint velocities, gripper) for the features `x` at joints `q`."""
        x = (x.astype(np.float32) - self.mean) / self.std
        with self.torch.no_grad():
            out = self.model(self.torch.as_tensor(x[None])).numpy()[0]
        twist = np.clip(out[:6], -1, 1) * TWIST_SCALE
        return np.concatenate([self.ik.joint_velocities(q, twist), [1.0 if out[6] > 0 else 0.0]])


def best_iterate(rounds: int, start, drive, retrain, info: dict, who: str, where: str = "tau_0"):
    """DAgger rounds, keeping the iterate that solved most training episodes (iterates vary a
    lot; only the training levels, `where`, ever choose): `drive(r, iterate)` runs a round with
    it, giving (data, stats), `retrain(data)` the next iterate; the last one drives once more,
    only to be judged."""
    best, current = (-1, 0, start), start
    for r in range(rounds + 1 if rounds else 0):
        more, stats = drive(r, current)
        what = f"DAgger round {r + 1}/{rounds}" if r < rounds else "last iterate"
        logger.info(f"  {what}: {who} solved {stats['solved']}/{stats['episodes']} at {where}")
        info["rounds"].append(stats)
        if stats["solved"] >= best[0]:
            best = (stats["solved"], r, current)
        if r < rounds:
            current = retrain(more)
    if rounds:
        info["chosen"] = f"the iterate that drove pass {best[1] + 1} ({best[0]}/{stats['episodes']} at {where})"
        logger.info(f"  kept {info['chosen']}")
    return best[2]


def train_with_dagger(
    demo_episodes: int = 40,
    rounds: int = 4,
    episodes_per_round: int = 30,
    epochs: int = 200,
    builtin: bool = False,
    plan: TrainingPlan = TAU0,
) -> tuple[dict, dict]:
    """Oracle demonstrations, then DAgger rounds, all at the plan's levels (tau_0 unless told);
    returns (checkpoint, info)."""
    ckpt, info, _, _ = dagger(demo_episodes, rounds, episodes_per_round, epochs, builtin, plan)
    return ckpt, info


def dagger(
    demo_episodes: int, rounds: int, episodes_per_round: int, epochs: int, builtin: bool, plan: TrainingPlan = TAU0
) -> tuple[dict, dict, np.ndarray, np.ndarray]:
    """train_with_dagger, and the oracle-labelled states it trained on (the camera-based policy
    goes on training its control MLP on them)."""
    from indgen_sim.twin import assets

    x, y, stats = collect(demo_episodes, builtin=builtin, plan=plan)
    info: dict[str, Any] = {
        "rounds": [stats],
        "robot_model": assets.robot_source(prefer_builtin=builtin).kind,
        "plan": plan.record(),
    }
    ckpt = train(x, y, epochs=epochs, seed=plan.seed)
    data = {"x": x, "y": y}

    def drive(r: int, current: dict):
        xr, yr, stats = collect(
            episodes_per_round,
            policy=TwinBCPolicy(current, builtin=builtin),
            seed_base=8_000_000 + 1000 * r,
            builtin=builtin,
            plan=plan,
        )
        return (xr, yr), stats

    def retrain(more) -> dict:
        data["x"], data["y"] = np.concatenate([data["x"], more[0]]), np.concatenate([data["y"], more[1]])
        return train(data["x"], data["y"], epochs=epochs, seed=plan.seed)

    ckpt = best_iterate(rounds, ckpt, drive, retrain, info, "the policy", plan.describe())
    x, y = data["x"], data["y"]
    info["samples"] = len(x)
    return ckpt, info, x, y


def train_and_save(path: str | Path | None = None, **options) -> Path:
    """train_with_dagger with the defaults below, saved atomically to `path` (or the standard
    place); what was collected and how well the policy did per round go into the checkpoint."""
    use_cores(require("torch", "all", "the twin's tau_0 policy"))
    t0 = time.monotonic()
    ckpt, info = train_with_dagger(**options)
    info["train_seconds"] = round(time.monotonic() - t0, 1)
    out = save(ckpt, Path(path) if path else checkpoint_path(), info)
    logger.info(
        f"trained in {info['train_seconds']:.0f} s on {info['samples']} oracle-labelled states ({info['plan']['text']})"
    )
    return out


def use_cores(torch) -> None:
    """At most two torch threads, and no more than the cores this process may run on (a
    training pinned with `taskset -c 1` beside another gets one)."""
    torch.set_num_threads(max(1, min(2, len(os.sched_getaffinity(0)))))
