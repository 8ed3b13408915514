"""RoboCasa's pick-and-place tasks as an IndGen world, run by a worker in RoboCasa's own
environment (see the package's docstring for why).

World options (a campaign's `world_options`): `task`, PickPlaceCounterToCabinet (default) or
PickPlaceCabinetToCounter; `assets`, "reduced" (default: the kitchen IndGen builds from what
installs, worker/kitchen.py) or "full" (RoboCasa's downloaded layouts and objects, under
$ROBOCASA_ASSETS_PATH or the robocasa package). The axis parameters `pick_offset_x`,
`cabinet_clutter` and `base_offset_y` (cm) are applied by the worker through RoboCasa's own
placement (of objects and of the robot's base); the episode is
judged by the task's own `_check_success` (the object inside the cabinet, or touching the
counter, and the gripper over 0.25 m from it).

A worker that dies or answers garbage ends the episode as aborted (the system's fault, run
again), never as a policy failure; a scene RoboCasa cannot place for a level and seed is an
invalid setup. An episode's end is recorded as robosuite's simulation state (`final_state`),
so `indgen bag rescore` judges it again in the scene the same setup builds."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from indgen_core import paths
from indgen_core.axes.units import to_si
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TaskSetup
from indgen_core.world import Evaluation, InvalidSetup, StepResult, World
from indgen_sim.robocasa.worker import frames

TASKS = ("PickPlaceCounterToCabinet", "PickPlaceCabinetToCounter")
SUPPORTED = ("pick_offset_x", "cabinet_clutter", "base_offset_y")
#: axis parameters with an axis file but no world behind them, and why
NOT_BUILT = {
    "fixture_offset_x": (
        "the paper moves appliances (stand mixer, kettle, blender) that only RoboCasa's asset download has, "
        "and in the reduced kitchen the cabinet is what RoboCasa places the robot and the object from, "
        "so moving it would move the whole task with it"
    ),
}
#: RoboCasa's gym wrapper's cameras (PandaOmronKeyConverter), and the names IndGen's spec uses
CAMERAS = {"left": "robot0_agentview_left", "right": "robot0_agentview_right", "wrist": "robot0_eye_in_hand"}
WORKER = Path(__file__).with_name("worker")
#: the furthest the horizon axis moves the base back: its 4 levels (50 cm) and room to spare
#: in IndGen's kitchen, whose floor runs 3 m out from the wall
MAX_BASE_OFFSET_CM = 100.0
#: RoboCasa365 v1.0.1's horizon for both tasks is 750 steps (utils/dataset_registry.py) at 20 Hz
MAX_STEPS = 750


class WorkerGone(IndGenError):
    """The worker died or answered something that is not a frame."""


def env_root() -> Path:
    override = os.environ.get("INDGEN_ROBOCASA_ENV")
    return Path(override) if override else paths.share_dir() / ".venv-robocasa"


def interpreter() -> Path:
    python = env_root() / "bin" / "python"
    if not python.exists():
        raise IndGenError(
            f"RoboCasa's environment is not set up at {env_root()}: run `make robocasa` "
            "(scripts/setup-robocasa.sh), or point INDGEN_ROBOCASA_ENV at one"
        )
    return python


def reduced_assets_dir() -> Path:
    return paths.data_dir() / "robocasa-reduced-assets"


class WorkerProcess:
    """The worker and its pipe: one request, one reply. Its stderr is kept (the last lines go
    into the error when it dies)."""

    def __init__(self, reply_timeout: float = 300.0) -> None:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "AMENT", "LD_LIBRARY"))
        }
        gl = os.environ.get("INDGEN_ROBOCASA_GL", "osmesa")  # EGL through robosuite fails in that environment
        env.update(MUJOCO_GL=gl, PYOPENGL_PLATFORM=gl, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [str(interpreter()), str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.stderr: deque[str] = deque(maxlen=20)
        self.broken = False
        self.reply_timeout = reply_timeout
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    def ask(self, op: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            frames.write_frame(self.proc.stdin, {"op": op, "args": args})  # type: ignore[arg-type]
            # a worker stuck in RoboCasa (a simulation that never returns) must not hang the
            # world: no first byte of an answer within reply_timeout is a dead worker
            ready, _, _ = select.select([self.proc.stdout], [], [], self.reply_timeout)
            if not ready:
                raise frames.FrameError(f"no answer to {op} within {self.reply_timeout:g} s")
            reply = frames.read_frame(self.proc.stdout)  # type: ignore[arg-type]
        except (frames.FrameError, BrokenPipeError, OSError) as exc:
            self.broken = True  # whatever it still does, nothing more is asked of it
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            last = next((line for line in reversed(self.stderr) if line.strip()), "no output")
            raise WorkerGone(
                f"the RoboCasa worker stopped answering ({exc}; exit {self.proc.returncode}): {last}"
            ) from None
        if "error" in reply:
            raise WorkerGone(f"the RoboCasa worker refused {op}: {reply['error']}")
        return reply

    def close(self) -> None:
        if not self.broken and self.proc.poll() is None:
            with contextlib.suppress(WorkerGone):
                self.ask("close")
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RobocasaWorld(World):
    name = "robocasa"
    spec = "robocasa"
    control_dt = 1.0 / 20.0
    settle_steps: ClassVar[int] = 10

    def __init__(self, cameras: bool | list[str] = False, image_size: int = 256):
        # no cameras unless asked for (world_options cameras: [left, wrist, right] for a pi0 /
        # pi0.5 RoboCasa policy): three 256 x 256 views rendered in software make a step about
        # ten times slower, and the oracle reads none
        self.cameras = list(CAMERAS) if cameras is True else list(cameras or [])
        unknown = [c for c in self.cameras if c not in CAMERAS]
        if unknown:
            raise InvalidSetup(f"RoboCasa's cameras are {list(CAMERAS)}, not {unknown}")
        self.image_size = int(image_size)
        self.worker: WorkerProcess | None = None
        self.opened: tuple[str, str] | None = None
        self.info: dict[str, Any] = {}
        self.language = ""
        self.scene_objects: list[str] = []

    def _open(self, task: str, assets: str) -> WorkerProcess:
        alive = self.worker is not None and not self.worker.broken and self.worker.proc.poll() is None
        if alive and self.opened == (task, assets):
            assert self.worker is not None
            return self.worker
        self.close()
        self.worker = WorkerProcess()
        assets_dir = str(reduced_assets_dir()) if assets == "reduced" else os.environ.get("ROBOCASA_ASSETS_PATH", "")
        self.info = self.worker.ask(
            "open",
            task=task,
            assets=assets,
            assets_dir=assets_dir,
            cameras=[CAMERAS[c] for c in self.cameras],
            image_size=self.image_size,
        )
        self.opened = (task, assets)
        return self.worker

    def max_steps(self, setup: TaskSetup) -> int:
        return setup.max_steps or MAX_STEPS

    def reset(self, setup: TaskSetup):
        task = str(setup.options.get("task", TASKS[0]))
        if task not in TASKS:
            raise InvalidSetup(f"the RoboCasa world runs {', '.join(TASKS)}, not {task!r}")
        assets = str(setup.options.get("assets", "reduced"))
        if assets not in ("reduced", "full"):
            raise InvalidSetup(f"world option 'assets' is 'reduced' or 'full', not {assets!r}")
        unsupported = [p.name for p in setup.parameters if p.name not in SUPPORTED]
        for name in unsupported:
            if name in NOT_BUILT:
                raise InvalidSetup(f"the RoboCasa world does not implement {name}: {NOT_BUILT[name]}")
        if unsupported:
            raise InvalidSetup(
                f"the RoboCasa world does not implement {', '.join(unsupported)} yet (it moves {', '.join(SUPPORTED)})"
            )
        fraction = setup.value("pick_offset_x", 0.0)
        if not 0.0 <= fraction <= 1.0:
            raise InvalidSetup(f"pick_offset_x is a fraction of the sampling region, 0..1, not {fraction}")
        back_cm = setup.value("base_offset_y", 0.0)
        if not 0.0 <= back_cm <= MAX_BASE_OFFSET_CM:
            raise InvalidSetup(
                f"base_offset_y moves the robot back from the fixture, 0..{MAX_BASE_OFFSET_CM:g} cm, not {back_cm:g}"
            )
        params = {
            "pick_offset_x": fraction,
            "cabinet_clutter": round(setup.value("cabinet_clutter", 0.0)),
            "base_offset_m": to_si(back_cm, "cm"),
        }
        worker = self._open(task, assets)
        reply = worker.ask("reset", seed=int(setup.seed) % 2**32, params=params)
        if "invalid" in reply:
            raise InvalidSetup(str(reply["invalid"]))
        self.language = str(reply.get("language", ""))
        self.scene_objects = [str(name) for name in reply.get("scene_objects", [])]
        observation = reply["observation"]
        for _ in range(self.settle_steps):  # as RoboCasa's clients wait before the first request
            observation = worker.ask("step", action=_IDLE.tolist())["observation"]
        return self._observe(observation)

    def step(self, action) -> StepResult:
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (12,) or not np.all(np.isfinite(a)):
            raise ValueError(f"RoboCasa PandaOmron actions are 12 finite values, got {a!r}")
        assert self.worker is not None, "step() after reset()"
        reply = self.worker.ask("step", action=a.tolist())
        # decided once RoboCasa's own check holds (the object placed, the gripper away)
        return StepResult(self._observe(reply["observation"]), done=bool(reply.get("success")))

    def _observe(self, observation: dict[str, Any]) -> dict[str, Any]:
        names = {v: k for k, v in CAMERAS.items()}
        return {
            "images": {names[k]: v for k, v in (observation.get("images") or {}).items()},
            "state": observation["state"],
            "objects": observation["objects"],
            "pick": observation["pick"],
            "place": observation["place"],
            "grasp": observation["grasp"],
            "language": self.language,
        }

    def evaluate(self) -> Evaluation:
        assert self.worker is not None, "evaluate() after reset()"
        reply = self.worker.ask("evaluate")
        details = dict(reply.get("details", {}))
        if reply.get("success"):
            return Evaluation(Outcome.SUCCESS, "RoboCasa's check: placed, and the gripper away from it", 1.0, details)
        where = "inside the cabinet" if "inside_cabinet" in details else "on the counter"
        reason = (
            f"the object is not {where}"
            if not details.get("inside_cabinet", details.get("on_counter"))
            else "the gripper is still within 0.25 m of the object"
        )
        return Evaluation(Outcome.FAILURE, reason, 0.5 if "gripper" in reason else 0.0, details)

    # -- a recorded end, judged again (indgen bag rescore) ---------------------------------------
    def final_state(self) -> dict[str, Any]:
        """robosuite's flattened simulation state (time, qpos, qvel): restore() builds the
        setup's scene again (the same seed and level give RoboCasa's same kitchen, objects
        and target) and sets it, so that RoboCasa's check judges what it judged live."""
        assert self.worker is not None, "final_state() after reset()"
        return {"sim_state": np.asarray(self.worker.ask("state")["state"], dtype=np.float64).tolist()}

    def restore(self, setup: TaskSetup, state: dict[str, Any]) -> None:
        self.reset(setup)
        assert self.worker is not None, "reset() opens a worker"
        try:
            self.worker.ask("restore", state=np.asarray(state["sim_state"], dtype=np.float64))
        except WorkerGone as exc:
            if self.worker.broken:
                raise
            raise ValueError(str(exc)) from None  # it answered: the state does not fit the scene

    def preview(self):
        if self.worker is None:
            return None
        return self.worker.ask("render", camera="scene", size=256)["image"]

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "cameras": self.cameras,
            "image_size": self.image_size,
            "robocasa": self.info.get("versions", {}),
            "robosuite_patches": self.info.get("patches", []),
        }

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
            self.opened = None


#: no motion, gripper open, arm mode (RoboCasa's idle action in its openpi client)
_IDLE = np.array([0.0] * 6 + [0.0] + [0.0] * 4 + [0.0])
