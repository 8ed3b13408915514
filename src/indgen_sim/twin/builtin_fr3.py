"""A built-in FR3 for machines without mujoco_menagerie: capsules along Franka's published
kinematics (modified DH: a, d, alpha) with the FR3's joint, velocity and torque limits, and a
simple two-finger parallel gripper with the 2F-85's 85 mm stroke. Names follow the menagerie
model (fr3_joint1..7, attachment_site), so everything above it is the same."""

from __future__ import annotations

import math

import mujoco

# (a_{i-1}, d_i, alpha_{i-1}) of joints 1..7, then the flange (Franka FR3 datasheet)
DH = [
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -math.pi / 2),
    (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2),
    (-0.0825, 0.384, -math.pi / 2),
    (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
]
FLANGE_D = 0.107
LIMITS = [
    (-2.7437, 2.7437),
    (-1.7837, 1.7837),
    (-2.9007, 2.9007),
    (-3.0421, -0.1518),
    (-2.8065, 2.8065),
    (0.5445, 4.5169),
    (-3.0159, 3.0159),
]
TORQUE = [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]
MASS = [2.93, 2.94, 2.24, 2.62, 2.33, 1.82, 0.63]


def _quat_x(angle: float) -> list[float]:
    return [math.cos(angle / 2), math.sin(angle / 2), 0.0, 0.0]


def fr3_spec() -> mujoco.MjSpec:
    spec = mujoco.MjSpec()
    spec.modelname = "fr3_builtin"
    spec.compiler.degree = False  # joint ranges below are in radians
    parent = spec.worldbody.add_body(name="base")
    link0 = parent.add_body(name="fr3_link0")
    link0.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[0.06, 0.07, 0],
        pos=[0, 0, 0.07],
        rgba=[0.9, 0.9, 0.9, 1],
        mass=3.0,
        contype=2,
        conaffinity=1,
    )
    body = link0
    for i, ((a, d, alpha), (lo, hi), torque, mass) in enumerate(zip(DH, LIMITS, TORQUE, MASS, strict=True), 1):
        pos = [a, -math.sin(alpha) * d, math.cos(alpha) * d]
        child = body.add_body(name=f"fr3_link{i}", pos=pos, quat=_quat_x(alpha))
        child.add_joint(
            name=f"fr3_joint{i}",
            axis=[0, 0, 1],
            range=[lo, hi],
            damping=0.21,
            armature=0.1,
            frictionloss=0.5,
            actfrcrange=[-torque, torque],
            actfrclimited=1,
            limited=1,
        )
        # a capsule from this joint towards the next one keeps the silhouette and the mass roughly right
        nxt = DH[i] if i < len(DH) else (0.0, FLANGE_D, 0.0)
        na, nd, nalpha = nxt
        tip = [na, -math.sin(nalpha) * nd, math.cos(nalpha) * nd]
        # contype 2 / conaffinity 1: links touch the world and the objects, never each other
        if math.dist(tip, [0, 0, 0]) > 1e-3:
            child.add_geom(
                type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                fromto=[0, 0, 0, *tip],
                size=[0.045, 0, 0],
                rgba=[0.95, 0.95, 0.95, 1],
                mass=mass,
                contype=2,
                conaffinity=1,
            )
        else:
            child.add_geom(
                type=mujoco.mjtGeom.mjGEOM_SPHERE,
                size=[0.06, 0, 0],
                rgba=[0.95, 0.95, 0.95, 1],
                mass=mass,
                contype=2,
                conaffinity=1,
            )
        body = child
    body.add_site(name="attachment_site", pos=[0, 0, FLANGE_D])
    return spec


def gripper_spec() -> mujoco.MjSpec:
    """A parallel gripper named like the 2F-85 where it matters: base_mount, a 'pinch' site
    between the fingertips, one actuator with ctrl 0 (open) .. 255 (closed)."""
    spec = mujoco.MjSpec()
    spec.modelname = "parallel_gripper_builtin"
    spec.compiler.degree = False
    mount = spec.worldbody.add_body(name="base_mount")
    # contype 2 / conaffinity 1, like the built-in arm: the gripper touches objects, not the arm
    mount.add_geom(
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[0.04, 0.06, 0.03],
        pos=[0, 0, 0.03],
        rgba=[0.15, 0.15, 0.15, 1],
        mass=0.6,
        contype=2,
        conaffinity=1,
    )
    # 1.5 cm short of the fingertips (as on the 2F-85): a block grasped at its centre keeps them off the table
    mount.add_site(name="pinch", pos=[0, 0, 0.13], size=[0.005, 0, 0])
    for side, sign in (("left", 1.0), ("right", -1.0)):
        finger = mount.add_body(name=f"{side}_finger", pos=[0, 0, 0.06])
        finger.add_joint(
            name=f"{side}_finger_joint",
            type=mujoco.mjtJoint.mjJNT_SLIDE,
            axis=[0, -sign, 0],
            range=[0, 0.0425],
            damping=5.0,
            limited=1,
        )
        finger.add_geom(
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[0.011, 0.006, 0.035],
            pos=[0, sign * 0.0485, 0.05],
            rgba=[0.2, 0.2, 0.2, 1],
            mass=0.08,
            friction=[1.5, 0.05, 0.001],
            contype=2,
            conaffinity=1,
        )
    eq = spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1="left_finger_joint", name2="right_finger_joint")
    eq.data[1] = 1.0
    act = spec.add_actuator(name="fingers_actuator", target="left_finger_joint", trntype=mujoco.mjtTrn.mjTRN_JOINT)
    act.ctrlrange = [0, 255]
    act.ctrllimited = 1
    act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
    act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
    act.gainprm[0] = 0.0425 / 255 * 800
    act.biasprm[:3] = [0, -800, -40]
    act.forcerange = [-60, 60]
    act.forcelimited = 1
    return spec
