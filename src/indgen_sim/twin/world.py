"""The DROID FR3 twin behind the world interface.

Observation (world side): joint positions (7), gripper position (0 open .. 1 closed, as
DROID), camera images (224 x 224 by default; any size on request; only when cameras are on),
and the privileged poses of the objects (sim only). The images are rendered when first read,
not when the observation is made (`Frames`): a DROID policy looks at one tick in eight, and a
frame of the menagerie FR3 costs about 50 ms on a CPU. Action, with DROID's semantics at 15 Hz:
`joint_velocity` v (7 values, nominally in [-1, 1], scaled down when max |v| > 1) moves each
joint by v * 0.2 rad per tick (3 rad/s at 1.0); `gripper` g in [0, 1], 1 = closed.
"""

from __future__ import annotations

import collections.abc

import mujoco
import numpy as np

from indgen_core import rendering
from indgen_core.axes.units import to_si
from indgen_core.records import Outcome, TaskSetup
from indgen_core.specs.droid import DELTA_PER_TICK
from indgen_core.world import Evaluation, InvalidSetup, StepResult, World
from indgen_sim import physics
from indgen_sim.twin import assets, scene, tasks

SETTLE_TICKS = 8  # object settling after a reset (0.5 s)
HOLD_TICKS = 8  # "stable for a moment": placed and at rest for 0.5 s
PENETRATION_TOLERANCE = 0.002  # m; deeper contact after placement marks the setup invalid


class StaleFrame(RuntimeError):
    """A frame of a tick the simulation has already left was asked for."""


class Frames(collections.abc.Mapping):
    """Camera name -> RGB image of one tick, each rendered the first time it is read, from the
    state of that tick: the same pixels as rendering every camera at every tick, at the cost
    of only the frames someone looks at. Reading a frame after the world moved on is an
    error, never an image of another tick."""

    def __init__(self, world: DroidTwinWorld, names: list[str]):
        self._world, self._names, self._epoch = world, list(names), world.epoch
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, camera: str) -> np.ndarray:
        if camera not in self._done:
            if camera not in self._names:
                raise KeyError(camera)
            if self._world.epoch != self._epoch:
                raise StaleFrame(f"camera {camera} was read after the twin moved on from its tick")
            self._done[camera] = self._world.render(camera)
            self._world.frames_rendered += 1
        return self._done[camera]

    def __contains__(self, camera) -> bool:
        return camera in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class DroidTwinWorld(World):
    name = "droid_twin"
    spec = "droid"
    control_dt = 1.0 / scene.CONTROL_HZ

    def __init__(
        self, cameras: bool | list[str] = True, image_size: int | tuple[int, int] = 224, builtin: bool = False
    ):
        self.source = assets.robot_source(prefer_builtin=builtin)
        self.robot_model = self.source.kind
        self.cameras = list(scene.CAMERA_NAMES) if cameras is True else list(cameras or [])
        self.image_size = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
        self._models: dict[scene.Layout, mujoco.MjModel] = {}
        self._renderer: mujoco.Renderer | None = None
        self.m: mujoco.MjModel | None = None
        self.d: mujoco.MjData | None = None
        self.tick = 0
        self.lifted = False
        self.diverged = False
        self.epoch = 0  # bumped whenever the simulated state changes: frames of older ticks are stale
        self.frames_rendered = 0

    # -- building ---------------------------------------------------------------------------------
    def model(self, layout: scene.Layout) -> mujoco.MjModel:
        if layout not in self._models:
            self._models[layout] = scene.build(self.source, layout)
        return self._models[layout]

    def _bind(self, m: mujoco.MjModel) -> None:
        self.arm_qpos = np.array([m.joint(n).qposadr[0] for n in scene.ARM_JOINTS])
        self.arm_dof = np.array([m.joint(n).dofadr[0] for n in scene.ARM_JOINTS])
        self.arm_act = np.array([m.actuator(f"{n}_velocity").id for n in scene.ARM_JOINTS])
        self.grip_act = m.actuator("gripper/fingers_actuator").id
        if self.source.kind == "menagerie":
            self.grip_joint, self.grip_full = m.joint("gripper/right_driver_joint").qposadr[0], 0.8
        else:
            self.grip_joint, self.grip_full = m.joint("gripper/left_finger_joint").qposadr[0], 0.0425
        root = m.body("gripper/base_mount").id
        self.gripper_bodies = [b for b in range(m.nbody) if _is_under(m, b, root)]
        self.object_names = [n for n in ("orange_block", "blue_block", "spacer", "cup", "bowl") if _has_body(m, n)]
        self.object_bodies = [m.body(n).id for n in self.object_names]

    def _sim(self) -> tuple[mujoco.MjModel, mujoco.MjData]:
        """The scene's model and data: reset() or restore() (or the stand-in's build_scene()) sets them."""
        assert self.m is not None and self.d is not None, "no scene yet: reset() or restore() first"
        return self.m, self.d

    # -- episode ----------------------------------------------------------------------------------
    def max_steps(self, setup: TaskSetup) -> int:
        return setup.max_steps or 300  # 20 s at 15 Hz

    def _build(self, setup: TaskSetup) -> None:
        """The task, its layout and a fresh MjData on the (cached) model of that layout."""
        self.task = tasks.task_of(setup.axis, setup.options)
        raise_in = setup.value("blue_block_raise", 0.0)
        self.layout = scene.Layout(
            blue_raise=round(to_si(raise_in, "in"), 6), bowl_scale=round(setup.value("bowl_scale", 1.0), 6)
        )
        m = self.model(self.layout)
        if m is not self.m:
            self.m = m
            self._bind(m)
            self._close_renderer()
        self.d = mujoco.MjData(m)
        self.diverged = False
        self.epoch += 1

    def reset(self, setup: TaskSetup):
        self._build(setup)
        m, d = self._sim()
        d.qpos[self.arm_qpos] = scene.RESET_Q
        for name, (pos, quat) in tasks.layout_objects(
            self.task, np.random.default_rng(setup.seed), self.layout.blue_raise
        ).items():
            self.place(name, pos, quat)
        self.check_penetration()
        self.command = np.zeros(7)
        self.gripper_cmd = 0.0
        for _ in range(SETTLE_TICKS):
            self._advance()
        if not physics.at_rest(m, d, self.object_bodies, linear=0.02, angular=0.5):
            raise InvalidSetup("objects still moving after settling (launched or unstable setup)")
        if any(d.xpos[b][2] < -0.01 for b in self.object_bodies):
            raise InvalidSetup("an object fell off the table while settling")
        self.tick = 0
        self.lifted = False
        return self.observe()

    def place(self, name: str, pos, quat=(1.0, 0.0, 0.0, 0.0)) -> None:
        """Put a free object at a pose (reset, and tests that hand-place a configuration)."""
        m, d = self._sim()
        adr = m.joint(f"{name}_joint").qposadr[0]
        d.qpos[adr : adr + 3], d.qpos[adr + 3 : adr + 7] = pos, quat
        d.qvel[m.joint(f"{name}_joint").dofadr[0] :][:6] = 0.0
        mujoco.mj_forward(m, d)
        self.epoch += 1

    def pose_arm(self, q) -> None:
        """Put the arm at joint positions `q` without simulating the way there (the camera
        policy's training views: the demonstrations' arm poses over fresh layouts). Objects
        stay where they are; nothing is checked."""
        q = np.asarray(q, dtype=float)
        if q.shape != (7,) or not np.all(np.isfinite(q)):
            raise ValueError(f"pose_arm needs 7 finite joint positions, got {q!r}")
        m, d = self._sim()
        d.qpos[self.arm_qpos] = q
        d.qvel[self.arm_dof] = 0.0
        mujoco.mj_forward(m, d)
        self.epoch += 1

    def check_penetration(self, tolerance: float = PENETRATION_TOLERANCE) -> None:
        """InvalidSetup when objects overlap: MuJoCo would push them apart violently."""
        depth = physics.max_penetration(self.m, self.d, self.object_bodies)
        if depth > tolerance:
            raise InvalidSetup(f"objects interpenetrate by {depth * 1000:.1f} mm after placement")

    def _advance(self) -> None:
        """One control tick: the joints move by command * dt from where they were measured, a
        feed-forward velocity plus position feedback towards the tick's moving target."""
        m, d = self._sim()
        self.epoch += 1
        d.ctrl[self.grip_act] = 255.0 * self.gripper_cmd
        q0 = d.qpos[self.arm_qpos].copy()
        delta = self.command / scene.CONTROL_HZ
        for s in range(1, scene.SUBSTEPS + 1):
            target = q0 + delta * (s / scene.SUBSTEPS)
            d.ctrl[self.arm_act] = self.command + scene.ARM_KP * (target - d.qpos[self.arm_qpos])
            mujoco.mj_step(m, d)
        if not np.all(np.isfinite(d.qpos)):
            raise InvalidSetup("the simulation diverged (non-finite state)")

    def step(self, action) -> StepResult:
        v = np.asarray(action["joint_velocity"], dtype=float)
        if v.shape != (7,) or not np.all(np.isfinite(v)):
            raise ValueError(f"joint_velocity must be 7 finite values, got {v!r}")
        peak = np.abs(v).max()
        if peak > 1.0:
            v = v / peak  # DROID scales, it does not clip
        self.command = v * DELTA_PER_TICK * scene.CONTROL_HZ
        self.gripper_cmd = float(np.clip(action["gripper"], 0.0, 1.0))
        try:
            self._advance()
        except InvalidSetup:
            self.diverged = True
            return StepResult(self.observe(), done=True)
        self.tick += 1
        c = self._check()
        self.lifted |= c.progress >= 0.3
        return StepResult(self.observe(), done=c.placed)

    def _check(self) -> tasks.Check:
        return tasks.check(
            self.task,
            self.m,
            self.d,
            self.gripper_position() < 0.3,
            self.gripper_bodies,
            self.layout.blue_raise,
            self.layout.bowl_scale,
        )

    def evaluate(self) -> Evaluation:
        if self.diverged:
            self.diverged = False
            return Evaluation(Outcome.INVALID, "the simulation diverged", 0.0)
        # positions, contacts of the state as it stands (mj_step leaves those of the substep
        # before): the same numbers live and after restore()
        mujoco.mj_forward(self.m, self.d)
        first = self._check()
        details = {"task": self.task, "blue_raise_m": self.layout.blue_raise, "bowl_scale": self.layout.bowl_scale}
        if not first.placed:
            return Evaluation(Outcome.FAILURE, first.detail, max(first.progress, 0.3 if self.lifted else 0.0), details)
        # settle-then-check: the arm holds still, the gripper as the policy left it
        self.command = np.zeros(7)
        m, _ = self._sim()
        bodies = [m.body(tasks.OBJECTS[self.task].pick).id, m.body(tasks.OBJECTS[self.task].place).id]
        stable = physics.settle_then_check(
            self._advance,
            lambda: self._check().placed and physics.at_rest(self.m, self.d, bodies, linear=0.02, angular=0.3),
            settle_ticks=2,
            hold_ticks=HOLD_TICKS,
        )
        if stable:
            return Evaluation(Outcome.SUCCESS, first.detail + " and stable", 1.0, details)
        return Evaluation(Outcome.FAILURE, f"placed but not stable: {self._check().detail}", 0.6, details)

    # -- a recorded end, judged again (indgen bag rescore) ---------------------------------------
    def final_state(self) -> dict:
        """The MuJoCo integration state (what the settle-then-check steps from) and the loop's
        own variables: evaluate() after restore() of this is evaluate() now."""
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        state = np.empty(mujoco.mj_stateSize(self.m, spec))
        mujoco.mj_getState(self.m, self.d, state, spec)
        return {
            "robot": self.source.kind,
            "mj_state": state.tolist(),
            "command": self.command.tolist(),
            "gripper_cmd": self.gripper_cmd,
            "tick": self.tick,
            "lifted": self.lifted,
            "diverged": bool(self.diverged),
        }

    def restore(self, setup: TaskSetup, state: dict) -> None:
        self._build(setup)
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        values = np.asarray(state["mj_state"], dtype=float)
        if values.shape != (mujoco.mj_stateSize(self.m, spec),):
            raise ValueError(
                f"the recorded state was taken with the {state.get('robot')} FR3 model; this "
                f"machine builds the {self.source.kind} one"
            )
        mujoco.mj_setState(self.m, self.d, values, spec)
        mujoco.mj_forward(self.m, self.d)
        self.epoch += 1
        self.command = np.asarray(state["command"], dtype=float)
        self.gripper_cmd = float(state["gripper_cmd"])
        self.tick, self.lifted, self.diverged = int(state["tick"]), bool(state["lifted"]), bool(state["diverged"])

    # -- observation ------------------------------------------------------------------------------
    def gripper_position(self) -> float:
        _, d = self._sim()
        return float(np.clip(d.qpos[self.grip_joint] / self.grip_full, 0.0, 1.0))

    def joint_positions(self) -> np.ndarray:
        _, d = self._sim()
        return d.qpos[self.arm_qpos].copy()

    def object_poses(self) -> dict[str, np.ndarray]:
        _, d = self._sim()
        return {
            n: np.concatenate([d.xpos[b], d.xquat[b]])
            for n, b in zip(self.object_names, self.object_bodies, strict=True)
        }

    def observe(self) -> dict:
        _, d = self._sim()
        obs = {
            "joint_position": self.joint_positions(),
            "joint_velocity": d.qvel[self.arm_dof].copy(),
            "gripper_position": self.gripper_position(),
            "objects": self.object_poses(),
            "task": self.task,
            "tick": self.tick,
        }
        if self.cameras:
            obs["images"] = Frames(self, self.cameras)
        return obs

    def render(self, camera: str, size: tuple[int, int] | None = None) -> np.ndarray:
        height, width = size or self.image_size
        if self._renderer is None or (self._renderer.height, self._renderer.width) != (height, width):
            self._close_renderer()
            rendering.use_headless_gl()
            self._renderer = mujoco.Renderer(self.m, height, width)
        self._renderer.update_scene(self.d, camera=camera)
        return self._renderer.render()

    def preview(self):
        return self.render("level_view", (360, 480))

    def describe(self):
        return super().describe() | {
            "robot": self.source.detail,
            "cameras": self.cameras,
            "image_size": list(self.image_size),
        }

    def _close_renderer(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def close(self) -> None:
        self._close_renderer()


def _is_under(m: mujoco.MjModel, body: int, root: int) -> bool:
    while body > 0:
        if body == root:
            return True
        body = m.body_parentid[body]
    return False


def _has_body(m: mujoco.MjModel, name: str) -> bool:
    return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name) >= 0
