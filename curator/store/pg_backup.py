"""Backups of a PostgreSQL database, and restoring one: ``pg_dump`` or a logical export.

A SQLite database is backed up by copying its file (:mod:`curator.store.backup`); a
PostgreSQL database has no file, so:

- **With ``pg_dump``** on the PATH, a backup is ``pg_dump --format=custom`` (one
  consistent snapshot of the server, blocking no writer), checked by reading its table of
  contents back (``pg_restore --list``) before it counts; named ``….pgdump``. Restoring
  it is ``pg_restore --clean --if-exists --single-transaction`` into the same database:
  the schema and rows of the backup replace the current ones in one transaction, so a
  failure changes nothing.
- **Without it**, a backup is a *logical export*: the whole database copied into a new
  SQLite file with :func:`curator.store.copy.copy_database` (verified table by table),
  then checked as any SQLite backup; named ``….sqlite``. It is an ordinary curator
  database: it opens with ``curator --db FILE`` and ``curator copy`` moves it anywhere.
  Restoring it is that copy back, replacing every row of the database in one
  transaction (``copy --force``).

Before a restore replaces anything, a backup of the current state is taken (a restore
never loses anything, as on SQLite, where the file is set aside). A password of a
``$CURATOR_DB`` URL reaches the tools through ``PGPASSWORD``, never their command line.

**Whose backup.** A database's backups are named after the database and the identity
stored in it (``setting`` key ``database_id``, created by its first backup, as on SQLite):
``pg-NAME-ID-<UTC time>.pgdump``. Retention counts and deletes only the backups with this
database's identity; a restore of another database's backup is refused. The default
folder is ``backups`` beside the default SQLite database (the user data folder).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from curator.errors import CuratorError
from curator.store.backup import BackupCancelled, BackupResult, backup_stamp
from curator.store.backup_identity import DATABASE_ID_KEY, read_database_id
from curator.store.backup_listing import BACKUP_DIR_NAME, backup_problem
from curator.store.backup_partials import created_in_folder
from curator.store.backup_schedule import RECENT, STAMP_FORMAT, backups_to_keep
from curator.store.copy import copy_database, open_apart
from curator.store.db import Store
from curator.store.db_choice import default_db_path
from curator.store.models import utcnow
from curator.store.opened_file import folders_taken_back
from curator.store.pg_tool_watch import (
    Activity,
    ToolGivenUp,
    may_have_committed,
    run_watched,
    tool_tag,
)
from curator.store.pg_url import SECRET_KEYS

DUMP_SUFFIX = ".pgdump"
EXPORT_SUFFIX = ".sqlite"
_NAME = re.compile(r"pg-(?P<db>[A-Za-z0-9_.-]*)-(?P<id>[0-9a-f]{12})-(?P<stamp>\d{8}T\d{12}Z)")


@dataclass(frozen=True)
class PgRestoreReport:
    """A restore that happened: from which backup, and the safety backup taken first."""

    database: str
    backup: Path
    safety: Path

    @property
    def message(self) -> str:
        return (
            f"restored {self.database} from {self.backup}; its previous state was backed up "
            f"as {self.safety}"
        )


def default_pg_backup_dir() -> Path:
    return default_db_path().parent / BACKUP_DIR_NAME


def database_id(store: Store) -> str:
    """The database's identity, created now (one row) if it has none."""
    with store.write():
        rows = store.execute('SELECT "value" FROM "setting" WHERE "key" = ?', (DATABASE_ID_KEY,))
        if rows:
            with contextlib.suppress(TypeError, ValueError):
                value = json.loads(rows[0][0])
                if isinstance(value, str) and value:
                    return value
            store.db.execute_sql('DELETE FROM "setting" WHERE "key" = ?', (DATABASE_ID_KEY,))
        value = uuid.uuid4().hex
        store.db.execute_sql(
            'INSERT INTO "setting" ("key", "value") VALUES (?, ?)',
            (DATABASE_ID_KEY, json.dumps(value)),
        )
        return value


def _safe(text: str) -> str:
    """``text`` as a file name may hold it: itself when it is made of letters, digits,
    ``_.-`` and has at most 40 of them; else those characters (others as ``_``) cut to 31,
    then ``.`` and 8 hex digits of its hash, so two names never share a file name
    (``prod@1`` and ``prod_401``, two long names that begin alike)."""
    if len(text) <= 40 and re.fullmatch(r"[A-Za-z0-9_.-]*", text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:31] + "." + digest


def name_part(store: Store) -> str:
    """The database's name as its backups' file names hold it."""
    return _safe(urlsplit(store.location).path.strip("/") or "db")


def _prefix(store: Store, own_id: str) -> str:
    return f"pg-{name_part(store)}-{own_id[:12]}-"


def backups_of(own_id: str, folder: Path, database: str | None = None) -> list[Path]:
    """This database's backups in ``folder`` (by the identity in their names), oldest first.

    ``database`` (its name as file names hold it, :func:`name_part`) must match too where
    given: a database made from another with ``CREATE DATABASE ... TEMPLATE`` carries the
    other's identity, and must neither restore nor thin out the other's backups.
    """
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = _NAME.fullmatch(path.stem)
        if (
            match is not None
            and match["id"] == own_id[:12]
            and (database is None or match["db"] == database)
            and path.suffix in (DUMP_SUFFIX, EXPORT_SUFFIX)
            and path.is_file()
        ):
            found.append(path)
    return sorted(found, key=lambda p: (_stamp(p), p.name))


def _stamp(path: Path) -> datetime:
    match = _NAME.fullmatch(path.stem)
    assert match is not None
    return datetime.strptime(match["stamp"], STAMP_FORMAT).replace(tzinfo=UTC)


def _tool_env(url: str) -> tuple[str, dict[str, str]]:
    """The connection for a tool's command line without any secret, and the environment
    that carries the password instead (``ps`` shows command lines, not environments).

    Every form of a secret counts, not only ``user:password@``: libpq reads
    ``?password=`` (and ``?sslpassword=`` ...) from the query as well, so the URL is
    parsed as libpq parses it and rebuilt from its other parameters. A secret other than
    the password has no environment variable to go through and is refused, with the fix.
    """
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    env = dict(os.environ)
    password = params.pop("password", None)
    others = sorted(SECRET_KEYS & params.keys())
    if others:
        raise CuratorError(
            f"the database URL holds {', '.join(others)}, which pg_dump and pg_restore "
            "would show in their command line; put it in a service file (?service=NAME in "
            "~/.pg_service.conf); nothing changed"
        )
    if password is None:
        return url, env
    env["PGPASSWORD"] = password
    return make_conninfo(**params), env


def _run_tool(
    command: list[str],
    env: dict[str, str],
    store: Store,
    what: str,
    outcome: str = "",
    stop: Callable[..., None] | None = None,
) -> None:
    """Run a server tool (:func:`~curator.store.pg_tool_watch.run_watched`); a failure is
    one line: ``what`` failed, its first line, ``outcome``. ``stop`` is asked at every
    look at the tool; what it raises ends the tool (killed) and comes out of here."""
    tag = tool_tag(Path(command[0]).name.replace("_", "-"))
    code, first_line = run_watched(command, env, store, what, outcome, tag, on_look=stop)
    if code != 0:
        raise CuratorError(f"{what} failed: {first_line}{outcome}")


def take_pg_backup(
    store: Store,
    dest_dir: Path | None = None,
    *,
    keep: int = RECENT,
    max_total_bytes: int | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> BackupResult:
    """Back up the PostgreSQL database of ``store`` (see the module docstring).

    ``cancelled`` is asked while the dump or the export runs (a window closing): true,
    the tool is killed, the partial file deleted and :class:`BackupCancelled` raised."""

    def stop(*_: object) -> None:
        if cancelled is not None and cancelled():
            raise BackupCancelled(f"backup of {store.location} stopped; nothing was kept")

    if keep < 1:
        raise CuratorError(f"--keep must be at least 1 (got {keep})")
    started = time.perf_counter()
    folder = dest_dir or default_pg_backup_dir()
    with folders_taken_back(folder):  # as a SQLite backup's
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or exc
            raise CuratorError(f"cannot create the backup folder {folder}: {reason}") from exc
        return _back_up_into(store, folder, started, keep, max_total_bytes, stop)


def _back_up_into(
    store: Store,
    folder: Path,
    started: float,
    keep: int,
    max_total_bytes: int | None,
    stop: Callable[..., None],
) -> BackupResult:
    """The backup of :func:`take_pg_backup` into ``folder``, which exists (``started``:
    when the backup began, by ``time.perf_counter()``; ``stop``: raises when cancelled)."""
    own_id = database_id(store)
    pg_dump = shutil.which("pg_dump")
    suffix = DUMP_SUFFIX if pg_dump else EXPORT_SUFFIX
    name = _prefix(store, own_id) + backup_stamp()
    final = folder / (name + suffix)
    partial = folder / (name + ".partial")
    try:
        # the name taken at once: a folder holding it is no other failed run's to take back
        os.close(created_in_folder(partial))
        if pg_dump:
            url, env = _tool_env(str(store.db.database))
            what = f"pg_dump of {store.location}"
            wait = f"--lock-wait-timeout={int(store.busy_timeout_s * 1000)}"
            dump = [pg_dump, "--format=custom", wait, f"--file={partial}", url]
            _run_tool(dump, env, store, what, stop=stop)
            pg_restore = shutil.which("pg_restore") or "pg_restore"
            listing = [pg_restore, "--list", str(partial)]
            _run_tool(listing, env, store, f"the check of {final.name}")
        else:
            export = open_apart(partial, busy_timeout_s=store.busy_timeout_s)
            try:
                copy_database(store, export, progress=stop)
                with export.write():  # the export carries the identity of its database
                    export.db.execute_sql(
                        'INSERT INTO "setting" ("key", "value") VALUES (?, ?)',
                        (DATABASE_ID_KEY, json.dumps(own_id)),
                    )
                export.db.execute_sql("PRAGMA journal_mode=DELETE")
            finally:
                export.close()
            for side in ("-wal", "-shm"):
                partial.with_name(partial.name + side).unlink(missing_ok=True)
            problem = backup_problem(partial)
            if problem is not None:
                raise CuratorError(f"the export of {store.location} is not sound: {problem}")
        partial.replace(final)
    finally:
        for path in (partial, *(partial.with_name(partial.name + s) for s in ("-wal", "-shm"))):
            path.unlink(missing_ok=True)
    prune_pg_backups(
        own_id, folder, recent=keep, max_total_bytes=max_total_bytes, database=name_part(store)
    )
    return BackupResult(final, final.stat().st_size, time.perf_counter() - started)


def prune_pg_backups(
    own_id: str,
    folder: Path,
    *,
    recent: int = RECENT,
    max_total_bytes: int | None = None,
    database: str | None = None,
) -> list[Path]:
    """The age rule and the size bound of SQLite's backups, on this database's own."""
    own = backups_of(own_id, folder, database)
    keep = backups_to_keep([_stamp(p) for p in own], utcnow(), recent=recent)
    deleted = [p for p in own if _stamp(p) not in keep]
    kept = [p for p in own if _stamp(p) in keep]
    if max_total_bytes is not None:
        total = sum(p.stat().st_size for p in kept)
        for path in kept[:-1]:
            if total <= max_total_bytes:
                break
            total -= path.stat().st_size
            deleted.append(path)
    for path in deleted:
        path.unlink(missing_ok=True)
    return deleted


def restore_pg_backup(
    store: Store, backup: Path | None = None, backup_dir: Path | None = None
) -> PgRestoreReport:
    """Put ``backup`` (default: this database's newest) in place of the database's
    content, after a safety backup taken into the backup's folder; a backup of another
    database is refused."""
    folder = backup_dir or (backup.parent if backup is not None else default_pg_backup_dir())
    own_id = database_id(store)
    if backup is None:
        own = backups_of(own_id, folder, name_part(store))
        if not own:
            raise CuratorError(
                f"no backup of {store.location} was found in {folder}; nothing changed"
            )
        backup = own[-1]
    match = _NAME.fullmatch(backup.stem)
    if not backup.is_file() or backup.suffix not in (DUMP_SUFFIX, EXPORT_SUFFIX) or not match:
        raise CuratorError(
            f"{backup} is not a backup of a PostgreSQL database (pg-NAME-ID-TIME.pgdump or "
            ".sqlite); nothing changed"
        )
    if match["id"] != own_id[:12]:
        raise CuratorError(
            f"refused: {backup} is a backup of another database (id {match['id']}), not of "
            f"{store.location} (id {own_id[:12]}); nothing changed"
        )
    if match["db"] != name_part(store):
        raise CuratorError(
            f"refused: {backup} is a backup of the database {match['db']}, not of "
            f"{store.location} (one made from the other carries its identity); nothing "
            f"changed. If it is this database's under an old name, rename the file to "
            f"pg-{name_part(store)}-{match['id']}-{match['stamp']}{backup.suffix}"
        )
    if backup.suffix == DUMP_SUFFIX:
        pg_restore = shutil.which("pg_restore")
        if pg_restore is None:
            raise CuratorError(
                f"{backup} needs pg_restore, which is not installed; nothing changed"
            )
        url, env = _tool_env(str(store.db.database))
        unchanged = "; nothing changed"
        listing = [pg_restore, "--list", str(backup)]
        _run_tool(listing, env, store, f"the check of {backup}", unchanged)
        safety = take_pg_backup(store, folder, keep=10_000).path
        store.close()  # its connection would hold the tables pg_restore replaces
        command = [
            pg_restore,
            "--clean",
            "--if-exists",
            "--single-transaction",
            "--no-owner",
            "--exit-on-error",
            f"--dbname={url}",
            str(backup),
        ]
        _restore_watched(command, env, store, backup, safety)
    else:
        problem = backup_problem(backup)
        if problem is not None:
            raise CuratorError(f"the backup cannot be restored: {problem}; nothing changed")
        theirs = read_database_id(backup)  # the name says one thing; the content decides
        if theirs is not None and theirs != own_id:
            raise CuratorError(
                f"refused: {backup} is a backup of another database (id {theirs[:12]}), not "
                f"of {store.location} (id {own_id[:12]}); nothing changed"
            )
        safety = take_pg_backup(store, folder, keep=10_000).path
        export = open_apart(backup, read_only=True, create=False)
        try:
            copy_database(export, store, force=True)
        finally:
            export.close()
    return PgRestoreReport(store.location, backup, safety)


def _restore_watched(
    command: list[str], env: dict[str, str], store: Store, backup: Path, safety: Path
) -> None:
    """Run pg_restore, cancelling it when it waits for a lock longer than the busy timeout.

    A dump sets ``lock_timeout = 0`` first thing, so pg_restore would wait for ever on a
    table another session reads (a window left open); its statements are watched from
    ``store``'s own connection instead, and a cancelled restore rolls back as a whole.
    """
    tag = tool_tag("restore")
    unchanged = f"; nothing changed (its previous state is also in {safety})"
    waiting_since: float | None = None
    cancelled = False

    def watch_locks(rows: Activity) -> None:
        nonlocal waiting_since, cancelled
        waiting = [pid for pid, _state, kind, *_ in rows if kind == "Lock"]
        if not waiting:
            waiting_since = None
            return
        waiting_since = waiting_since or time.monotonic()
        if not cancelled and time.monotonic() - waiting_since > store.busy_timeout_s:
            store.execute("SELECT pg_cancel_backend(?)", (int(waiting[0]),))
            cancelled = True

    what = f"pg_restore of {backup}"
    try:
        code, first_line = run_watched(command, env, store, what, "", tag, watch_locks)
    except ToolGivenUp as exc:
        if may_have_committed(exc.rows):  # asked to commit, then silent: either may be
            raise CuratorError(
                f"{exc}; it had asked the server to commit, so the restore may have been "
                f"applied: check the database (its previous state is in {safety})"
            ) from exc
        raise CuratorError(f"{exc}{unchanged}") from exc
    if cancelled:
        raise CuratorError(
            f"busy: another session holds tables of {store.location} that the restore must "
            f"replace (waited {store.busy_timeout_s:g} s); close the window or the other "
            f"program and try again{unchanged}"
        )
    if code != 0:
        raise CuratorError(f"{what} failed: {first_line}{unchanged}")
