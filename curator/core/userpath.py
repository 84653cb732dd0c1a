"""Paths a person typed, with ``~`` expanded the way a shell would, or refused in one line.

``~name`` of a user the system does not know has no home to expand to; Python raises
RuntimeError there, which would surface as an internal error (exit 3) in the middle of
a command. It is a path nobody can mean, so it is refused as unusable input (exit 2)
before anything is opened or created (a shell would keep it literally, and ``--create``
would then make a folder named ``~name`` in the current directory).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from curator.errors import CuratorError

__all__ = ["name_room", "part_path", "sqlite_special_name", "user_path"]


def shown_path(name: object, limit: int = 120) -> str:
    """A path for a message: whole, or its start and end around "…" when longer than
    ``limit`` (a name the system refuses as too long would fill the terminal)."""
    text = str(name)
    return text if len(text) <= limit else f"{text[: limit // 2]}…{text[-limit // 3 :]}"


def user_path(raw: str | os.PathLike[str], what: str = "the path") -> Path:
    """``raw`` as a Path with a leading ``~`` or ``~name`` expanded (CuratorError, exit 2,
    for the home of an unknown user)."""
    try:
        return Path(raw).expanduser()
    except RuntimeError:
        head = os.fspath(raw).split("/", 1)[0][:40]
        raise CuratorError(
            f"{what} {os.fspath(raw)[:80]!r} starts with {head}, the home of an unknown "
            "user; nothing was opened"
        ) from None


def part_path(target: Path) -> Path:
    """A fresh name beside ``target`` to write it under before renaming it into place.

    Hidden and unique, and short whatever the target's name: the longest name a disk
    allows (255 bytes) plus ".part" would itself be too long to create."""
    return target.with_name(f".{target.name[:32]}.{os.urandom(4).hex()}.part")


def sqlite_special_name(raw: str) -> str | None:
    """Why ``raw``, a database named by a person as typed, names no database file (None:
    it does). ``:memory:`` and ``file:`` URIs mean something else to SQLite; opened as it
    reads them, a copy "into" ``:memory:`` reported success and kept nothing, and
    ``file:x.sqlite`` opened ``x.sqlite`` itself. Asked of the text as typed, before it
    becomes a path: ``./:memory:`` and ``./file:x`` name files, and are opened as such
    (by their absolute paths, :func:`curator.store.opening.file_name`)."""
    if raw == ":memory:":
        return (
            "':memory:' is SQLite's name for a database kept in memory only, which is lost "
            "when the program ends; give a database file's path"
        )
    if raw.startswith("file:"):
        return (
            f"{raw[:80]!r} is a SQLite URI, which the curator does not open: give the "
            "database file's path (a full one for a file whose name starts with file:)"
        )
    if raw.lower().startswith(("sqlite:", "sqlite3:")):
        # SQLAlchemy's and others' URLs: as a path, a nested folder "sqlite:" was made
        return (
            f"{raw[:80]!r} is a database URL of another tool, which the curator does not "
            "read: give the database file's path (a full one for a file whose name starts "
            "with sqlite:)"
        )
    return _mistyped_connection(raw)


_URL_FORM = "postgresql://USER@HOST:PORT/NAME"
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
"""A drive letter (``C:\\…``) before a colon, not a user name."""

_LIBPQ_KEYS = frozenset(
    {
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "service",
        "sslmode",
        "sslpassword",
        "options",
        "application_name",
        "connect_timeout",
    }
)
"""libpq's common connection keywords: two of them as ``key=value`` words, and nothing
else, make a connection string, not a file's name."""


def _connection_string(text: str) -> bool:
    """Whether ``text`` reads as libpq's ``key=value`` connection string: a password
    given that way, or two words or more that are all ``key=value`` with a known key
    (``host=x.sqlite`` alone stays a file's name). Read word by word, never by a pattern
    that could backtrack."""
    # libpq allows blanks around "=": taken out side by side, without a pattern
    sides = text.split("=")
    for i in range(len(sides)):
        if i > 0:
            sides[i] = sides[i].lstrip(" \t")
        if i < len(sides) - 1:
            sides[i] = sides[i].rstrip(" \t")
    text = "=".join(sides)
    try:
        # no path is longer than PATH_MAX (4,096): past it, shlex's word building (which
        # grows each word a character at a time) is not worth its quadratic time
        words = shlex.split(text) if len(text) <= 4096 else text.split()
    except ValueError:  # an unbalanced quote
        words = text.split()
    keys = [w.split("=", 1)[0].strip().casefold() for w in words if "=" in w]
    if any(k in ("password", "sslpassword") for k in keys):
        return True
    return len(words) >= 2 and len(keys) == len(words) and any(k in _LIBPQ_KEYS for k in keys)


def _mistyped_connection(raw: str) -> str | None:
    """Why ``raw`` is a database connection written wrong rather than a file's path
    (None: it may be a path). Taken for a path, ``postgresql:/ana:pw@host/db`` made the
    folders ``postgresql:/ana:pw@host`` and every message printed the password; so each
    of these is refused, and quoted with anything that may be a password masked:

    * any URL (``scheme://…``: ``postgres+psycopg://``, ``jdbc:postgresql://``, a
      misspelt scheme), which is never a file's path here;
    * a PostgreSQL scheme without its ``//`` (``postgresql:/…``, ``postgres:…``);
    * ``USER:PASSWORD@HOST…`` without a scheme (``//user:pw@host`` too);
    * libpq's ``key=value`` connection string (:func:`_connection_string`).

    A name that is an existing file is that file, whatever it looks like (a database
    made before this check, or on purpose), and ``./NAME`` always names a file.
    """
    text = raw.strip()
    if "://" in text or re.match(r"(?i)postgres\w*\s*(?::|//)", text):
        what = "a URL the curator does not read"
    elif re.match(r"/*[A-Za-z_][^/\\\s:@]*:[^\s@]*@", text) and not _DRIVE.match(text):
        what = "a PostgreSQL URL without postgresql://"
    elif _connection_string(text):
        what = "a key=value connection string, which the curator does not read"
    else:
        return None
    if os.path.lexists(raw):
        return None
    from curator.core.redact import shown_url

    return (
        f"{shown_url(text, 80)!r} looks like {what}: write {_URL_FORM} (the password in "
        "~/.pgpass or $PGPASSWORD), or give a database file's path (./NAME for a file "
        "whose name only looks like one)"
    )


def name_room(folder: Path, longest: str) -> tuple[int, int] | None:
    """(bytes, limit) when the file name ``longest`` is longer than ``folder``'s file
    system allows (``folder``, or the nearest folder above it that exists), else None:
    what a database's name must leave room for (its ``-wal``, its backups' time stamps)
    is said before anything is written, not as the operating system's "File name too
    long" half way."""
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    try:
        limit = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows): the common limit
        limit = 255
    size = len(os.fsencode(longest))
    return (size, limit) if size > limit else None
