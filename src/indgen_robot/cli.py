"""`indgen console`, `indgen estop` and `indgen bringup` (registered through the `indgen.commands`
entry point)."""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "console",
        help="the operator console: build scenes, label episodes, redo, pause, e-stop",
        description="A full-screen terminal program for the person at the robot. It joins the "
        "running campaign over ROS 2 (run it in a second terminal beside `indgen launch`), shows the "
        "campaign, the level and its parameters, the per-level table, the policy and robot state, "
        "and one prompt with the keys it takes (? lists them). Ctrl-C leaves the console; the "
        "campaign waits for the next answer, and a console started again shows the open prompt.",
    )
    p.add_argument(
        "--operator", default=getpass.getuser(), help="your name, kept with every label (default: the login name)"
    )
    p.add_argument("--watch", action="store_true", help="only watch: every key but ? is refused")
    p.set_defaults(func=cmd_console)


def cmd_console(args: argparse.Namespace) -> int:
    from indgen_robot.console.model import ConsoleModel
    from indgen_robot.ros.console_link import run_console

    model = ConsoleModel(operator=args.operator, role="watch" if args.watch else "operate")
    return run_console(model, watch=args.watch)


def register_estop(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estop",
        help="engage (or --release) the soft e-stop of a running real-robot graph",
        description="Engage the soft e-stop: the FR3 runner holds at once, aborts the trial and refuses new ones "
        "until it is released. It publishes on the topic as a pedal node must (reliable, transient local, once the "
        "runner's reader matched, until acknowledged) and asks the runner's /indgen/estop service at once, "
        "printing the service's answer, or the topic's acknowledgement where no service answered in time. "
        "The hardware e-stop within reach is what keeps people safe; this is the software's. "
        "Exit 0 when the runner took it, 1 when nobody did.",
    )
    p.add_argument("--release", action="store_true", help="release it instead (the aborted trial runs again)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the runner (default 5)")
    p.set_defaults(func=cmd_estop)


def cmd_estop(args: argparse.Namespace) -> int:
    from indgen_robot.ros.estop_client import send_estop

    ok, message, _ = send_estop(not args.release, args.timeout)
    print(message)
    return 0 if ok else 1


def register_bringup(sub: argparse._SubParsersAction) -> None:
    from indgen_robot.bringup import CELL_ARGUMENTS

    p = sub.add_parser(
        "bringup",
        help="print the real cell's bring-up on ROS 2 Jazzy as commands to run",
        description="The commands that bring a real cell up on a sourced ROS 2 Jazzy install "
        "(franka_ros2, the Robotiq on its own namespaced controller manager, the ZED wrappers), one "
        "per terminal, "
        "in order, for the robot configuration given; launch/fr3_cell.launch.py starts the same steps "
        "and IndGen's graph in one `ros2 launch`. Nothing is started here.",
    )
    p.add_argument(
        "robot", nargs="?", default="fr3_robotiq_zed", help="robot configuration (config/robots/NAME.yaml or a path)"
    )
    for name, (default, description) in CELL_ARGUMENTS.items():
        p.add_argument(f"--{name.replace('_', '-')}", default=default, help=description)
    p.add_argument(
        "--installed",
        action="store_true",
        help="name IndGen's files where a colcon install puts them "
        "($(ros2 pkg prefix indgen)/share/indgen/config/robots) instead of where they are here",
    )
    p.set_defaults(func=cmd_bringup)


def cmd_bringup(args: argparse.Namespace) -> int:
    from indgen_core.cell.robot_config import load_robot_config, robot_config_path
    from indgen_core.errors import IndGenError
    from indgen_robot.bringup import (
        CELL_ARGUMENTS,
        CallService,
        IncludeLaunch,
        cell_steps,
        franka_version_problem,
        shell_commands,
    )

    config = load_robot_config(args.robot)
    problem = franka_version_problem(config.franka.min_version)
    if problem:
        raise IndGenError(problem)
    values = {name: getattr(args, name) for name in CELL_ARGUMENTS}
    folder = robot_config_path(args.robot).parent.resolve()
    if args.installed:
        folder = Path("$(ros2 pkg prefix indgen)/share/indgen/config/robots")
    steps = cell_steps(config, folder, values)
    print(
        f"# the bring-up of '{config.name}' on ROS 2 Jazzy: one terminal per command, in order (unverified on "
        "hardware); after franka's driver restarts, the service calls and the arm controller's spawner again"
    )
    for step, command in zip(steps, shell_commands(steps), strict=True):
        kind = (
            "launch" if isinstance(step, IncludeLaunch) else "service call" if isinstance(step, CallService) else "node"
        )
        print(f"# {step.what} ({kind})\n{command}")
    print(
        "# then IndGen: ros2 launch indgen stack_axis.launch.py sim:=false robot:=real ... (or `indgen launch` with "
        "the same arguments), and `indgen console` beside it"
    )
    return 0
