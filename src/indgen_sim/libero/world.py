"""LIBERO-Object's 10 pick-and-place tasks as an IndGen world, moved along the paper's axes.

A task is chosen by the campaign's world option `task` (0..9). Each episode starts from one of
the task's 50 stock initial states (trial index modulo 50), then the axis is applied:
`pick_offset_y` (cm) moves the pick object along y, `goal_offset_y` (cm) moves the basket,
`object_scale` rebuilds the scene with the pick object scaled (scaling.py), `distractor_count`
builds the task with extra objects (distractors.py).
The scene then settles for 20 no-op steps (more than openpi's 10). A perturbation that makes
objects interpenetrate by more than 2 mm right after the move, or that leaves objects moving,
fallen or launched after settling, is an invalid setup, never a policy failure.

Success is judged twice: LIBERO's own check (the object's body inside the basket's region,
which an object still held above the basket passes) and IndGen's stricter one (that, and the
object touches the basket, not the gripper, and stays at rest for a moment after the arm
stops). The outcome follows the strict check; both go into the result's details.
"""

from __future__ import annotations

import math
from typing import Any

import mujoco
import numpy as np

from indgen_core.axes.units import to_si
from indgen_core.records import Outcome, TaskSetup
from indgen_core.specs.libero import MAX_STEPS, NOOP, quat_xyzw_to_axis_angle
from indgen_core.world import Evaluation, InvalidSetup, StepResult, World
from indgen_sim import physics
from indgen_sim.libero import distractors, suite

SETTLE = 20
SUPPORTED = ("pick_offset_y", "goal_offset_y", "distractor_count", "object_scale")
PENETRATION_TOLERANCE = 0.002
OPEN_GAP = 0.07  # m between the Panda's fingers: wide open (0.08 at most)
CAMERAS = {"agentview": "agentview", "wrist": "robot0_eye_in_hand"}


class LiberoWorld(World):
    name = "libero"
    spec = "libero"
    control_dt = 1.0 / 20.0

    def __init__(self, cameras: bool | list[str] = True, image_size: int = 256):
        self.cameras = list(CAMERAS) if cameras is True else list(cameras or [])
        unknown = [c for c in self.cameras if c not in CAMERAS]
        if unknown:
            raise InvalidSetup(f"LIBERO cameras are {list(CAMERAS)}, not {unknown}")
        self.image_size = int(image_size)
        self.env: Any = None  # LIBERO's OffScreenRenderEnv (robosuite, untyped), built by _make()
        self.task: tuple[int, int] | None = None
        self.stock_layouts: dict[int, dict[str, tuple[int, int, int, int]]] = {}

    # -- environment ------------------------------------------------------------------------------
    def _make(self, task: int, distractor_count: int = 0):
        if self.env is not None and self.task == (task, distractor_count):
            return self.env
        self.close()
        suite.libero()
        if distractor_count and task not in self.stock_layouts:  # where the stock state's values go
            original = self._build(suite.bddl_path(task), cameras=False)
            self.stock_layouts[task] = _joint_layout(original.sim.model._model)
            original.close()
        try:
            bddl = distractors.with_distractors(suite.bddl_path(task), distractor_count)
        except ValueError as exc:
            raise InvalidSetup(f"task {task}: {exc}") from None
        self.env = self._build(bddl, bool(self.cameras))
        if not distractor_count:
            self.stock_layouts[task] = _joint_layout(self.env.sim.model._model)
        self.task = (task, distractor_count)
        self.init_states = suite.init_states(task)
        self.pick, self.place = self.env.obj_of_interest
        self.language = self.env.language_instruction
        return self.env

    def _build(self, bddl: str, cameras: bool):
        from libero.libero.envs import OffScreenRenderEnv

        return OffScreenRenderEnv(
            bddl_file_name=bddl,
            use_camera_obs=cameras,
            has_offscreen_renderer=True,
            camera_names=[CAMERAS[c] for c in self.cameras] or ["agentview"],
            camera_heights=self.image_size,
            camera_widths=self.image_size,
        )

    def _bind(self) -> None:
        """The simulator's model and data: robosuite builds them anew on every hard reset."""
        sim = self.env.sim
        self.m, self.d = sim.model._model, sim.data._data
        self.bodies = {n: self.m.body(f"{n}_main").id for n in self._object_names()}
        self.gripper_bodies = [b for b in range(self.m.nbody) if self.m.body(b).name.startswith("gripper0_")]

    def _scale_pick(self, s: float) -> None:
        """Rebuild the scene with the pick object scaled by `s`, everything else where it was,
        the object's lowest point where it was (it stands on the floor as before)."""
        from indgen_sim.libero.scaling import scaled_xml

        if s <= 0:
            raise InvalidSetup(f"object scale must be positive, got {s}")
        state = self.env.sim.get_state().flatten()
        bottom = self._lowest_point(self.pick)
        self.env.reset_from_xml_string(scaled_xml(self.env.sim.model.get_xml(), f"{self.pick}_main", s))
        self.env.set_state(state)
        self.env.sim.forward()
        self._bind()
        self._move(self.pick, dz=bottom - self._lowest_point(self.pick) + 0.001)
        self.env._post_process()
        self.env._update_observables(force=True)

    def _lowest_point(self, name: str) -> float:
        b = self.bodies[name]
        low = float("inf")
        for g in range(self.m.ngeom):
            if self.m.geom_bodyid[g] != b or self.m.geom_contype[g] == 0:
                continue
            rot = self.d.geom_xmat[g].reshape(3, 3)
            half = self.m.geom_size[g] if self.m.geom_type[g] == 6 else np.full(3, self.m.geom_rbound[g])
            low = min(low, float(self.d.geom_xpos[g][2] - np.abs(rot[2]) @ half))
        return low if low < float("inf") else float(self.d.xpos[b][2])

    def stock_layouts_objects(self, task: int) -> set[str]:
        return {j[: -len("_joint0")] for j in self.stock_layouts.get(task, {}) if j.endswith("_joint0")}

    def _object_names(self) -> list[str]:
        import mujoco

        names = []
        for j in range(self.m.njnt):
            name = self.m.joint(j).name
            if name.endswith("_joint0") and self.m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                names.append(name[: -len("_joint0")])
        return names

    def _move(self, name: str, dx: float = 0.0, dy: float = 0.0, dz: float = 0.0) -> None:
        sim = self.env.sim
        adr = self.m.joint(f"{name}_joint0").qposadr[0]
        dof = self.m.joint(f"{name}_joint0").dofadr[0]
        self.d.qpos[adr] += dx
        self.d.qpos[adr + 1] += dy
        self.d.qpos[adr + 2] += dz
        self.d.qvel[dof : dof + 6] = 0.0
        sim.forward()

    # -- episode ----------------------------------------------------------------------------------
    def max_steps(self, setup: TaskSetup) -> int:
        return setup.max_steps or MAX_STEPS

    def reset(self, setup: TaskSetup):
        try:
            task = int(setup.options.get("task", 0))
        except (TypeError, ValueError):
            raise InvalidSetup(f"world option 'task' must be an integer 0..{suite.TASKS - 1}") from None
        if not 0 <= task < suite.TASKS:
            raise InvalidSetup(f"LIBERO-Object has tasks 0..{suite.TASKS - 1}, not {task}")
        unsupported = [p.name for p in setup.parameters if p.name not in SUPPORTED]
        if unsupported:
            raise InvalidSetup(
                f"the LIBERO world does not implement {', '.join(unsupported)} yet (it moves {', '.join(SUPPORTED)})"
            )
        count = round(setup.value("distractor_count", 0.0))
        env = self._make(task, count)
        env.seed(int(setup.seed) % 2**31)
        env.reset()
        state = self.init_states[setup.trial_index % len(self.init_states)]
        if count:  # the stock state has no distractors: copy it joint by joint
            self._bind()
            _apply_stock_state(self.m, self.d, self.stock_layouts[task], state)
            env.env.sim.forward()
            env._post_process()
            env._update_observables(force=True)
        else:
            env.set_init_state(state)
        self._bind()
        scale = setup.value("object_scale", 1.0)
        if abs(scale - 1.0) > 1e-9:
            self._scale_pick(scale)
        if count:
            extra = [b for n, b in self.bodies.items() if n not in self.stock_layouts_objects(task)]
            task_bodies = [self.bodies[self.pick], self.bodies[self.place]]
            if any(physics.in_contact(self.m, self.d, [b], task_bodies) for b in extra):
                raise InvalidSetup("a distractor touches the task's objects")
        for _ in range(5):  # the stock states leave objects a little inside the floor: let them pop out
            env.step(NOOP)
        before = {n: self.d.xpos[b].copy() for n, b in self.bodies.items()}
        dy_pick = to_si(setup.value("pick_offset_y", 0.0), "cm")
        dy_goal = to_si(setup.value("goal_offset_y", 0.0), "cm")
        moved = [self.bodies[n] for n, dy in ((self.pick, dy_pick), (self.place, dy_goal)) if dy]
        # the stock scene already rests its objects slightly in the floor: only the move's own
        # interpenetration counts
        resting = physics.max_penetration(self.m, self.d, moved) if moved else 0.0
        if dy_pick:
            self._move(self.pick, dy=dy_pick)
        if dy_goal:
            self._move(self.place, dy=dy_goal)
        if moved:
            depth = physics.max_penetration(self.m, self.d, moved)
            if depth > resting + PENETRATION_TOLERANCE:
                raise InvalidSetup(f"the moved object interpenetrates a neighbour by {depth * 1000:.1f} mm")
        obs: dict | None = None
        for _ in range(SETTLE):
            obs, *_ = env.step(NOOP)
        if not physics.at_rest(self.m, self.d, list(self.bodies.values()), linear=0.02, angular=0.5):
            raise InvalidSetup("objects still moving after settling (launched or unstable setup)")
        for n, b in self.bodies.items():
            expected = before[n] + (
                np.array([0.0, dy_pick, 0.0])
                if n == self.pick
                else np.array([0.0, dy_goal, 0.0])
                if n == self.place
                else 0.0
            )
            if self.d.xpos[b][2] < -0.05 or np.linalg.norm(self.d.xpos[b] - expected) > 0.05:
                raise InvalidSetup(
                    f"{n} was knocked {np.linalg.norm(self.d.xpos[b] - expected) * 100:.0f} cm away while settling"
                )
        self.steps = 0
        assert obs is not None, "SETTLE > 0: the settling steps ran"
        return self.observe(obs)

    def step(self, action) -> StepResult:
        a = np.asarray(action, dtype=float).reshape(-1)
        if a.shape != (7,) or not np.all(np.isfinite(a)):
            raise ValueError(f"LIBERO actions are 7 finite values, got {a!r}")
        obs, *_ = self.env.step(a)
        self.steps += 1
        done = self._placed() and self._released()
        return StepResult(self.observe(obs), done=done)

    # -- success ----------------------------------------------------------------------------------
    def _libero_success(self) -> bool:
        return bool(self.env.check_success())

    def _released(self) -> bool:
        """Not held: the gripper does not touch the object, or touches it wide open (a tall
        object leaning on an open finger is not held)."""
        pick = [self.bodies[self.pick]]
        if not physics.in_contact(self.m, self.d, self.gripper_bodies, pick):
            return True
        fingers = [self.m.joint(n).qposadr[0] for n in ("gripper0_finger_joint1", "gripper0_finger_joint2")]
        return float(self.d.qpos[fingers[0]] - self.d.qpos[fingers[1]]) > OPEN_GAP

    def _placed(self) -> bool:
        return self._libero_success() and physics.in_contact(
            self.m, self.d, [self.bodies[self.pick]], [self.bodies[self.place]]
        )

    def strict_check(self) -> tuple[bool, str]:
        if not self._libero_success():
            return False, "object not in the basket"
        if not self._released():
            return False, "object still held by the gripper (LIBERO's check alone would count it)"
        if not self._placed():
            return False, "object above the basket without resting in it"
        return True, "object resting in the basket"

    def evaluate(self) -> Evaluation:
        assert self.task is not None, "evaluate() after reset()"
        libero_ok = self._libero_success()
        details = {"task": self.task[0], "libero_success": libero_ok}
        ok, reason = self.strict_check()
        if ok:  # settle-then-check: the arm holds still with the gripper open
            bodies = [self.bodies[self.pick]]
            ok = physics.settle_then_check(
                lambda: self.env.step(NOOP),
                lambda: self.strict_check()[0] and physics.at_rest(self.m, self.d, bodies, linear=0.02, angular=0.5),
                settle_ticks=20,
                hold_ticks=10,
            )
            reason = "object resting in the basket and stable" if ok else "object did not stay in the basket"
        details["strict_success"] = ok
        if ok:
            return Evaluation(Outcome.SUCCESS, reason, 1.0, details)
        score = 0.6 if libero_ok else 0.3 if self.d.xpos[self.bodies[self.pick]][2] > 0.08 else 0.0
        return Evaluation(Outcome.FAILURE, reason, score, details)

    # -- a recorded end, judged again (indgen bag rescore) ---------------------------------------
    def final_state(self) -> dict:
        """The MuJoCo integration state under robosuite: the settle-then-check steps from it
        with the arm holding still, so restore() of it judges the same."""
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        state = np.empty(mujoco.mj_stateSize(self.m, spec))
        mujoco.mj_getState(self.m, self.d, state, spec)
        robots = [
            {
                "goal_pos": np.asarray(r.controller.goal_pos).tolist(),
                "goal_ori": np.asarray(r.controller.goal_ori).tolist(),
                "gripper": np.asarray(r.gripper.current_action).tolist(),
            }
            for r in self.env.env.robots
        ]
        # robosuite's own state beside MuJoCo's: the OSC goal orientation (kept while the
        # policy sends no rotation), the gripper's integrated command, the step counter
        return {
            "mj_state": state.tolist(),
            "steps": int(self.steps),
            "robots": robots,
            "timestep": int(self.env.env.timestep),
        }

    def restore(self, setup: TaskSetup, state: dict) -> None:
        self.reset(setup)  # the scene of the setup (task, distractors, scale), then its recorded end
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        values = np.asarray(state["mj_state"], dtype=float)
        if values.shape != (mujoco.mj_stateSize(self.m, spec),):
            raise ValueError("the recorded state does not fit this LIBERO scene")
        mujoco.mj_setState(self.m, self.d, values, spec)
        mujoco.mj_forward(self.m, self.d)
        for robot, saved in zip(self.env.env.robots, state["robots"], strict=True):
            robot.controller.goal_pos = np.asarray(saved["goal_pos"], dtype=float)
            robot.controller.goal_ori = np.asarray(saved["goal_ori"], dtype=float)
            robot.gripper.current_action = np.asarray(saved["gripper"], dtype=float)
        self.env.env.timestep = int(state["timestep"])
        self.env._update_observables(force=True)
        self.steps = int(state["steps"])

    # -- observation ------------------------------------------------------------------------------
    def observe(self, obs: dict) -> dict:
        out = {
            "state": np.concatenate(
                [obs["robot0_eef_pos"], quat_xyzw_to_axis_angle(obs["robot0_eef_quat"]), obs["robot0_gripper_qpos"]]
            ),
            "objects": {n: np.concatenate([self.d.xpos[b], self.d.xquat[b]]) for n, b in self.bodies.items()},
            "pick": self.pick,
            "place": self.place,
            "grasp": self.grasp_hint(),
            "language": self.language,
        }
        if self.cameras:
            out["images"] = {c: obs[f"{CAMERAS[c]}_image"] for c in self.cameras}
        return out

    def grasp_hint(self) -> np.ndarray:
        """Privileged geometry for the oracle: (x, y, z of the top, yaw of the footprint's short
        axis, half width along it) of the pick object, from its collision geoms."""
        b = self.bodies[self.pick]
        corners = []
        for g in range(self.m.ngeom):
            if self.m.geom_bodyid[g] != b or self.m.geom_contype[g] == 0:
                continue
            half = self.m.geom_size[g] if self.m.geom_type[g] == 6 else np.full(3, self.m.geom_rbound[g])
            rot = self.d.geom_xmat[g].reshape(3, 3)
            for sx in (-1, 1):
                for sy in (-1, 1):
                    for sz in (-1, 1):
                        corners.append(self.d.geom_xpos[g] + rot @ (half * [sx, sy, sz]))
        pts = np.array(corners) if corners else self.d.xpos[b][None]
        xy = pts[:, :2] - pts[:, :2].mean(0)
        _, evecs = np.linalg.eigh(xy.T @ xy + 1e-12 * np.eye(2))
        short = evecs[:, 0]
        half_width = float(np.abs(xy @ short).max())
        centre = pts.mean(0)
        return np.array([centre[0], centre[1], pts[:, 2].max(), math.atan2(short[1], short[0]), half_width])

    def preview(self):
        if self.env is None:
            return None
        img = self.env.sim.render(camera_name="agentview", height=256, width=256)
        return np.ascontiguousarray(img[::-1])

    def describe(self):
        return super().describe() | {"suite": suite.SUITE, "cameras": self.cameras, "image_size": self.image_size}

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
            self.task = None


def _joint_layout(m) -> dict[str, tuple[int, int, int, int]]:
    """joint name -> (qpos address, qpos size, dof address, dof size)."""
    sizes = {0: (7, 6), 1: (4, 3), 2: (1, 1), 3: (1, 1)}  # free, ball, slide, hinge
    return {
        m.joint(j).name: (
            int(m.jnt_qposadr[j]),
            sizes[int(m.jnt_type[j])][0],
            int(m.jnt_dofadr[j]),
            sizes[int(m.jnt_type[j])][1],
        )
        for j in range(m.njnt)
    }


def _apply_stock_state(m, d, layout: dict[str, tuple[int, int, int, int]], state: np.ndarray) -> None:
    """A stock initial state (time, qpos, qvel of the task's own model) onto a model with more
    objects, joint by joint."""
    nq = max(a + n for a, n, _, _ in layout.values())
    qpos, qvel = state[1 : 1 + nq], state[1 + nq :]
    target = _joint_layout(m)
    for name, (qa, qn, va, vn) in layout.items():
        ta, _, tv, _ = target[name]
        d.qpos[ta : ta + qn] = qpos[qa : qa + qn]
        d.qvel[tv : tv + vn] = qvel[va : va + vn] if len(qvel) >= va + vn else 0.0
