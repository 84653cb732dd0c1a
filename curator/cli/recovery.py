"""``curator restore``: put a backup back in place of a damaged (or unwanted) database.

It never opens the database through the store (which refuses a damaged file); it only
reads the backups and the file with read-only checks, then swaps files as described in
:func:`curator.store.restore.restore_backup`. A PostgreSQL database is opened as every
command opens it and restored by :func:`curator.store.pg_backup.restore_pg_backup`.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from curator.cli.common import CommandContext
from curator.core.userpath import user_path
from curator.store.location import DatabaseLocation
from curator.store.opening import MissingDatabaseError
from curator.store.restore import restore_backup


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``restore`` subcommand."""
    p = subparsers.add_parser(
        "restore",
        parents=[common],
        description="Check BACKUP (default: the newest backup that passes quick_check), "
        "set the current database file aside (renamed, never deleted) and put a copy of "
        "the backup in its place, all or nothing. Close the window first. A PostgreSQL "
        "database is first backed up, then replaced by the backup in one transaction "
        "(pg_restore for a .pgdump, a copy for a .sqlite export).",
    )
    p.add_argument("backup", nargs="?", metavar="BACKUP", help="backup file to restore")
    p.set_defaults(handler=cmd_restore)


def cmd_restore(ctx: CommandContext) -> int:
    chosen = user_path(ctx.args.backup, "BACKUP") if ctx.args.backup else None
    if not DatabaseLocation.named(ctx.db_path).is_local_file:  # restored through its server
        from curator.store.pg_backup import restore_pg_backup

        done = restore_pg_backup(ctx.store, chosen)
        ctx.emit(
            {"database": done.database, "backup": str(done.backup), "safety": str(done.safety)},
            done.message,
        )
        return 0
    path = ctx.db_file("restore")
    if not ctx.create and not os.path.exists(path) and not path.parent.is_dir():
        # Putting a lost database back is what restore is for, but into a folder that
        # does not exist it is more likely a mistyped --db: no folder is made unasked.
        raise MissingDatabaseError(ctx.missing_database_message())
    report = restore_backup(path, chosen)
    ctx.emit(
        {
            "database": str(report.path),
            "backup": str(report.backup),
            "set_aside": [str(p) for p in report.moved],
        },
        report.message,
    )
    return 0
