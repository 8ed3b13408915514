"""The twin's vision policy's perception network and its training: a small CNN per camera
(64 x 64 input, spatial-softmax keypoints) with an MLP that also reads the proprioception
(gripper, task, the pinch point's pose): it estimates where the object to pick and the target
are and the pick object's yaw (`features.TARGETS`). Its labels are the simulator's object
poses, used only as training targets, each task's scaled by their own mean and spread
(`features.task_scales`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from indgen_core.errors import require
from indgen_sim.twin import bc
from indgen_sim.twin.vision.features import PROPRIO, TARGETS, task_index, task_scales

logger = logging.getLogger(__name__)

KEYPOINTS = 16


def perception_network(keypoints: int = KEYPOINTS, hidden: int = 256):
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


def train_perception(
    data: dict[str, np.ndarray], epochs: int, start: dict | None = None, seed: int = 0, max_lr: float = 1e-3
) -> dict:
    """Fit (or go on fitting `start`) the perception network; returns its checkpoint part."""
    torch = require("torch", "all", "the twin's vision policy")
    torch.manual_seed(seed)
    net = perception_network()
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
        "perception ",
        5,
        max_lr,
    )
    net.eval()
    with torch.no_grad():  # how far off it is, in the units that matter (on the last tenth, seen in training)
        tail = slice(len(target) - max(1, len(target) // 10), len(target))
        error = (net(ext[tail], wrist[tail], state[tail]).numpy() - target[tail].numpy()) * std[task[tail]]
    rms = np.sqrt((error**2).mean(0))
    logger.info(
        f"  perception RMS error (on training frames): pick {1000 * np.linalg.norm(rms[0:3]):.0f} mm, target "
        f"{1000 * np.linalg.norm(rms[3:6]):.0f} mm, yaw code {np.linalg.norm(rms[6:8]):.2f}"
    )
    return {"state_dict": net.state_dict(), "mean": mean, "std": std}
