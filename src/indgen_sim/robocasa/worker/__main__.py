"""The RoboCasa worker: one RoboCasa task at a time, driven one frame at a time over stdin
and stdout by IndGen's RoboCasa world (indgen_sim/robocasa/world.py).

    python src/indgen_sim/robocasa/worker      (in RoboCasa's environment, .venv-robocasa)

Requests and replies (`frames.py`):
    open     task, assets ("reduced" | "full"), assets_dir, cameras, image_size
             -> versions, the compatibility patches applied, the action size
    reset    seed, params (the axis parameters of the level) -> observation, or "invalid"
    step     action (12, the policy's layout) -> observation
    evaluate -> success (RoboCasa's own `_check_success`) and what it looked at
    render   camera, size -> image (for level pictures)
    inventory assets_dir -> the object models RoboCasa's registry finds there
    state    -> the simulation's state (robosuite's flattened MjSimState: time, qpos, qvel)
    restore  state -> that state set in the scene reset built (for `indgen bag rescore`)
    close
A request that fails answers {"error": one sentence}; the worker keeps serving. stdout
carries frames only: anything RoboCasa prints goes to stderr."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np


def sibling(name: str) -> ModuleType:
    """A module of this folder: by its plain name when run as the worker (the folder is the
    script's path, see __init__.py), by its package name when IndGen's side imports it."""
    return importlib.import_module(f"{__package__}.{name}" if __package__ else name)


frames = sibling("frames")

#: the policy's action layout (RoboCasa's gym wrapper, convert_action / unmap_action):
#: end-effector position delta (3), rotation delta (3), gripper (>= 0.5 closes), base x, y,
#: yaw (3), torso (1), control mode (>= 0.5 moves the base)
ACTION_SIZE = 12


class Worker:
    def __init__(self) -> None:
        self.env = None
        self.task = ""
        self.cameras: list[str] = []
        self.target = np.zeros(3)

    # -- requests ------------------------------------------------------------------------------
    def open(self, task: str, assets: str, assets_dir: str, cameras: list[str], image_size: int) -> dict:
        kitchen = sibling("kitchen")
        if assets == "reduced":
            import robosuite

            wheel = Path(_wheel_assets())
            prepared = kitchen.prepare_reduced_assets(
                wheel, Path(robosuite.__file__).parent / "models" / "assets", Path(assets_dir)
            )
            os.environ["ROBOCASA_ASSETS_PATH"] = str(prepared)
        elif assets_dir:
            os.environ["ROBOCASA_ASSETS_PATH"] = assets_dir
        patches = sibling("rs_compat").apply()
        import mujoco
        import robocasa
        import robosuite
        from robosuite.controllers import load_composite_controller_config

        kwargs: dict = {}
        if assets == "reduced":
            kitchen.register_objects()
            kwargs.update(
                layout_and_style_ids=[(kitchen.LAYOUT, kitchen.STYLE)],
                obj_registries=(kitchen.REGISTRY,),
                renderer="mujoco",
            )
        self.cameras = list(cameras)
        env_class = kitchen.task_class(task)
        self.env = env_class(
            robots="PandaOmron",
            controller_configs=load_composite_controller_config(controller=None, robot="PandaOmron"),
            has_renderer=False,
            has_offscreen_renderer=True,
            use_camera_obs=bool(self.cameras),
            camera_names=self.cameras or ["robot0_agentview_left"],
            camera_widths=image_size,
            camera_heights=image_size,
            seed=0,
            **kwargs,
        )
        self.task = task
        return {
            "versions": {
                "robocasa": robocasa.__version__,
                "robosuite": robosuite.__version__,
                "mujoco": mujoco.__version__,
            },
            "patches": patches,
            "action_size": ACTION_SIZE,
            "assets_root": robocasa.models.assets_root,
        }

    def reset(self, seed: int, params: dict) -> dict:
        env = self._env()
        env.indgen_params = dict(params)
        env.indgen_shift = 0.0
        env.rng = np.random.default_rng(int(seed))
        np.random.seed(int(seed) % 2**32)
        try:
            obs = env.reset()
        except Exception as exc:  # RoboCasa could not place the scene for this level and seed
            return {"invalid": f"RoboCasa could not build the scene: {type(exc).__name__}: {exc}"}
        # where the object goes is fixed for the episode, from where the object starts
        position = np.asarray(env.sim.data.body_xpos[env.obj_body_id["obj"]], dtype=np.float64)
        self.target = self._target(position, np.asarray(env.objects["obj"].size, dtype=np.float64) / 2)
        return {
            "observation": self._observation(obs),
            "language": env.get_ep_meta().get("lang", ""),
            "scene_objects": sorted(env.objects),
        }

    def step(self, action) -> dict:
        env = self._env()
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (ACTION_SIZE,) or not np.all(np.isfinite(a)):
            return {"error": f"an action is {ACTION_SIZE} finite numbers, not {a.shape} with non-finite values"}
        raw = np.concatenate([a[0:6], [-1.0 if a[6] < 0.5 else 1.0], a[7:10], a[10:11], [-1.0 if a[11] < 0.5 else 1.0]])
        obs, _, _, _ = env.step(raw)
        return {"observation": self._observation(obs), "success": bool(env._check_success())}

    def evaluate(self) -> dict:
        from robocasa.utils import object_utils

        env = self._env()
        details = {
            "gripper_far": bool(object_utils.gripper_obj_far(env)),
            "clutter": int(env.indgen_params.get("cabinet_clutter", 0)),
            "object": [float(v) for v in env.sim.data.body_xpos[env.obj_body_id["obj"]]],
            "pick_shift_m": float(env.indgen_shift),
            "base_offset_m": float(env.indgen_params.get("base_offset_m", 0.0)),
            "base_anchor": [float(v) for v in env.init_robot_base_pos_anchor],
        }
        if self.task == "PickPlaceCounterToCabinet":
            details["inside_cabinet"] = bool(object_utils.obj_inside_of(env, "obj", env.cab))
        else:
            details["on_counter"] = bool(object_utils.check_obj_fixture_contact(env, "obj", env.counter))
        return {"success": bool(env._check_success()), "details": details}

    def state(self) -> dict:
        return {"state": np.asarray(self._env().sim.get_state().flatten(), dtype=np.float64)}

    def restore(self, state) -> dict:
        """A recorded end put back into the scene `reset` built from the same setup (RoboCasa
        builds the same kitchen and objects from the same seed and level): what
        `_check_success` reads are positions and contacts, both set by the forward pass."""
        env = self._env()
        values = np.asarray(state, dtype=np.float64).reshape(-1)
        size = env.sim.get_state().flatten().size
        if values.size != size:
            return {"error": f"the recorded state has {values.size} values, this scene {size}"}
        env.sim.set_state_from_flattened(values)
        env.sim.forward()
        return {"restored": True}

    def inventory(self, assets_dir: str) -> dict:
        """The object models RoboCasa's own registry finds under `assets_dir` (RoboCasa scans
        objects/<registry>/<category>/<model>/model.xml when it is imported), by registry."""
        os.environ["ROBOCASA_ASSETS_PATH"] = assets_dir
        sibling("rs_compat").apply()
        from robocasa.models.objects.kitchen_objects import OBJ_CATEGORIES

        found: dict[str, dict[str, list[str]]] = {}
        for category, registries in OBJ_CATEGORIES.items():
            for registry, entry in registries.items():
                paths = [str(p) for p in getattr(entry, "mjcf_paths", []) or []]
                if paths:
                    found.setdefault(registry, {})[category] = paths
        return {"objects": found}

    def render(self, camera: str, size: int) -> dict:
        """One image: a robot camera by name, or "scene", a view fixed in the kitchen (behind
        and above where the robot stands, on the counter and the cabinet) that stays put
        while the robot's spawn varies, so that level pictures show only what the axis moved."""
        env = self._env()
        name = sibling("kitchen").SCENE_CAMERA if camera == "scene" else camera
        image = env.sim.render(camera_name=name, width=size, height=size)
        return {"image": np.ascontiguousarray(image[::-1])}

    # -- observation ---------------------------------------------------------------------------
    def _observation(self, obs: dict) -> dict:
        env = self._env()
        position = np.asarray(env.sim.data.body_xpos[env.obj_body_id["obj"]], dtype=np.float64)
        quat_wxyz = np.asarray(env.sim.data.body_xquat[env.obj_body_id["obj"]], dtype=np.float64)
        half = np.asarray(env.objects["obj"].size, dtype=np.float64) / 2
        return {
            "images": {c: np.ascontiguousarray(obs[f"{c}_image"][::-1]) for c in self.cameras if f"{c}_image" in obs},
            "state": {
                "eef_pos_base": np.asarray(obs["robot0_base_to_eef_pos"], dtype=np.float64),
                "eef_quat_base": np.asarray(obs["robot0_base_to_eef_quat"], dtype=np.float64),
                "base_pos": np.asarray(obs["robot0_base_pos"], dtype=np.float64),
                "base_quat": np.asarray(obs["robot0_base_quat"], dtype=np.float64),
                "gripper_qpos": np.asarray(obs["robot0_gripper_qpos"], dtype=np.float64)[:2],
            },
            # privileged (simulation only): the object, where it goes, and its grasp
            # (x, y, top z, yaw of the footprint's short axis)
            "objects": {
                "obj": np.concatenate([position, quat_wxyz]),
                "target": np.concatenate([self.target, [1.0, 0, 0, 0]]),
            },
            "pick": "obj",
            "place": "target",
            "grasp": np.array([position[0], position[1], position[2] + half[2], _closing_yaw(quat_wxyz, half)]),
        }

    def _target(self, position, half) -> np.ndarray:
        """Where the object goes: for CounterToCabinet the floor of the cabinet's lowest
        compartment, 12 cm behind its front, at the object's x kept within 15 cm of the
        compartment's middle (the open doors swing out at both ends); for
        CabinetToCounter the counter in front of the cabinet, at the object's x."""
        env = self._env()
        if self.task == "PickPlaceCounterToCabinet":
            compartments = [[np.asarray(p, dtype=float) for p in sites] for sites in _compartments(env.cab)]
            p0, px, py, _ = min(compartments, key=lambda c: c[0][2])
            x_low, x_high = sorted((p0[0], px[0]))
            front = min(p0[1], py[1])
            centre = (x_low + x_high) / 2  # the open doors swing out at both ends
            return np.array(
                [float(np.clip(position[0], centre - 0.15, centre + 0.15)), front + 0.12, p0[2] + half[2] + 0.01]
            )
        counter = env.counter
        top = float(counter.pos[2] + counter.size[2] / 2)
        front = float(counter.pos[1] - counter.size[1] / 2)
        return np.array([position[0], front + 0.15, top + half[2] + 0.01])

    def _env(self):
        if self.env is None:
            raise RuntimeError("no task is open (send open first)")
        return self.env


def _closing_yaw(quat_wxyz, half) -> float:
    """The yaw (world) along which the fingers should close: the object's shorter horizontal
    side, turned as the object stands."""
    w, x, y, z = (float(v) for v in quat_wxyz)
    yaw = float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))
    return yaw if half[0] <= half[1] else yaw + np.pi / 2


def _compartments(cabinet) -> list[list]:
    """The cabinet's interior boxes, each as its four corner sites (origin, +x, +y, +z)."""
    sites = list(cabinet.get_int_sites(relative=False).values())
    return [list(box) for box in sites]


def _wheel_assets() -> str:
    import importlib.util

    spec = importlib.util.find_spec("robocasa")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("robocasa is not installed in this environment (make robocasa)")
    return str(Path(next(iter(spec.submodule_search_locations))) / "models" / "assets")


def serve(stdin, stdout) -> None:
    worker = Worker()
    while True:
        try:
            request = frames.read_frame(stdin)
        except frames.FrameError:
            return  # IndGen's side went away
        op = request.get("op")
        try:
            if op == "close":
                frames.write_frame(stdout, {"closed": True})
                return
            handler: Any = {
                "open": worker.open,
                "reset": worker.reset,
                "step": worker.step,
                "evaluate": worker.evaluate,
                "render": worker.render,
                "inventory": worker.inventory,
                "state": worker.state,
                "restore": worker.restore,
            }.get(str(op))
            reply = {"error": f"unknown request {op!r}"} if handler is None else handler(**request.get("args", {}))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            reply = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        frames.write_frame(stdout, reply)


def main() -> None:
    # frames go to the real stdout; everything else printed (RoboCasa and robosuite print) to stderr
    frames_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, frames_out)


if __name__ == "__main__":
    main()
