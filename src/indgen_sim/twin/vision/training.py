"""Training the twin's vision policy, at tau_0 unless a training plan says more, by behaviour cloning (DAgger, as the
state-based policy): oracle demonstrations with small action noise, then rounds in which this
policy drives, chunks and all, and the oracle labels every state it visits; perception is
refitted on each round's frames. The trained checkpoint records the robot model it was
trained on, its training plan, its chunk, its image size and the in-hand offsets.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core.errors import require
from indgen_sim.twin import bc
from indgen_sim.twin.training_plan import TAU0, TrainingPlan
from indgen_sim.twin.vision.data import FRAME_KEYS, collect, views
from indgen_sim.twin.vision.features import IMAGE, in_hand_offsets
from indgen_sim.twin.vision.network import train_perception
from indgen_sim.twin.vision.policy import CHUNK, TwinVisionPolicy, checkpoint_path

logger = logging.getLogger(__name__)


def train_with_dagger(
    demo_episodes: int = 40,
    rounds: int = 2,
    episodes_per_round: int = 30,
    perception_epochs: int = 30,
    control_epochs: int = 200,
    control_demos: int = 40,
    state_rounds: int = 4,
    refine_epochs: int = 6,
    view_layouts: int = 1500,
    builtin: bool = True,
    plan: TrainingPlan = TAU0,
) -> tuple[dict, dict]:
    """All at tau_0: the control MLP as the state-based policy learns it (oracle demonstrations
    and DAgger on true state); perception on oracle-driven episodes (with wider action noise,
    so that it sees the arm off the oracle's path too); then DAgger rounds in which the camera
    policy drives and the oracle labels what the control MLP should have done, while
    perception goes on learning (`refine_epochs`) from the frames of the states the camera
    policy itself visits, where its estimates matter and were furthest off. Of the iterates
    (control and perception together) the one whose camera policy solved most tau_0 episodes
    is kept. A training plan other than tau_0's (`--axis A --levels L`, `--seed S`) puts every
    episode and view at its levels and shifts every seed."""
    robot = "builtin" if builtin else "menagerie"
    logger.info("control: the state-based policy's training (true state, labels only; it never sees a camera)")
    control, control_info, control_x, control_y = bc.dagger(
        control_demos, state_rounds, episodes_per_round, control_epochs, builtin, plan
    )
    logger.info("perception: episodes with both cameras, driven by the oracle and by the control MLP on true state")
    data, stats = collect(demo_episodes, noise=0.05, builtin=builtin, plan=plan)
    driven, driven_stats = collect(
        demo_episodes,
        policy=bc.TwinBCPolicy(control, builtin=builtin),
        seed_base=9_050_000,
        builtin=builtin,
        plan=plan,
    )
    gripper = np.concatenate([data["state"], driven["state"]])[:, 0]  # proprio's first value
    arm_poses = np.concatenate([data["q"], driven["q"]])[gripper < 0.1]  # the gripper open
    seen = {k: np.concatenate([data[k], driven[k]]) for k in FRAME_KEYS}
    if view_layouts > 0:
        logger.info(f"perception: {view_layouts} more layouts, seen from the demonstrations' arm poses")
        more = views(view_layouts, arm_poses, builtin=builtin, plan=plan)
        seen = {k: np.concatenate([seen[k], more[k]]) for k in FRAME_KEYS}
    info: dict[str, Any] = {
        "robot_model": robot,
        "control": control_info,
        "rounds": [stats, driven_stats],
        "plan": plan.record(),
    }
    start = {"control": control, "perception": train_perception(seen, perception_epochs, seed=plan.seed)}

    in_hand = in_hand_offsets(seen)
    logger.info(
        "perception: held objects sit at "
        + ", ".join(f"{task} ({', '.join(f'{1000 * v:.1f}' for v in offset)}) mm" for task, offset in in_hand.items())
        + " in the pinch frame"
    )

    def checkpoint(iterate: dict) -> dict:
        return {"kind": "vision", "robot_model": robot, "chunk": CHUNK, "image": IMAGE, "in_hand": in_hand, **iterate}

    labelled = {"x": control_x, "y": control_y}
    latest = dict(start)

    def drive(r: int, iterate: dict):
        return collect(
            episodes_per_round,
            policy=TwinVisionPolicy(checkpoint(iterate)),
            seed_base=9_100_000 + 1000 * r,
            builtin=builtin,
            plan=plan,
        )

    def retrain(more: dict) -> dict:
        labelled["x"] = np.concatenate([labelled["x"], more["control_x"]])
        labelled["y"] = np.concatenate([labelled["y"], more["control_y"]])
        for k in FRAME_KEYS:
            seen[k] = np.concatenate([seen[k], more[k]])
        latest["control"] = bc.train(labelled["x"], labelled["y"], epochs=control_epochs, seed=plan.seed, quiet=True)
        latest["perception"] = train_perception(seen, refine_epochs, start=latest["perception"], seed=plan.seed)
        return dict(latest)

    best = bc.best_iterate(rounds, start, drive, retrain, info, "the vision policy", plan.describe())
    info["control_samples"], info["frames"] = len(labelled["x"]), len(seen["target"])
    return checkpoint(best), info


def train_and_save(path: str | Path | None = None, **options) -> Path:
    torch = require("torch", "all", "the twin's vision policy")
    bc.use_cores(torch)
    t0 = time.monotonic()
    ckpt, info = train_with_dagger(**options)
    info["train_seconds"] = round(time.monotonic() - t0, 1)
    path = Path(path) if path else checkpoint_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    perception, control = ckpt["perception"], ckpt["control"]
    payload = {
        **ckpt,
        "perception": {**perception, "mean": perception["mean"].tolist(), "std": perception["std"].tolist()},
        "control": {**control, "mean": control["mean"].tolist(), "std": control["std"].tolist()},
        "info": info,
    }
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)
    logger.info(
        f"trained in {info['train_seconds']:.0f} s on the {info['robot_model']} FR3: {info['frames']} camera "
        f"frames and {info['control_samples']} oracle-labelled states ({info['plan']['text']})"
    )
    return path
