"""Options shared by several sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core import paths
from indgen_core.lists import parse_int_list, parse_names


def int_list(text: str) -> list[int]:
    """An argparse `type=` for integer lists ("0,2", "0-9", "-3-3"): a bad item is one
    sentence from argparse (exit 2), never a traceback."""
    try:
        return parse_int_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def name_list(text: str) -> list[str]:
    """An argparse `type=` for comma-separated names ("a,b")."""
    names = parse_names(text)
    if not names:
        raise argparse.ArgumentTypeError("the list is empty (write names separated by commas)")
    return names


def add_db_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=Path, default=None, help=f"results store (default: $INDGEN_DB or {paths.default_db()})")


def open_store(args: argparse.Namespace):
    from indgen_core.store import ResultsStore

    return ResultsStore(args.db)


def campaign_ids(args: argparse.Namespace, store) -> list[str]:
    """The campaigns named on the command line, then every one of --group; one sentence when
    there are none."""
    from indgen_core.errors import IndGenError

    ids = list(dict.fromkeys(args.campaigns))
    if args.group:
        ids += [c.id for c in store.campaigns(group=args.group) if c.id not in ids]
        if not ids:
            raise IndGenError(f"no campaigns in group '{args.group}' in {store.path}")
    if not ids:
        raise IndGenError("name at least one campaign id (see `indgen campaign list`) or --group")
    return ids
