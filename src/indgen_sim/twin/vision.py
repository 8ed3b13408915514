"""The twin's camera-based tau_0 policy (`droid_twin_vision`): it sees only what pi0.5-DROID
sees (the exterior and wrist images, joint and gripper positions, the prompt) and answers
pi0.5's kind of reply, an open-loop chunk of DROID joint velocities.

Two learned parts, both trained by behaviour cloning at tau_0 only:
- perception, a small CNN per camera (64 x 64 input, spatial-softmax keypoints) with an MLP
  that also reads the joint and gripper positions and the task: it estimates where the object
  to pick and the target are relative to the gripper's pinch point, and the pick object's yaw.
  Its labels are the simulator's object poses, used only as training targets;
- control, the state-based policy's MLP (bc.py), fed with those estimates instead of the
  privileged poses.
A chunk is built by rolling the control MLP forward through the robot's kinematics (joint
positions integrate DROID's q + 0.2 v per tick; the objects stay where they were seen, a held
one moves with the hand), the way a pi0.5 chunk is one prediction executed open-loop. A held
object (the gripper stopped part-closed) is not looked for: it is where the hand holds it, an
offset learned from the training labels (`in_hand_offsets`).

Training data (DAgger, as the state-based policy): oracle demonstrations with small action
noise, then rounds in which this policy drives, chunks and all, and the oracle labels every
state it visits; perception frames are rendered only on the ticks where a request is made
(and on every other tick of the demonstrations), plus views of many more layouts than there
are episodes (`views`), and perception is refitted on each round's frames. The images
differ between the menagerie FR3 and the built-in one, so a checkpoint records the robot
model and refuses the other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core import paths
from indgen_core.errors import IndGenError, require
from indgen_core.policy import Policy
from indgen_core.specs.droid import DELTA_PER_TICK, EXTERIOR, WRIST
from indgen_sim.twin import bc, tasks

IMAGE = 64  # pixels a side the network sees (the 224 x 224 request images, box-filtered)
KEYPOINTS = 16
CHUNK = 8  # actions per reply: pi05_droid's executed horizon
TARGETS = 3 + 3 + 2  # pick and place object positions (robot base frame), (sin, cos) of 4 x pick yaw
REQUEST_IMAGES = {EXTERIOR: "observation/exterior_image_1_left", WRIST: "observation/wrist_image_left"}


def checkpoint_path() -> Path:
    override = os.environ.get("INDGEN_TWIN_VISION_CHECKPOINT")
    return Path(override) if override else paths.data_dir() / "twin" / "vision_tau0.pt"


def task_of_prompt(prompt: str) -> str:
    """The task from the instruction, the only place a pi0.5 policy learns it from."""
    text = str(prompt).lower()
    if "cup" in text or "bowl" in text:
        return "scale"
    if "block" in text:
        return "stack"
    raise ValueError(f"the twin's vision policy knows the stack and cup-in-bowl tasks, not {str(prompt)[:80]!r}")


#: the part of each 224 x 224 request image the network sees (rows, columns): the exterior
#: camera's table, where the objects are (the whole image would leave a block 2 pixels wide);
#: all of the wrist camera's view
CROPS = {EXTERIOR: (slice(96, 224), slice(24, 152)), WRIST: (slice(0, 224), slice(0, 224))}


def shrink(image: np.ndarray, camera: str) -> np.ndarray:
    """A request image (224 x 224 RGB) as the network's IMAGE x IMAGE uint8 input."""
    from PIL import Image

    rows, cols = CROPS[camera]
    crop = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[rows, cols])
    return np.asarray(Image.fromarray(crop).resize((IMAGE, IMAGE), Image.Resampling.BOX))


PROPRIO = 1 + len(tasks.TASKS) + 3 + 9


def proprio(q, g: float, task: str, kin) -> np.ndarray:
    """Gripper, task and the pinch point's pose from the kinematics (where the wrist camera
    looks from): what the network reads besides the images. Not the joint angles: on the
    oracle's paths they predict where the objects are without a look at the images, a
    shortcut that fails as soon as the arm goes elsewhere."""
    kin.set(np.asarray(q, dtype=float).reshape(7))
    pinch, rot = kin.pinch()
    return np.concatenate([[g], np.eye(len(tasks.TASKS))[tasks.TASKS.index(task)], pinch, rot.ravel()]).astype(
        np.float32
    )


#: gripper positions (0 open .. 1 closed) at which the fingers stopped on something: the
#: object is in the hand (closed on nothing, they read 1.0; on the block 0.48, on the cup 0.31)
HOLDING = (0.15, 0.9)


def holding(g: float) -> bool:
    return HOLDING[0] < g < HOLDING[1]


def in_hand_offsets(frames: dict[str, np.ndarray], log=print) -> dict[str, list[float]]:
    """Where a held object sits in the pinch frame, per task: the median over the training
    frames in which the gripper is `holding` it (labels within 5 cm of the pinch point).

    Why: while the arm carries it, the exterior camera sees the object behind the hand and the
    wrist camera sees it between the fingers, and perception put it 21 mm off (median, 30
    unseen tau_0 Stack episodes) against 6-8 mm for one on the table; fed the true position
    only while the gripper was closed, the same policy solved 24 of 30 episodes instead of 11.
    The hand's pose is known from the joint positions (pi0.5 sees them too), and the grasp
    leaves the object within about 2 mm of one place in the hand."""
    state, target = frames["state"], frames["target"]
    at = 1 + len(tasks.TASKS)  # proprio's layout: gripper, task, pinch point, pinch rotation
    pinch, rot = state[:, at : at + 3], state[:, at + 3 : at + 12].reshape(-1, 3, 3)
    offset = np.einsum("bji,bj->bi", rot, target[:, 0:3] - pinch)  # rot^T (pick - pinch)
    held = (state[:, 0] > HOLDING[0]) & (state[:, 0] < HOLDING[1]) & (np.linalg.norm(offset, axis=1) < 0.05)
    out = {}
    for i, task in enumerate(tasks.TASKS):
        mine = held & (state[:, 1 + i] > 0.5)
        if mine.any():
            out[task] = [float(v) for v in np.median(offset[mine], axis=0)]
        else:  # only in tiny runs (tests): no demonstration got that far
            log(f"  no training frame holds the {task} task's object: a held one is taken to be at the pinch point")
            out[task] = [0.0, 0.0, 0.0]
    return out


def targets(request: dict[str, Any]) -> np.ndarray:
    """Perception's training label from the simulator's privileged keys (training only): where
    the objects are, not where they are from the gripper (that would be learnable from the arm
    alone along the demonstrations)."""
    task = str(request["privileged/task"])
    objs = tasks.OBJECTS[task]
    pick = np.asarray(request[f"privileged/objects/{objs.pick}"], dtype=float)
    place = np.asarray(request[f"privileged/objects/{objs.place}"], dtype=float)
    return np.concatenate([pick[:3], place[:3], bc.yaw_code(task, pick[3:7])]).astype(np.float32)


def _network(keypoints: int = KEYPOINTS, hidden: int = 256):
    torch = require("torch", "all", "the twin's vision policy")
    nn = torch.nn

    def trunk():
        return nn.Sequential(
            nn.Conv2d(3, 16, 5, 2, 2),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, 1, 1),
            nn.ReLU(),
            nn.Conv2d(16, keypoints, 3, 1, 1),
        )

    module_base: Any = nn.Module  # torch is imported at run time: its classes are untyped here

    class Perception(module_base):
        """Two images and the proprioception -> TARGETS (normalised)."""

        def __init__(self):
            super().__init__()
            self.exterior, self.wrist = trunk(), trunk()
            self.head = nn.Sequential(
                nn.Linear(4 * keypoints + PROPRIO, hidden),
                nn.ReLU(),
                nn.Linear(hidden, hidden),
                nn.ReLU(),
                nn.Linear(hidden, TARGETS),
            )

        @staticmethod
        def keypoints(maps):
            b, k, h, w = maps.shape
            p = torch.softmax(maps.flatten(2), -1).view(b, k, h, w)
            xs, ys = torch.linspace(-1, 1, w), torch.linspace(-1, 1, h)
            return torch.cat([(p.sum(2) * xs).sum(-1), (p.sum(3) * ys).sum(-1)], 1)

        @staticmethod
        def pixels(images):  # B, H, W, 3 uint8 -> B, 3, H, W in [-0.5, 0.5]
            return images.permute(0, 3, 1, 2).float() / 255.0 - 0.5

        def forward(self, exterior, wrist, state):
            return self.head(
                torch.cat(
                    [
                        self.keypoints(self.exterior(self.pixels(exterior))),
                        self.keypoints(self.wrist(self.pixels(wrist))),
                        state,
                    ],
                    1,
                )
            )

    return Perception()


FRAME_KEYS = ("exterior", "wrist", "state", "target")
#: the least spread a label is normalised by: metres for positions, the yaw code's unit
SCALE_FLOOR = np.array([0.01] * 6 + [0.1] * 2, dtype=np.float32)


def task_index(state: np.ndarray) -> np.ndarray:
    """Each proprio row's task (an index into tasks.TASKS)."""
    return np.asarray(state)[:, 1 : 1 + len(tasks.TASKS)].argmax(1)


def task_scales(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-task mean and spread of perception's labels (len(TASKS) x TARGETS). Why per task: the
    two tasks' objects sit in different places (the bowl's y about 8 cm from the blue block's),
    so a spread over both is mostly that difference, and the blue block's own 5.5 cm of y across
    tau_0 layouts became a small part of the loss: the network estimated it 13 mm off at the
    median, pulled toward the middle (error against true y: correlation -0.84)."""
    task, target = task_index(data["state"]), np.asarray(data["target"], dtype=np.float32)
    mean, std = np.zeros((len(tasks.TASKS), TARGETS), np.float32), np.ones((len(tasks.TASKS), TARGETS), np.float32)
    for i in range(len(tasks.TASKS)):
        if (task == i).any():
            mean[i], std[i] = target[task == i].mean(0), np.maximum(target[task == i].std(0), SCALE_FLOOR)
    return mean, std


def train_perception(
    data: dict[str, np.ndarray], epochs: int, start: dict | None = None, seed: int = 0, max_lr: float = 1e-3, log=print
) -> dict:
    """Fit (or go on fitting `start`) the perception network; returns its checkpoint part."""
    torch = require("torch", "all", "the twin's vision policy")
    torch.manual_seed(seed)
    net = _network()
    if start is not None:
        net.load_state_dict(start["state_dict"])
    mean, std = (start["mean"], start["std"]) if start else task_scales(data)
    mean, std = np.asarray(mean, dtype=np.float32), np.asarray(std, dtype=np.float32)
    task = task_index(data["state"])
    ext, wrist = torch.as_tensor(data["exterior"]), torch.as_tensor(data["wrist"])
    state, target = torch.as_tensor(data["state"]), torch.as_tensor((data["target"] - mean[task]) / std[task])
    bc.fit(
        net.parameters(),
        len(target),
        lambda idx: torch.nn.functional.smooth_l1_loss(net(ext[idx], wrist[idx], state[idx]), target[idx]),
        epochs,
        128,
        seed,
        log,
        "perception ",
        5,
        max_lr,
    )
    net.eval()
    with torch.no_grad():  # how far off it is, in the units that matter (on the last tenth, seen in training)
        tail = slice(len(target) - max(1, len(target) // 10), len(target))
        error = (net(ext[tail], wrist[tail], state[tail]).numpy() - target[tail].numpy()) * std[task[tail]]
    rms = np.sqrt((error**2).mean(0))
    log(
        f"  perception RMS error (on training frames): pick {1000 * np.linalg.norm(rms[0:3]):.0f} mm, target "
        f"{1000 * np.linalg.norm(rms[3:6]):.0f} mm, yaw code {np.linalg.norm(rms[6:8]):.2f}"
    )
    return {"state_dict": net.state_dict(), "mean": mean, "std": std}


class TwinVisionPolicy(Policy):
    metadata: Mapping[str, Any] = {
        "policy": "droid_twin_vision",
        "spec": "droid",
        "privileged": False,
        "trained_on": "tau_0 oracle labels",
        "inputs": "pi05_droid's",
    }

    def __init__(self, checkpoint: str | Path | dict | None = None, chunk: int | None = None):
        torch = require("torch", "all", "the twin's vision policy")
        ckpt = checkpoint if isinstance(checkpoint, dict) else _load(checkpoint)
        self.torch = torch
        self.net = _network()
        self.net.load_state_dict(ckpt["perception"]["state_dict"])
        self.net.eval()
        # per task (rows in tasks.TASKS order); one row for every task in checkpoints before that
        shape = (len(tasks.TASKS), TARGETS)
        self.mean = np.broadcast_to(np.asarray(ckpt["perception"]["mean"], dtype=np.float32), shape)
        self.std = np.broadcast_to(np.asarray(ckpt["perception"]["std"], dtype=np.float32), shape)
        self.control = bc.TwinBCPolicy(ckpt["control"], builtin=ckpt["robot_model"] == "builtin")
        self.in_hand = {task: np.asarray(offset, dtype=float) for task, offset in ckpt["in_hand"].items()}
        self.robot_model = ckpt["robot_model"]
        self.chunk = int(chunk or ckpt.get("chunk", CHUNK))
        # instance metadata: the world checks the robot model before the first episode
        self.metadata = {**type(self).metadata, "robot_model": self.robot_model, "chunk": self.chunk}

    def perceive(self, obs: dict[str, Any]) -> tuple[str, np.ndarray, float, np.ndarray]:
        """(task, joint positions, gripper position, estimated TARGETS) from a DROID request:
        perception's estimates, except for an object in the hand (`holding`), which is where
        the hand holds it (`in_hand`)."""
        missing = [
            key
            for key in (
                *REQUEST_IMAGES.values(),
                "observation/joint_position",
                "observation/gripper_position",
                "prompt",
            )
            if key not in obs
        ]
        if missing:
            raise ValueError(f"the vision policy needs pi05_droid's request; missing {', '.join(missing)}")
        task = task_of_prompt(obs["prompt"])
        q = np.asarray(obs["observation/joint_position"], dtype=float).reshape(7)
        g = float(np.asarray(obs["observation/gripper_position"], dtype=float).reshape(-1)[0])
        images = [self.torch.from_numpy(shrink(obs[REQUEST_IMAGES[c]], c)[None].copy()) for c in (EXTERIOR, WRIST)]
        state = proprio(q, g, task, bc._kinematics(self.control.builtin))
        with self.torch.no_grad():
            out = self.net(*images, self.torch.as_tensor(state[None])).numpy()[0]
        t = tasks.TASKS.index(task)
        seen = out * self.std[t] + self.mean[t]
        if holding(g):  # the object is in the hand: where the hand is, not where the cameras put it
            kin = bc._kinematics(self.control.builtin)
            kin.set(q)
            pinch, rot = kin.pinch()
            seen[0:3] = pinch + rot @ self.in_hand[task]
        return task, q, g, seen

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        task, q, g, seen = self.perceive(obs)
        kin = bc._kinematics(self.control.builtin)
        pick, place, yaw = seen[0:3], seen[3:6], seen[6:8]
        held = holding(g)
        actions = []
        for _ in range(self.chunk):
            kin.set(q)
            pinch, rot = kin.pinch()
            if held:  # it moves with the hand through the chunk
                pick = pinch + rot @ self.in_hand[task]
            action = self.control.act(bc.state_features(q, g, pinch, pick, place, yaw, task), q)
            actions.append(action)
            q = q + DELTA_PER_TICK * action[:7]
        return {"actions": np.array(actions)}


def _load(checkpoint: str | Path | None) -> dict:
    path = Path(checkpoint) if checkpoint else checkpoint_path()
    ckpt = bc.load_checkpoint(path, "vision policy", "indgen twin train-bc --vision")
    if not isinstance(ckpt, dict) or ckpt.get("kind") != "vision":
        raise IndGenError(f"{path} is not a vision policy checkpoint (the state-based one is served as droid_twin_bc)")
    if "in_hand" not in ckpt:
        raise IndGenError(
            f"{path} is a vision checkpoint from before the in-hand estimate (2026-12-02): retrain it "
            "with `indgen twin train-bc --vision`"
        )
    return ckpt


# -- data and training -------------------------------------------------------------------------
def collect(
    episodes: int,
    policy: Policy | None = None,
    noise: float = 0.02,
    seed_base: int = 9_000_000,
    builtin: bool = True,
    image_every: int = 2,
    log=print,
) -> tuple[dict, dict]:
    """tau_0 episodes of both tasks: control samples (state features, oracle label) on every
    tick and perception samples (both images, proprioception, label) every `image_every` ticks
    and on every tick where the policy (when it drives) makes a request."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.oracle import TwinOracle
    from indgen_sim.twin.world import DroidTwinWorld

    world = DroidTwinWorld(cameras=[EXTERIOR, WRIST], builtin=builtin)
    oracle, spec = TwinOracle(builtin=builtin), DroidSpec()
    kin = bc._kinematics(builtin)
    control_x, control_y = [], []
    frames: dict[str, list] = {"exterior": [], "wrist": [], "state": [], "target": [], "q": []}
    rng = np.random.default_rng(seed_base)
    solved, t0 = 0, time.monotonic()
    for e, setup in enumerate(bc.tau0_setups(episodes, seed_base, "droid_twin_vision", "vision")):
        obs = world.reset(setup)
        queue: list = []
        done = False
        for step in range(world.max_steps(setup)):
            state_request = spec.request({**obs, "images": {}}, setup, step)  # no frame rendered for the labels
            twist, grip = oracle.command(
                state_request["observation/joint_position"],
                float(obs["gripper_position"]),
                obs["task"],
                bc._objects(state_request),
            )
            control_x.append(bc.features(state_request, builtin))
            control_y.append(np.concatenate([twist / bc.TWIST_SCALE, [grip]]))
            asks = policy is not None and not queue
            # a camera policy: images, nothing privileged
            sees = asks and policy is not None and policy.metadata.get("privileged") is False
            request = state_request
            if sees or step % image_every == 0:
                request = spec.request(obs, setup, step)
                add_frame(frames, request, kin)
            if asks and policy is not None:
                queue = spec.actions(
                    policy.infer({k: v for k, v in request.items() if not (sees and k.startswith("privileged/"))})
                )
            if policy is None:
                clean = oracle.joint_velocities(state_request["observation/joint_position"], twist)
                action = {"joint_velocity": np.clip(clean + rng.normal(0, noise, 7), -1, 1), "gripper": grip}
            else:
                action = queue.pop(0)
            result = world.step(action)
            obs = result.observation
            if result.done:
                done = True
                break
        solved += done and world.evaluate().outcome.name == "SUCCESS"
        bc.progress(log, e, episodes, policy is None, t0, f", {world.frames_rendered} frames rendered")
    world.close()
    data = {k: np.array(v) for k, v in frames.items()}
    data["control_x"] = np.array(control_x, dtype=np.float32)
    data["control_y"] = np.array(control_y, dtype=np.float32)
    return data, {
        "episodes": episodes,
        "solved": int(solved),
        "control_samples": len(control_x),
        "frames": len(frames["target"]),
    }


def add_frame(frames: dict[str, list], request: dict[str, Any], kin) -> None:
    """One perception sample from a DROID request with the simulator's keys: the network's two
    images, its proprioception, the label, and the joint positions (for `views`' arm poses)."""
    q = np.asarray(request["observation/joint_position"], dtype=float)
    g = float(np.asarray(request["observation/gripper_position"]).reshape(-1)[0])
    frames["exterior"].append(shrink(request[REQUEST_IMAGES[EXTERIOR]], EXTERIOR))
    frames["wrist"].append(shrink(request[REQUEST_IMAGES[WRIST]], WRIST))
    frames["state"].append(proprio(q, g, str(request["privileged/task"]), kin))
    frames["target"].append(targets(request))
    frames["q"].append(q.astype(np.float32))


def views(
    layouts: int,
    arm_poses: np.ndarray,
    per_layout: int = 4,
    seed_base: int = 9_500_000,
    builtin: bool = True,
    log=print,
) -> dict:
    """Perception samples over many more tau_0 layouts than there are episodes: each fresh
    layout (settled as for an episode) is seen with the arm teleported to `per_layout` poses
    drawn from `arm_poses` (joint positions the demonstrations passed through, gripper open).
    An episode gives one layout and a hundred frames of it: from 80 layouts perception learned
    the layouts more than where a block is in the picture (fitted on the same episodes, its
    median error on the block at the reset pose of unseen tau_0 layouts was 13 and 11 mm in x
    and y without these views, 5 and 4 mm with 1,500 layouts of them)."""
    from indgen_core.specs.droid import DroidSpec
    from indgen_sim.twin.world import DroidTwinWorld

    world, spec, kin = DroidTwinWorld(cameras=[EXTERIOR, WRIST], builtin=builtin), DroidSpec(), bc._kinematics(builtin)
    rng = np.random.default_rng(seed_base)
    frames: dict[str, list] = {k: [] for k in (*FRAME_KEYS, "q")}
    t0 = time.monotonic()
    for e, setup in enumerate(bc.tau0_setups(layouts, seed_base, "droid_twin_vision", "views")):
        world.reset(setup)
        for q in arm_poses[rng.choice(len(arm_poses), per_layout)]:
            world.pose_arm(q)
            add_frame(frames, spec.request(world.observe(), setup, 0), kin)
        if (e + 1) % 250 == 0:
            log(f"  views: {e + 1}/{layouts} layouts ({time.monotonic() - t0:.0f} s)")
    world.close()
    return {k: np.array(frames[k]) for k in FRAME_KEYS}


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
    log=print,
) -> tuple[dict, dict]:
    """All at tau_0: the control MLP as the state-based policy learns it (oracle demonstrations
    and DAgger on true state); perception on oracle-driven episodes (with wider action noise,
    so that it sees the arm off the oracle's path too); then DAgger rounds in which the camera
    policy drives and the oracle labels what the control MLP should have done, while
    perception goes on learning (`refine_epochs`) from the frames of the states the camera
    policy itself visits, where its estimates matter and were furthest off. Of the iterates
    (control and perception together) the one whose camera policy solved most tau_0 episodes
    is kept."""
    robot = "builtin" if builtin else "menagerie"
    log("control: the state-based policy's training (true state, labels only; it never sees a camera)")
    control, control_info, control_x, control_y = bc.dagger(
        control_demos, state_rounds, episodes_per_round, control_epochs, builtin, log
    )
    log("perception: episodes with both cameras, driven by the oracle and by the control MLP on true state")
    data, stats = collect(demo_episodes, noise=0.05, builtin=builtin, log=log)
    driven, driven_stats = collect(
        demo_episodes, policy=bc.TwinBCPolicy(control, builtin=builtin), seed_base=9_050_000, builtin=builtin, log=log
    )
    gripper = np.concatenate([data["state"], driven["state"]])[:, 0]  # proprio's first value
    arm_poses = np.concatenate([data["q"], driven["q"]])[gripper < 0.1]  # the gripper open
    seen = {k: np.concatenate([data[k], driven[k]]) for k in FRAME_KEYS}
    if view_layouts > 0:
        log(f"perception: {view_layouts} more tau_0 layouts, seen from the demonstrations' arm poses")
        more = views(view_layouts, arm_poses, builtin=builtin, log=log)
        seen = {k: np.concatenate([seen[k], more[k]]) for k in FRAME_KEYS}
    info: dict[str, Any] = {"robot_model": robot, "control": control_info, "rounds": [stats, driven_stats]}
    start = {"control": control, "perception": train_perception(seen, perception_epochs, log=log)}

    in_hand = in_hand_offsets(seen, log)
    log(
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
            log=log,
        )

    def retrain(more: dict) -> dict:
        labelled["x"] = np.concatenate([labelled["x"], more["control_x"]])
        labelled["y"] = np.concatenate([labelled["y"], more["control_y"]])
        for k in FRAME_KEYS:
            seen[k] = np.concatenate([seen[k], more[k]])
        latest["control"] = bc.train(labelled["x"], labelled["y"], epochs=control_epochs, log=lambda _: None)
        latest["perception"] = train_perception(seen, refine_epochs, start=latest["perception"], log=log)
        return dict(latest)

    best = bc.best_iterate(rounds, start, drive, retrain, info, "the vision policy", log)
    info["control_samples"], info["frames"] = len(labelled["x"]), len(seen["target"])
    return checkpoint(best), info


def train_and_save(path: str | Path | None = None, log=print, **options) -> Path:
    torch = require("torch", "all", "the twin's vision policy")
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t0 = time.monotonic()
    ckpt, info = train_with_dagger(log=log, **options)
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
    log(
        f"trained in {info['train_seconds']:.0f} s on the {info['robot_model']} FR3: {info['frames']} camera "
        f"frames and {info['control_samples']} oracle-labelled states at tau_0"
    )
    return path
