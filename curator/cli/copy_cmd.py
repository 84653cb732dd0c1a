"""``curator copy [SOURCE] DEST``: copy a whole database, SQLite and PostgreSQL either way.

The work is :func:`curator.store.copy.copy_database` (one transaction of the destination,
verified by counts and content hashes); this module resolves the two locations, opens
them, prints progress on stderr and the summary. SOURCE defaults to the database every
command uses (``--db``, ``$CURATOR_DB``, the default) and must exist; DEST is created
when it is a SQLite file that does not exist yet (and removed again when the copy
fails), and must be an existing database on a PostgreSQL server (its schema is set up).
A URL given here may not hold a password, as for ``--db``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

from curator.cli.common import CommandContext
from curator.core.userpath import sqlite_special_name, user_path
from curator.errors import CuratorError


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``copy`` subcommand."""
    p = subparsers.add_parser(
        "copy",
        parents=[common],
        description="Copy every table of SOURCE (default: the database of --db, "
        "$CURATOR_DB or the default) into DEST: a SQLite file or a "
        "postgresql://USER@HOST:PORT/NAME URL, either way round. Ids are kept; each table "
        "is checked afterwards by its row count and a content hash. All or nothing: a "
        "failure leaves DEST as it was. A DEST that holds rows is refused unless --force, "
        "which replaces its content in the same transaction.",
    )
    p.add_argument("source", nargs="?", metavar="SOURCE", help="database to copy from")
    p.add_argument("dest", metavar="DEST", help="database to copy into")
    p.add_argument(
        "--force", action="store_true", help="replace the rows DEST holds (empties it first)"
    )
    p.set_defaults(handler=cmd_copy)


def _location(raw: str, what: str) -> Path | str:
    """An operand as a SQLite path or a canonical PostgreSQL URL (usage errors: one line)."""
    from curator.store.pg_url import check_postgres_url, is_postgres_url

    if not raw:
        raise CuratorError(f"{what} is empty: give a database file's path or a URL")
    if "\x00" in raw:
        raise CuratorError(f"{what} contains a NUL character")
    if is_postgres_url(raw):
        return check_postgres_url(raw, what)
    special = sqlite_special_name(raw)
    if special is not None:
        raise CuratorError(f"{what}: {special}")
    return user_path(raw, what)


def cmd_copy(ctx: CommandContext) -> int:
    from curator.store.copy import copy_database, open_apart
    from curator.store.db_choice import (
        busy_timeout_from_env,
        empty_database_message,
        missing_database_message,
    )
    from curator.store.db_errors import DATABASE_ERRORS
    from curator.store.take_back import Made

    args = ctx.args
    if args.source is not None and getattr(args, "db", None):
        raise CuratorError("give the database to copy as SOURCE or as --db, not both")
    dest = _location(args.dest, "DEST")
    if args.source is None:
        source = ctx.store  # refuses a missing, damaged or foreign database
    else:
        source_location = _location(args.source, "SOURCE")
        shown = source_location if isinstance(source_location, Path) else None
        source = open_apart(
            source_location,
            busy_timeout_s=busy_timeout_from_env(),
            create=False,
            missing_message=missing_database_message(shown or source_location, "SOURCE"),
            empty_message=empty_database_message(shown or source_location, "SOURCE"),
        )
        ctx.extra_stores.append(source)
    # one database under two names is refused by copy_database, asked of the databases;
    # two names of one existing file are refused before DEST is opened, which would
    # give it a -wal of its own beside the source's
    if isinstance(dest, Path) and source.dialect.is_file:
        with contextlib.suppress(OSError):
            if os.path.samefile(source.path, dest):
                raise CuratorError(
                    f"SOURCE and DEST are the same database ({dest}); nothing was copied"
                )
    made = Made.before_opening(dest) if isinstance(dest, Path) else Made()
    last: dict[str, int] = {}

    def progress(table: str, done: int, total: int) -> None:
        # a line per table started and per 10% of a big one: a log, not a bar
        step = max(total // 10, 10_000)
        if done == 0 or done == total or done - last.get(table, 0) >= step:
            last[table] = done
            ctx.info(f"copy: {table} {done:,}/{total:,}")

    target = None
    try:
        target = open_apart(dest, busy_timeout_s=busy_timeout_from_env(), create=True)
        ctx.extra_stores.append(target)
        report = copy_database(source, target, force=args.force, progress=progress)
    except BaseException:
        # A failed or stopped copy (Ctrl-C, SIGTERM: at any moment, its opening
        # included) leaves nothing behind that nobody else has filled: an empty
        # PostgreSQL database loses the schema set up for it, a new file is removed.
        if target is not None:
            with contextlib.suppress(CuratorError, *DATABASE_ERRORS):
                target.take_back_schema()
            target.close()
        made.take_back()
        raise
    ctx.emit(report.to_json(), report.describe())
    return 0
