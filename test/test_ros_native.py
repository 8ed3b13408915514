"""The ROS-native path: the repository as a package in a colcon workspace.

colcon builds indgen_msgs (ament_cmake, rosidl) and indgen (ament_python) with the same
ROS 2 Jazzy wheels, then a fresh shell that sources install/setup.bash imports both and
runs the `indgen` executable from lib/indgen, as `ros2 run indgen indgen` would. The
workspace lives in build/colcon-test between runs (`_workspace` says what is kept).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ros]

VENV = Path(sys.prefix)


def _copy_sources(repo: Path, dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=repo,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        src = repo / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)  # times kept: CMake rebuilds what changed, not what was copied


def _workspace(repo: Path) -> Path:
    """The colcon workspace, kept between runs in build/ (the test took 61 s with a clean build,
    nearly all of it indgen_msgs' C type supports, 4 s with nothing changed). Only
    CMake's build folder of indgen_msgs is kept, and CMake rebuilds from it what changed: the
    sources, the install tree and indgen's own build are made anew every run, and everything
    when the venv's packages are not the ones it was built with. A fresh clone (CI) builds
    from scratch."""
    from importlib import metadata

    ws = repo / "build" / "colcon-test"
    venv = "\n".join([sys.prefix, *sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())])
    if not (ws / "venv.txt").is_file() or (ws / "venv.txt").read_text() != venv:
        shutil.rmtree(ws, ignore_errors=True)
    for made_anew in (ws / "src", ws / "install", ws / "log", ws / "build" / "indgen"):
        shutil.rmtree(made_anew, ignore_errors=True)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "venv.txt").write_text(venv)
    return ws


def test_colcon_builds_both_packages(repo):
    colcon = VENV / "bin" / "colcon"
    if not colcon.exists():
        pytest.fail("colcon is not installed in the venv: `make setup` installs colcon-common-extensions")
    ws = _workspace(repo)
    _copy_sources(repo, ws / "src" / "indgen")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AMENT_", "COLCON_"))}
    env["AMENT_PREFIX_PATH"] = str(VENV)
    env["PATH"] = f"{VENV / 'bin'}:{env['PATH']}"
    build = subprocess.run(
        [str(colcon), "build", "--base-paths", "src/indgen", "src/indgen/src/indgen_msgs"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "2 packages finished" in build.stdout

    install = ws / "install"
    assert (install / "indgen" / "share" / "indgen" / "package.xml").is_file()
    assert (install / "indgen" / "share" / "ament_index" / "resource_index" / "packages" / "indgen").is_file()
    assert (install / "indgen" / "lib" / "indgen" / "indgen").is_file()
    for folder in ("launch", "config"):
        tracked = [p for p in (repo / folder).rglob("*") if p.is_file()]
        for p in tracked:
            assert (install / "indgen" / "share" / "indgen" / p.relative_to(repo)).is_file(), p

    # a fresh shell, as a ROS user has it: source the workspace, nothing else
    shell_env = {k: v for k, v in env.items() if k not in ("_ROS_WHEELS_BOOTSTRAP_COMPLETE", "PYTHONPATH",
                                                          "LD_LIBRARY_PATH")}
    script = (
        f"source {VENV}/bin/activate && source install/setup.bash && "
        "python -c 'import indgen_msgs.msg, indgen_core; from indgen_msgs.action import RunEpisode; "
        "print(indgen_msgs.__file__); print(indgen_core.__file__)' && "
        "install/indgen/lib/indgen/indgen --version"
    )
    run = subprocess.run(["bash", "-c", script], cwd=ws, env=shell_env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split()
    assert lines[0].startswith(str(install / "indgen_msgs"))
    assert lines[1].startswith(str(install / "indgen"))
    assert lines[2] == "indgen"
