"""``curator backup``: take a backup of the database now.

The same stepped, checked copy the window takes every N minutes of use and on close
(:func:`curator.store.backup.take_backup`): written to ``<db dir>/backups`` unless
``--dir`` says otherwise, kept only once ``quick_check`` passes, old ones thinned by age
(the ``--keep`` newest, one per day for a week, one per week for a month). The database
is opened like every other command opens it, so a damaged or foreign file is refused
with the same one-line error and left untouched, and a read-only one is backed up from
a read-only connection.
"""

from __future__ import annotations

import argparse
from typing import Any

from curator.cli.common import CommandContext, integer
from curator.core.userpath import user_path
from curator.store.backup import DEFAULT_KEEP, take_backup


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``backup`` subcommand."""
    p = subparsers.add_parser(
        "backup",
        parents=[common],
        help="back up the database now (checked with quick_check)",
        description="Copy the database with SQLite's online backup API, check the copy "
        "with quick_check and keep it in <db dir>/backups (or --dir). Prints the path, "
        "size and seconds taken. Old backups are thinned by age: the --keep newest, one "
        "per day for a week, one per week for a month.",
    )
    p.add_argument(
        "--keep", type=integer, default=DEFAULT_KEEP, metavar="N", help="newest backups kept"
    )
    p.add_argument("--dir", default=None, metavar="DIR", help="default: <db dir>/backups")
    p.set_defaults(handler=cmd_backup)


def cmd_backup(ctx: CommandContext) -> int:
    folder = user_path(ctx.args.dir, "--dir") if ctx.args.dir else None
    store = ctx.store  # refuses a damaged or foreign file before anything is written
    result = take_backup(store.path, read_only=store.read_only, dest_dir=folder, keep=ctx.args.keep)
    ctx.emit(result.to_json(), result.describe())
    return 0
