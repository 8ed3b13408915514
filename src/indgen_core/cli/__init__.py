"""The `indgen` command: one entry point, one sub-command per job.

Sub-commands register themselves: the core ones are listed in CORE_COMMANDS, and the
worlds (indgen_sim, indgen_robot) add theirs through the `indgen.commands` entry-point
group, so that the core never imports a world. Every error a user can act on is an
`IndGenError` and ends as one line on stderr with a non-zero exit status.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from importlib import metadata

from indgen_core import __version__
from indgen_core.cli.logs import configure_logging
from indgen_core.errors import IndGenError

# module paths with a `register(subparsers)` function, in the order `--help` lists them
CORE_COMMANDS = [
    "indgen_core.cli.doctor_cmd",
    "indgen_core.cli.axes_cmd",
    "indgen_core.cli.campaign_cmd",
    "indgen_core.cli.report_cmd",
    "indgen_core.cli.compare_cmd",
    "indgen_core.cli.serve_cmd",
    "indgen_core.cli.policy_cmd",
    "indgen_core.cli.launch_cmd",
    "indgen_core.cli.bag_cmd",
    "indgen_core.cli.dataset_cmd",
]


def _registrars():
    for path in CORE_COMMANDS:
        yield importlib.import_module(path).register
    for ep in sorted(metadata.entry_points(group="indgen.commands"), key=lambda e: e.name):
        try:
            yield ep.load()
        except ImportError as exc:  # a broken plugin must not take the whole CLI down
            print(f"indgen: warning: sub-command '{ep.name}' unavailable: {exc}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="indgen",
        description="Test robot manipulation policies for inductive generalization along structured axes.",
    )
    parser.add_argument("--version", action="version", version=f"indgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for register in _registrars():
        register(sub)
    _add_examples(parser)
    return parser


def _add_examples(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> None:
    """Every command's example (examples.py) under its --help."""
    from indgen_core.cli.examples import EXAMPLES

    example = EXAMPLES.get(" ".join(words))
    if example and not parser.epilog:
        parser.epilog = f"example: {example}"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                _add_examples(sub, (*words, name))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it cleans up as after Ctrl-C (an export
    stops its lerobot writer and removes its work folder; SIGTERM used to leave both)."""


def _terminate(_signum, _frame) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)  # `indgen launch` sets its own while it runs
    configure_logging()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # `name:=value` assignments may follow options (indgen launch PROFILE --show port:=9000)
        if getattr(args, "assignments", None) is not None and all(":=" in e for e in extra):
            args.assignments = [*args.assignments, *extra]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except IndGenError as exc:
        print(f"indgen: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Terminated:
        print("indgen: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("indgen: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
