"""Headless OpenGL for MuJoCo.

MuJoCo picks its GL backend from MUJOCO_GL when it is first imported, so the choice has
to be made before any `import mujoco`. EGL (Mesa llvmpipe on a CPU machine, the driver
on a GPU host) is the default; OSMesa is the fallback when EGL cannot make a context.
"""

from __future__ import annotations

import os
import subprocess
import sys

BACKENDS = ("egl", "osmesa")

_PROBE = (
    "import mujoco\n"
    "m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom size=\".1\"/></worldbody></mujoco>')\n"
    "r = mujoco.Renderer(m, 16, 16)\n"
    "r.update_scene(mujoco.MjData(m))\n"
    "r.render()\n"
    "r.close()\n"
)


def use_headless_gl() -> str:
    """Set MUJOCO_GL (unless the user already chose) and return the backend in effect."""
    return os.environ.setdefault("MUJOCO_GL", BACKENDS[0])


def probe_backend(backend: str, timeout: float = 60.0) -> tuple[bool, str]:
    """Render one tiny frame with `backend` in a child process: (works, one-line detail)."""
    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"{backend}: no frame within {timeout:.0f} s"
    if proc.returncode == 0:
        return True, f"{backend} renders"
    last = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
    return False, f"{backend}: {last[:120]}"
