"""`indgen console` (registered through the `indgen.commands` entry point)."""

from __future__ import annotations

import argparse
import getpass


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console", help="the operator console: build scenes, label episodes, redo, pause, e-stop",
                       description="A full-screen terminal program for the person at the robot. It joins the "
                       "running campaign over ROS 2 (run it in a second terminal beside `indgen launch`), shows the "
                       "campaign, the level and its parameters, the per-level table, the policy and robot state, "
                       "and one prompt with the keys it takes (? lists them). Ctrl-C leaves the console; the "
                       "campaign waits for the next answer, and a console started again shows the open prompt.")
    p.add_argument("--operator", default=getpass.getuser(), help="your name, kept with every label (default: the "
                   "login name)")
    p.add_argument("--watch", action="store_true", help="only watch: every key but ? is refused")
    p.set_defaults(func=cmd_console)


def cmd_console(args: argparse.Namespace) -> int:
    import rclpy

    from indgen_robot.console import app
    from indgen_robot.console.link import ConsoleLink
    from indgen_robot.console.model import ConsoleModel

    model = ConsoleModel(operator=args.operator, role="watch" if args.watch else "operate")
    rclpy.init()
    link = ConsoleLink(model, watch=args.watch)
    try:
        return app.run(model, link)
    finally:
        link.close()
        rclpy.try_shutdown()
