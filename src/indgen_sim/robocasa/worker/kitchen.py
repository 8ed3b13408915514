"""The kitchen IndGen runs RoboCasa's tasks in, and the axes applied through RoboCasa's own
placement.

Two asset modes:
- "reduced" (what installs from PyPI): RoboCasa's scene builder on a layout written here from
  the fixtures the wheel ships (a counter, a hinged wall cabinet, a stack of drawers), the
  five textures those fixtures name filled from robosuite's own textures, and three of
  robosuite's shipped objects (can, lemon, bread) registered through
  RoboCasa's object API (`OBJ_CATEGORIES[category]["indgen"] = ObjCat(...)`). The tree is
  written once into a folder of IndGen's (`prepare_reduced_assets`), and RoboCasa reads it
  through `ROBOCASA_ASSETS_PATH`, which must be set before RoboCasa is imported.
- "full" (after RoboCasa's own download, `robocasa-download-assets`): the standard layouts and
  styles and RoboCasa's objects, from the asset folder the download wrote.

The axes (config/axes/robocasa_*.yaml) move one thing each, the way RoboCasa places it:
- `pick_offset_x` (a fraction of the sampling region, 0..1): the pick object's sampling box
  slides along x from where RoboCasa puts it (under the cabinet, `pos=("ref", ...)`) to the far
  end of the counter region it is sampled in; level k (0.2 k) moves it k fifths of that free
  travel, so every level stays inside RoboCasa's valid region;
- `cabinet_clutter` (count): that many more objects sampled inside the cabinet, with the
  placement RoboCasa gives its own cabinet distractor (`distr_cab`);
- `base_offset_m` (metres, the horizon axis' 12.5 cm per level): the robot's base placed that
  much further back from the fixture it faces, through the `offset` argument of RoboCasa's
  `compute_robot_base_placement_pose` (the fixture's frame: its y points out of the fixture's
  front, so the offset is (0, -d)); RoboCasa's own spawn deviation is drawn as before."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

#: the registry name IndGen's objects go under in OBJ_CATEGORIES (RoboCasa's are objaverse, aigen, lightwheel)
REGISTRY = "indgen"
#: robosuite's shipped object file -> the RoboCasa category it stands for: the ones no taller
#: than 8 cm, which a hand from above can carry into the wall cabinet's lowest compartment
#: (27 cm high); robosuite's milk, cereal and bottle (14-16 cm) cannot
OBJECTS = {"can": "can", "lemon": "lemon", "bread": "bread"}
#: the textures the shipped fixtures' default styles name, and the robosuite texture filling each
TEXTURES = {
    "bricks/white_bricks.png": "white-bricks.png",
    "flat/white.png": "white-plaster.png",
    "metals/bright_metal.png": "steel-brushed.png",
    "wood/gray_wood_planks.png": "gray-woodgrain.png",
    "wood/light_wood_planks.png": "light-wood.png",
}
#: a kitchen from the shipped fixtures only: a 2 m counter, a hinged wall cabinet above its
#: middle, a stack of two drawers at its left end (RoboCasa's layout format,
#: models/assets/scenes/kitchen_layouts/*.yaml)
LAYOUT = {
    "room": {
        "walls": [{"name": "wall", "type": "wall", "size": [1.5, 1.5, 0.02], "pos": [1.5, 0, 1.5]}],
        "floor": [{"name": "floor", "type": "floor", "size": [1.5, 1.5, 0.02], "pos": [1.5, -1.5, 0]}],
    },
    "main_group": {
        "bottom_row": [
            {"name": "counter_main", "type": "counter", "size": [2.0, 0.65, 0.92], "pos": [1.5, -0.325, 0.46]}
        ],
        "top_row": [
            {"name": "cab_main", "type": "hinge_cabinet", "size": [1.0, 0.40, 0.92], "pos": [1.5, -0.20, 1.85]}
        ],
        "bottom_row_cabinets": [
            {
                "name": "stack_1",
                "type": "stack",
                "levels": ["drawer", "drawer"],
                "percentages": [0.5, 0.5],
                "size": [0.5, 0.60, 0.84],
                "pos": [0.75, -0.30, 0.47],
            }
        ],
    },
}
STYLE = {"cabinet": {"default": ["white", "shaker"]}}
#: a camera fixed in the kitchen (RoboCasa's are all on the robot, whose spawn varies): behind
#: and above the robot, looking at the counter under the cabinet, for level pictures
SCENE_CAMERA = "indgen_scene"
SCENE_CAMERA_XML = f'<camera name="{SCENE_CAMERA}" pos="1.5 -2.4 2.2" xyaxes="1 0 0 0 0.464 0.886" fovy="50"/>'


def prepare_reduced_assets(wheel_assets: Path, robosuite_assets: Path, dest: Path) -> Path:
    """Write the reduced asset tree into `dest` (once; a finished tree has `.complete`): the
    wheel's own assets, the five textures, and robosuite's objects in RoboCasa's object
    layout (objects/<registry>/<category>/<Model>/model.xml with its `reg_bbox` geom)."""
    if (dest / ".complete").is_file():
        return dest
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(wheel_assets, partial)
    for target, source in TEXTURES.items():
        (partial / "textures" / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(robosuite_assets / "textures" / source, partial / "textures" / target)
    for name, category in OBJECTS.items():
        model = Path("objects") / REGISTRY / category / f"{name.capitalize()}001"
        write_object(robosuite_assets / "objects" / f"{name}.xml", partial / model, dest / model)
    (partial / ".complete").write_text("indgen reduced RoboCasa assets\n")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    return dest


def write_object(source: Path, folder: Path, final: Path | None = None) -> Path:
    """One robosuite object as a RoboCasa object model: its files beside model.xml (RoboCasa
    rewrites paths that contain models/assets/objects, so none may), a visible twin of each
    collision geom (MJCFObject keeps collision geoms in group 0, which robosuite's cameras do
    not show), and the `reg_bbox` box RoboCasa's sampler reads the object's size from. Files
    are named by the absolute path they will have in `final` (the tree is written beside it
    and renamed when whole)."""
    import mujoco

    folder.mkdir(parents=True, exist_ok=True)
    final = final or folder
    root = ET.parse(source).getroot()
    for element in root.iter():
        named = element.get("file")
        if named is not None:
            original = (source.parent / named).resolve()
            shutil.copy(original, folder / original.name)
            element.set("file", str(final / original.name))
    probe = ET.fromstring(ET.tostring(root))
    for element in probe.iter():  # measured from the copies as they lie now
        if element.get("file") is not None:
            element.set("file", str(folder / Path(element.get("file", "")).name))
    model = mujoco.MjModel.from_xml_string(ET.tostring(probe, encoding="unicode"))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    low, high = np.full(3, np.inf), np.full(3, -np.inf)
    for g in range(model.ngeom):
        rotation = data.geom_xmat[g].reshape(3, 3)
        centre = data.geom_xpos[g] + rotation @ model.geom_aabb[g, :3]
        half = np.abs(rotation) @ model.geom_aabb[g, 3:]
        low, high = np.minimum(low, centre - half), np.maximum(high, centre + half)
    body = root.find("./worldbody/body/body[@name='object']")
    if body is None:
        raise ValueError(f"{source} has no body named 'object' (robosuite's object layout)")
    for geom in list(body.iter("geom")):
        if geom.get("group", "0") == "0":
            keep = {
                k: v
                for k, v in geom.attrib.items()
                if k not in ("solimp", "solref", "density", "friction", "condim", "name")
            }
            ET.SubElement(body, "geom", {**keep, "group": "1", "contype": "0", "conaffinity": "0", "mass": "0"})
    ET.SubElement(
        body,
        "geom",
        name="reg_bbox",
        type="box",
        pos=" ".join(f"{v:.5f}" for v in (low + high) / 2),
        size=" ".join(f"{v:.5f}" for v in (high - low) / 2),
        rgba="0 0 0 0",
        group="1",
        contype="0",
        conaffinity="0",
        mass="0",
    )
    path = folder / "model.xml"
    ET.ElementTree(root).write(path)
    return path


def register_objects() -> list[str]:
    """IndGen's objects in RoboCasa's object registry (after `import robocasa`)."""
    from robocasa.models.objects.kitchen_object_utils import ObjCat
    from robocasa.models.objects.kitchen_objects import OBJ_CATEGORIES

    for category in OBJECTS.values():
        OBJ_CATEGORIES[category][REGISTRY] = ObjCat(
            name=category,
            types=("kitchen",),
            reg_type=REGISTRY,
            graspable=True,
            model_folders=[f"{REGISTRY}/{category}"],
        )
    return sorted(OBJECTS.values())


def slide_pick_box(sampler, reset_region: dict, offset_x: float, fraction: float, margin: float = 0.04) -> float:
    """Move the pick object's sampling box along x by `fraction` of its free travel towards
    the region's +x end (RoboCasa's `pos` scale: the box's centre at (outer - inner) / 2 * pos
    from the region's centre). Returns the shift in metres."""
    outer = float(reset_region["size"][0]) - margin
    inner = float(sampler.x_range[1] - sampler.x_range[0])
    half_travel = max(outer / 2 - inner / 2, 0.0)
    centre = float(np.mean(sampler.x_range)) - float(reset_region["offset"][0])
    shift = fraction * max(half_travel + offset_x - centre, 0.0)
    sampler.x_range = np.asarray(sampler.x_range, dtype=float) + shift
    return shift


def task_class(name: str):
    """RoboCasa's task class `name`, with IndGen's levels applied through its own object
    configurations and placement sampler."""
    from robocasa.environments.kitchen.atomic import kitchen_pick_place
    from robocasa.utils import env_utils

    base: Any = getattr(kitchen_pick_place, name)
    _hook_placement(env_utils)
    _hook_base_pose(env_utils)

    class AtLevel(base):
        indgen_params: dict = {}  # noqa: RUF012  (set per reset by the worker)
        indgen_shift = 0.0

        def _get_obj_cfgs(self):
            cfgs = super()._get_obj_cfgs()
            for i in range(int(self.indgen_params.get("cabinet_clutter", 0))):
                # the placement RoboCasa gives its own cabinet distractor (distr_cab)
                placement = {"fixture": self.cab, "size": (1.0, 0.30), "pos": (None, 1.0), "offset": (0.0, 0.0)}
                cfgs.append({"name": f"clutter_{i}", "obj_groups": "all", "placement": placement})
            return cfgs

        def _load_model(self, *args, **kwargs):
            super()._load_model(*args, **kwargs)
            if self.model is not None and self.model.worldbody.find(f"camera[@name='{SCENE_CAMERA}']") is None:
                self.model.worldbody.append(ET.fromstring(SCENE_CAMERA_XML))

        def indgen_placed(self, initializer, cfgs) -> None:
            fraction = float(self.indgen_params.get("pick_offset_x", 0.0))
            cfg = next((c for c in cfgs if c.get("name") == "obj" and c.get("type") == "object"), None)
            if fraction and cfg is not None:  # (the kitchen's fixtures are placed through here too)
                offset_x = float(cfg["placement"].get("offset", (0.0, 0.0))[0])
                sampler = initializer.samplers["obj_Sampler"]
                self.indgen_shift = slide_pick_box(sampler, cfg["reset_region"], offset_x, fraction)

    AtLevel.__name__ = AtLevel.__qualname__ = name
    return AtLevel


def _hook_placement(env_utils) -> None:
    """Let a task adjust the sampler RoboCasa builds before it samples (kitchen.py builds it
    with `EnvUtils._get_placement_initializer` and samples it on the next line)."""
    original = env_utils._get_placement_initializer
    if getattr(original, "indgen_hook", False):
        return

    def with_hook(env, cfg_list, *args, **kwargs):
        initializer = original(env, cfg_list, *args, **kwargs)
        hook = getattr(env, "indgen_placed", None)
        if hook is not None:
            hook(initializer, cfg_list)
        return initializer

    with_hook.indgen_hook = True  # type: ignore[attr-defined]
    env_utils._get_placement_initializer = with_hook


def _hook_base_pose(env_utils) -> None:
    """Give RoboCasa's robot placement the level's base offset: `init_robot_base_pose` calls
    `compute_robot_base_placement_pose(env, ref_fixture, ref_object)` without the `offset` it
    takes; a task with `indgen_params["base_offset_m"]` gets offset (0, -d) there."""
    original = env_utils.compute_robot_base_placement_pose
    if getattr(original, "indgen_hook", False):
        return

    def with_offset(env, ref_fixture, ref_object=None, offset=None):
        d = float(getattr(env, "indgen_params", {}).get("base_offset_m", 0.0))
        if d and offset is None:
            offset = (0.0, -d)
        return original(env, ref_fixture, ref_object=ref_object, offset=offset)

    with_offset.indgen_hook = True  # type: ignore[attr-defined]
    env_utils.compute_robot_base_placement_pose = with_offset
