"""robosuite 1.5.2 (PyPI's newest) made to accept what RoboCasa365 v1.0.1 passes it.

RoboCasa365 was written against robosuite's master branch (RoboCasa's README: "use the master
branch"; the three uses below entered RoboCasa in its commit 0c81ff9c, "RoboCasa365 release",
2026-02-17), and master is not on PyPI. Each patch stands in for one master API and does
nothing where robosuite already has it:

- `MujocoEnv(load_model_on_init=False)` (kitchen.py passes it to defer building the model to
  the first reset): 1.5.2 always builds it in `__init__`, which is master's `True`. The kitchen
  resets hard, so its first reset builds the model again; the cost is one extra build.
- `ManipulationTask(enable_multiccd=..., enable_sleeping_islands=...)`: master's world model
  writes `<option><flag multiccd="enable"/>` (and `sleep`) into the MJCF; so does this.
- the mobile base's `JOINT_VELOCITY_LEGACY` controller type (kitchen.py asks for it when a
  controller configuration is given): 1.5.2's `JOINT_VELOCITY` base controller, which is the
  behaviour master renamed "legacy".

`apply()` is called once, before RoboCasa is imported; `applied()` says which patches it made."""

from __future__ import annotations

import inspect
import xml.etree.ElementTree as ET

_APPLIED: list[str] = []


def applied() -> list[str]:
    return list(_APPLIED)


def apply() -> list[str]:
    if _APPLIED:
        return applied()
    from robosuite.environments.manipulation.manipulation_env import ManipulationEnv

    if "load_model_on_init" not in inspect.signature(ManipulationEnv.__init__).parameters:
        build_on_init = ManipulationEnv.__init__

        def env_init(self, *args, load_model_on_init=True, **kwargs):
            build_on_init(self, *args, **kwargs)

        ManipulationEnv.__init__ = env_init
        _APPLIED.append("load_model_on_init")

    from robosuite.models.tasks.task import Task

    if "enable_multiccd" not in inspect.signature(Task.__init__).parameters:
        task_init = Task.__init__

        def task_with_flags(
            self, mujoco_arena, mujoco_robots, mujoco_objects=None, enable_multiccd=False, enable_sleeping_islands=False
        ):
            task_init(self, mujoco_arena, mujoco_robots, mujoco_objects)
            for wanted, flag in ((enable_multiccd, "multiccd"), (enable_sleeping_islands, "sleep")):
                if wanted:
                    self.root.insert(0, ET.fromstring(f'<option><flag {flag}="enable"/></option>'))

        Task.__init__ = task_with_flags
        _APPLIED.append("enable_multiccd")

    import robosuite.controllers.parts.controller_factory as factory

    if not getattr(factory.mobile_base_controller_factory, "indgen_legacy_name", False):
        make_base = factory.mobile_base_controller_factory

        def base_controller(name, params):
            return make_base("JOINT_VELOCITY" if name == "JOINT_VELOCITY_LEGACY" else name, params)

        base_controller.indgen_legacy_name = True  # type: ignore[attr-defined]
        factory.mobile_base_controller_factory = base_controller
        _APPLIED.append("JOINT_VELOCITY_LEGACY")
    return applied()
