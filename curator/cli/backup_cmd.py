"""``curator backup``: take a backup of the database now; ``curator compact``: give the
space of deleted rows back to the disk (:mod:`curator.store.compact`).

The same stepped, checked copy the window takes every N minutes of use and on close
(:func:`curator.store.backup.take_backup`): written to ``<db dir>/backups`` unless
``--dir`` says otherwise, kept only once ``quick_check`` passes, old ones thinned by age
(the ``--keep`` newest, one per day for a week, one per week for a month) and by total
size (the ``backup_max_total_mb`` setting: the oldest go first). The database
is opened like every other command opens it, so a damaged or foreign file is refused
with the same one-line error and left untouched, and a read-only one is backed up from
a read-only connection. A PostgreSQL database is backed up by
:mod:`curator.store.pg_backup` (``pg_dump``, or a logical export into a SQLite file).
"""

from __future__ import annotations

import argparse
from typing import Any

from curator.cli.common import CommandContext, integer
from curator.core.userpath import user_path
from curator.store.backup import DEFAULT_KEEP, max_total_bytes_of, take_backup
from curator.store.compact import compact_database
from curator.store.location import DatabaseLocation


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``backup`` subcommand."""
    p = subparsers.add_parser(
        "backup",
        parents=[common],
        description="Copy the database with SQLite's online backup API, check the copy "
        "with quick_check and keep it in <db dir>/backups (or --dir); a PostgreSQL "
        "database with pg_dump (custom format) when it is installed, else as a checked "
        "SQLite export, into the user data folder's backups (or --dir). Prints the path, "
        "size and seconds taken. Old backups are thinned by age: the --keep newest, one "
        "per day for a week, one per week for a month, and the oldest go while all of "
        "them together exceed the backup_max_total_mb setting (the newest always stays).",
    )
    p.add_argument(
        "--keep", type=integer, default=DEFAULT_KEEP, metavar="N", help="newest backups kept"
    )
    p.add_argument("--dir", default=None, metavar="DIR", help="default: <db dir>/backups")
    p.set_defaults(handler=cmd_backup)

    c = subparsers.add_parser(
        "compact",
        parents=[common],
        description="Rewrite the database without its free pages (SQLite's VACUUM, then a "
        "checkpoint that empties the WAL) and print its size before and after. Refused, "
        "with nothing changed, while another process (the window, a running command) has "
        "the database open, and for a file that is not a Memory Curator database.",
    )
    c.set_defaults(handler=cmd_compact)


def cmd_backup(ctx: CommandContext) -> int:
    folder = user_path(ctx.args.dir, "--dir") if ctx.args.dir else None
    store = ctx.store  # refuses a damaged or foreign file before anything is written
    if not DatabaseLocation.of(store).supports_file_backup:
        from curator.store.pg_backup import take_pg_backup

        result = take_pg_backup(
            store, folder, keep=ctx.args.keep, max_total_bytes=max_total_bytes_of(store)
        )
        ctx.emit(result.to_json(), result.describe())
        return 0
    result = take_backup(
        store.path,
        read_only=store.read_only,
        dest_dir=folder,
        keep=ctx.args.keep,
        max_total_bytes=max_total_bytes_of(store),
    )
    ctx.emit(result.to_json(), result.describe())
    return 0


def cmd_compact(ctx: CommandContext) -> int:
    """Never through ``ctx.store``: the compaction needs the only connection to the file
    (this process's own open one would make it refuse itself as "busy")."""
    path = ctx.db_file("compact")
    missing = ctx.missing_database_message()
    if ctx.create:  # a new database has nothing to compact: the usual way on is no way
        missing = f"no database at {path}; nothing was created (--create does not apply to compact)"
    report = compact_database(path, missing_message=missing)
    ctx.emit(report.to_json(), report.describe())
    return 0
