"""The twin's scene: table, FR3 + gripper, orange and blue blocks (on 0.25 in spacers for the
Stack axis), a cup and a black bowl (scaled for the Scale axis), DROID-style cameras.

The arm is driven like DROID drives the real one: each tick asks for a joint delta of
0.2 v rad on top of the measured position. MuJoCo `velocity` actuators with gravity
compensation on the robot's bodies get, at every physics step, the tick's feed-forward
velocity plus a position correction towards the tick's linearly moving target, so the arm
tracks the commanded motion and holds still at zero velocity (the menagerie's position
servos, re-based every tick, reached about half the commanded motion and sagged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from indgen_core.specs.droid import CONTROL_HZ
from indgen_sim.twin import builtin_fr3
from indgen_sim.twin.assets import RobotSource

SUBSTEPS = 34  # physics steps per control tick: 1/(15*34) s = 1.96 ms
ARM_JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]  # as franka_ros2 names them
#: DROID's reset pose
RESET_Q = np.array([0.0, -math.pi / 5, 0.0, -4 * math.pi / 5, 0.0, 3 * math.pi / 5, 0.0])
ARM_KV = [400.0, 400.0, 300.0, 300.0, 60.0, 60.0, 30.0]
#: position feedback (1/s) on top of the velocity feed-forward, towards the tick's moving target
ARM_KP = 40.0

BLOCK = 0.05  # edge of the orange and blue blocks (m)
SPACER_FOOT = 0.06  # footprint of the spacer stack under the blue block
CUP_R, CUP_H = 0.034, 0.09
BOWL_R, BOWL_H, BOWL_T = 0.085, 0.05, 0.008  # inner radius, wall height, wall thickness at scale 1
BOWL_SEGMENTS = 20
CAMERA_NAMES = ("exterior_1", "exterior_2", "wrist")

ORANGE = [1.0, 0.45, 0.05, 1]
BLUE = [0.1, 0.3, 0.9, 1]


@dataclass(frozen=True)
class Layout:
    """What the axis level changes in the scene (everything else is fixed)."""

    blue_raise: float = 0.0  # m of spacers under the blue block
    bowl_scale: float = 1.0


def _look_at(pos, target, up=(0, 0, 1)) -> list[float]:
    """Quaternion of a MuJoCo camera at `pos` looking at `target` (cameras look along -z)."""
    pos, target, up = map(np.asarray, (pos, target, up))
    z = pos - target
    z = z / np.linalg.norm(z)
    x = np.cross(up, z)
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    rot = np.stack([x, y, z], axis=1)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rot.flatten())
    return quat.tolist()


def _robot(source: RobotSource) -> mujoco.MjSpec:
    if source.kind == "menagerie":
        arm = mujoco.MjSpec.from_file(str(source.fr3_xml))
        grip = mujoco.MjSpec.from_file(str(source.gripper_xml))
        for act in list(arm.actuators):
            arm.delete(act)  # DROID drives joint velocities; see the module docstring
    else:
        arm, grip = builtin_fr3.fr3_spec(), builtin_fr3.gripper_spec()
    arm.option.impratio = 10  # the gripper's contact settings, for a firm grasp
    arm.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    arm.site("attachment_site").attach_body(grip.body("base_mount"), "gripper/", "")
    for name in ARM_JOINTS:
        i = ARM_JOINTS.index(name)
        act = arm.add_actuator(name=f"{name}_velocity", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        act.gainprm[0] = ARM_KV[i]
        act.biasprm[:3] = [0, 0, -ARM_KV[i]]
        act.ctrlrange = [-3.0, 3.0]
        act.ctrllimited = 1
    for body in arm.bodies:
        body.gravcomp = 1.0
    return arm


def _free_box(spec, name, size, rgba, mass, pos=(0, 0, 0)):
    body = spec.worldbody.add_body(name=name, pos=list(pos))
    body.add_freejoint(name=f"{name}_joint")
    body.add_geom(
        name=f"{name}_geom",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[s / 2 for s in size],
        rgba=rgba,
        mass=mass,
        friction=[1.2, 0.01, 0.001],
        condim=4,
    )
    return body


def build_spec(source: RobotSource, layout: Layout) -> mujoco.MjSpec:
    spec = _robot(source)
    spec.modelname = "droid_twin"
    spec.option.timestep = 1.0 / (CONTROL_HZ * SUBSTEPS)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST  # stiff velocity servos stay stable
    spec.visual.quality.shadowsize = 0  # shadows cost most of the render time
    spec.visual.global_.offwidth, spec.visual.global_.offheight = 1280, 720
    world = spec.worldbody
    world.add_light(pos=[0.4, 0.0, 1.6], dir=[0, 0, -1], diffuse=[0.8, 0.8, 0.8], castshadow=False)
    world.add_light(pos=[1.2, -0.8, 1.2], dir=[-0.6, 0.5, -0.6], diffuse=[0.4, 0.4, 0.4], castshadow=False)
    world.add_geom(
        name="table",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[0.6, 0.8, 0.02],
        pos=[0.45, 0, -0.02],
        rgba=[0.72, 0.6, 0.45, 1],
        friction=[1.0, 0.01, 0.001],
    )
    world.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.1], pos=[0, 0, -0.8], rgba=[0.35, 0.35, 0.38, 1]
    )
    _free_box(spec, "orange_block", [BLOCK] * 3, ORANGE, 0.08)
    _free_box(spec, "blue_block", [BLOCK] * 3, BLUE, 0.08)
    if layout.blue_raise > 1e-6:
        _free_box(
            spec,
            "spacer",
            [SPACER_FOOT, SPACER_FOOT, layout.blue_raise],
            [0.55, 0.55, 0.55, 1],
            0.15 * layout.blue_raise / 0.00635,
        )
    cup = world.add_body(name="cup")
    cup.add_freejoint(name="cup_joint")
    cup.add_geom(
        name="cup_geom",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[CUP_R, CUP_H / 2, 0],
        rgba=[0.85, 0.85, 0.8, 1],
        mass=0.12,
        friction=[1.2, 0.01, 0.001],
        condim=4,
    )
    s = layout.bowl_scale
    bowl = world.add_body(name="bowl")
    bowl.add_freejoint(name="bowl_joint")
    radius, height, thick = BOWL_R * s, BOWL_H * s, BOWL_T * s
    black = [0.05, 0.05, 0.05, 1]
    bowl.add_geom(
        name="bowl_base",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[radius + thick, thick / 2, 0],
        pos=[0, 0, thick / 2],
        rgba=black,
        mass=0.25 * s**3,
    )
    seg = 2 * math.pi * (radius + thick / 2) / BOWL_SEGMENTS
    for i in range(BOWL_SEGMENTS):
        a = 2 * math.pi * i / BOWL_SEGMENTS
        bowl.add_geom(
            name=f"bowl_wall{i}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[thick / 2, seg / 2 * 1.05, height / 2],
            pos=[(radius + thick / 2) * math.cos(a), (radius + thick / 2) * math.sin(a), height / 2],
            quat=[math.cos(a / 2), 0, 0, math.sin(a / 2)],
            rgba=black,
            mass=0.02 * s**3,
        )
    # DROID's two exterior cameras stand left and right in front of the robot, seeing arm and table
    target = [0.42, 0.0, 0.2]
    for name, y in (("exterior_1", 0.6), ("exterior_2", -0.6)):
        pos = [0.95, y, 0.55]
        world.add_camera(name=name, pos=pos, quat=_look_at(pos, target), fovy=60)
    # the report's per-level image: an exterior view closer on the place target, where the
    # axes change the scene (spacers under the blue block, the bowl's size)
    pos = [0.98, 0.30, 0.36]
    world.add_camera(name="level_view", pos=pos, quat=_look_at(pos, [0.52, -0.10, 0.03]), fovy=42)
    mount = spec.body("gripper/base_mount")  # the wrist camera looks past the fingers
    mount.add_camera(
        name="wrist", pos=[0.09, 0.0, -0.01], quat=_look_at([0.09, 0, -0.01], [0.0, 0, 0.25], [1, 0, 0]), fovy=80
    )
    return spec


def build(source: RobotSource, layout: Layout) -> mujoco.MjModel:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the gripper's solver options are taken over on purpose
        return build_spec(source, layout).compile()
