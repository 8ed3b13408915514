"""Options shared by several sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core import paths


def add_db_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=Path, default=None,
                   help=f"results store (default: $INDGEN_DB or {paths.default_db()})")


def open_store(args: argparse.Namespace):
    from indgen_core.store import ResultsStore

    return ResultsStore(args.db)
