"""Which backups belong to which database: by file name, and by an identity inside.

Two databases may share a folder and a backup folder (``curator.sqlite`` and
``curator.db``), so a backup must say whose it is, or a ``--keep 1`` of one would delete
the other's backups and a restore of one would swap in the other's content:

* **Name.** A backup is named after the database's whole file name:
  ``curator.sqlite-<UTC time>.sqlite``. Backups taken before this rule were named after
  the name without its suffix (``curator-<time>.sqlite``); such a name is still read as
  this database's as long as it is unambiguous, i.e. no other file next to the database
  could own it (no other file there is named ``curator`` or ``curator.<anything>``
  besides this database and the files SQLite and a restore keep beside it). A database
  without a suffix (``curator``) has one name for both styles, so the same ambiguity
  applies to its id-less backups.
* **Identity.** Each database holds a random id, created once, the first time it is
  backed up, in a row of its ``setting`` table (key :data:`DATABASE_ID_KEY`; the settings
  ignore keys they do not know). The backup API copies it into every backup. A backup
  whose id differs from the database's is another database's, whatever its name: it is
  never pruned as this one's, never chosen as this one's newest good backup, and
  restoring it is refused. Where either side has no id (a backup taken before ids, a
  database never backed up since, or one too damaged to read), the name decides.
* **Links.** A database named through a symbolic link is the file at the end of the
  link (:func:`database_file`): its backups are named after that file and kept in its
  folder, and a restore replaces that file, never the link (replacing the link would
  leave the database as it was while the link named a new file).
* **Copies.** A database copied with ``cp`` carries the original's id. Retention and a
  restore without a named backup go by the file name first, so neither prunes nor picks
  the other's backups; a backup of the original named explicitly may be restored over
  the copy (the same id: the copy's own history up to the copy).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import uuid
from pathlib import Path

from curator.store.backup_schedule import stamp_of
from curator.store.opening import (
    DamagedDatabaseError,
    ForeignDatabaseError,
    SchemaTooNewError,
    StoreError,
    _connect_without_writing,
    check_file,
    connect_existing,
)

DATABASE_ID_KEY = "database_id"
_STAMP = r"\d{8}T\d{12}Z"
_OWN_SIDE_FILES = ("-wal", "-shm", "-journal", ".replaced-", ".damaged-", ".restoring-")
"""What lies next to a database and belongs to it: SQLite's files and a restore's."""


def database_file(db_path: Path) -> Path:
    """The file a database path names: the end of its chain of links (the path itself
    when it is no link, so messages keep the name the user gave)."""
    return Path(os.path.realpath(db_path)) if db_path.is_symlink() else db_path


def backup_file_name(db_path: Path, stamp: str, suffix: str = ".sqlite") -> str:
    """The name of the backup of ``db_path`` started at ``stamp`` (``.partial`` while
    it is being written)."""
    return f"{db_path.name}-{stamp}{suffix}"


def _is_own_side_file(db_path: Path, name: str) -> bool:
    return name == db_path.name or any(
        name.startswith(db_path.name + side) for side in _OWN_SIDE_FILES
    )


def legacy_names_are_ours(db_path: Path) -> bool:
    """Whether old-style backup names (``STEM-<time>.sqlite``) can only be this database's:
    no other file beside it is named ``STEM`` or ``STEM.<suffix>``."""
    stem = db_path.stem
    with contextlib.suppress(OSError):
        for other in db_path.parent.iterdir():
            name = other.name
            if _is_own_side_file(db_path, name) or not (
                name == stem or name.startswith(stem + ".")
            ):
                continue
            if other.is_file():  # a folder (say ``backups`` beside ``backups.db``) owns none
                return False
    return True


def named_backups(db_path: Path, folder: Path) -> list[tuple[Path, bool]]:
    """The files in ``folder`` whose names may make them backups of ``db_path``, oldest
    first, each with whether its name alone says so (else only a matching id does).

    The name alone says so for ``FILE-<time>.sqlite``, and for the old ``STEM-<time>.sqlite``
    while that is unambiguous. A database without a suffix (``curator``) has one name for
    both, so there the old style's ambiguity applies to it too.
    """
    if not folder.is_dir():
        return []
    own = re.compile(re.escape(db_path.name) + "-" + _STAMP + r"\.sqlite")
    legacy = re.compile(re.escape(db_path.stem) + "-" + _STAMP + r"\.sqlite")
    unambiguous = legacy_names_are_ours(db_path)
    suffixless = db_path.stem == db_path.name
    found: list[tuple[Path, bool]] = []
    for path in folder.iterdir():
        if own.fullmatch(path.name):
            by_name = unambiguous or not suffixless
        elif legacy.fullmatch(path.name):
            by_name = unambiguous
        else:
            continue
        if path.is_file():
            found.append((path, by_name))
    return sorted(found, key=lambda item: (stamp_of(item[0].name), item[0].name))


def read_database_id(path: Path) -> str | None:
    """The identity stored in a database or backup file (None: none, or unreadable)."""
    try:
        conn = _connect_without_writing(path, 1.0)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute(
            'SELECT "value" FROM "setting" WHERE "key" = ?', (DATABASE_ID_KEY,)
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
    except (TypeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, str) and value else None


def ensure_database_id(path: Path, timeout: float) -> str | None:
    """The database's identity, created now if it has none (None: it cannot be written).

    A one-row write the first time a database is backed up, so every backup carries it.
    """
    existing = read_database_id(path)
    if existing is not None:
        return existing
    try:
        conn = connect_existing(path, timeout=timeout, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            'INSERT INTO "setting" ("key", "value") VALUES (?, ?) ON CONFLICT ("key") DO NOTHING',
            (DATABASE_ID_KEY, json.dumps(uuid.uuid4().hex)),
        )
        conn.execute("COMMIT")
    except sqlite3.Error:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        return None
    finally:
        conn.close()
    return read_database_id(path)


def belongs_to(own_id: str | None, backup: Path, by_name: bool) -> bool:
    """Whether ``backup`` is a backup of the database whose identity is ``own_id``: the
    ids decide where both are known, else the name (``by_name``, see
    :func:`named_backups`)."""
    if own_id is None:
        return by_name
    theirs = read_database_id(backup)
    return by_name if theirs is None else theirs == own_id


def foreign_backup_problem(db_path: Path, backup: Path) -> str | None:
    """Why ``backup`` must not be restored over ``db_path`` (None: it may be)."""
    own_id = read_database_id(db_path) if db_path.is_file() else None
    if own_id is None:
        return None
    theirs = read_database_id(backup)
    if theirs is None or theirs == own_id:
        return None
    return (
        f"{backup} is a backup of another database (id {theirs[:12]}), not of {db_path} "
        f"(id {own_id[:12]}); nothing changed"
    )


#: The starts of files that are something else than a database, damaged or not: images,
#: documents, archives and compressed files, sound, executables, UTF-16 text's marks.
_OTHER_FORMATS = (
    b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"%!PS", b"{\\rtf", b"PK\x03\x04",
    b"\xd0\xcf\x11\xe0", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd",
    b"7z\xbc\xaf\x27\x1c", b"Rar!", b"\x7fELF", b"ID3", b"OggS", b"RIFF", b"fLaC",
    b"\xff\xfe", b"\xfe\xff",
)  # fmt: skip


def _looks_like_text(first: bytes) -> bool:
    """Text, as no SQLite file's first page is: no NUL byte at all (UTF-8, Latin-1), or
    UTF-16 without its mark (every other byte NUL, the others printable), or a tar
    archive (its header's ``ustar`` at byte 257)."""
    if not first:
        return False
    if b"\x00" not in first or first[257:262] == b"ustar":
        return True
    pairs = [first[i : i + 2] for i in range(0, min(len(first), 1024) - 1, 2)]
    for zero in (0, 1):  # big-endian or little-endian
        printable = sum(
            1
            for pair in pairs
            if pair[zero] == 0 and (32 <= pair[1 - zero] < 127 or pair[1 - zero] in b"\t\n\r")
        )
        if printable >= 0.9 * len(pairs):
            return True
    return False


def target_verdict(db_path: Path) -> tuple[str | None, str]:
    """Why the file at ``db_path`` must not be set aside for a backup (None: it may be),
    and the label it is set aside under: ``replaced`` for a sound database of ours,
    ``damaged`` for anything else. One look (the file's ``quick_check`` costs 0.2 s a
    quarter gigabyte), made before the copy.

    Restore exists to replace a damaged database, so a file that does not open is not
    refused for that alone; but a file that is plainly not ours is: another program's
    SQLite database, a newer version's, text (a SQLite file, damaged or not, has NUL
    bytes in its first page; text has none) or a file of another known format."""
    try:
        check_file(db_path)
    except (ForeignDatabaseError, SchemaTooNewError) as exc:
        return f"{exc}", "damaged"
    except DamagedDatabaseError:
        try:
            with db_path.open("rb") as handle:
                first = handle.read(4096)
        except OSError:
            return None, "damaged"
        if first.startswith(_OTHER_FORMATS) or _looks_like_text(first):
            return (
                f"{db_path} is not a database file (it holds text or another format); "
                "it was not modified"
            ), "damaged"
        return None, "damaged"
    except StoreError:
        return None, "damaged"  # a folder, a pipe, a busy file: the restore says which
    return None, "replaced"
