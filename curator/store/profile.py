"""The person's profile: the reviewer's name and the database the window opens.

Both are kept in a small file per OS account, not in the database: the database's
``setting`` table is shared by everyone who opens it, and which database to open cannot
be read from the database itself.

Several people may curate one database (a PostgreSQL server shared by a team), so the
name that goes on every decision, relabel and commit cannot live in the database's
``setting`` table: every reviewer would read the same one. It lives in a small JSON file
in the user's configuration folder (one per OS account: the profile), written by the
window's Settings pane. Which name is in force, first match wins:

1. ``$CURATOR_REVIEWER`` (a script, a shared account, a test);
2. the profile's saved name;
3. the OS user name (``getpass.getuser()``), so a decision is never anonymous.

``$CURATOR_CONFIG_DIR`` moves the profile folder (tests, portable installs). A name is
one line of at most :data:`MAX_REVIEWER_CHARS` printable characters; anything else is
refused with one sentence and nothing is saved.

The database (``"database"``) is a SQLite file's absolute path or a ``postgresql://`` URL
without a password (the profile is a plain file: ``~/.pgpass``, ``$PGPASSWORD`` or a
service file hold the password). It comes after ``--db`` and ``$CURATOR_DB`` and before
the default database (:func:`curator.store.db_choice.resolve_db_path`). A saved database that
is no longer valid, or a profile that cannot be read, is an error, never a silent switch
to another database. Every save writes a file beside the profile and renames it into
place, so a crash never leaves half a profile.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import stat
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from curator.core.textsafety import control_problem
from curator.core.userpath import part_path, sqlite_special_name, user_path
from curator.errors import CuratorError
from curator.store.pg_url import PROFILE_SOURCE, check_postgres_url, is_postgres_url

REVIEWER_ENV = "CURATOR_REVIEWER"
CONFIG_DIR_ENV = "CURATOR_CONFIG_DIR"
DATABASE_KEY = "database"
MAX_REVIEWER_CHARS = 80
FALLBACK_REVIEWER = "reviewer"
"""The name when neither the environment, the profile nor the OS names anyone."""


def profile_path() -> Path:
    """The profile file (it may not exist yet)."""
    base = os.environ.get(CONFIG_DIR_ENV)
    if not base:
        import platformdirs  # only where the profile is read: a named database needs none

        base = platformdirs.user_config_dir("memory-curator", appauthor=False)
    return Path(base) / "profile.json"


BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols that draw nothing: the Hangul fillers and the braille blank."""


def _shows(char: str) -> bool:
    """Whether ``char`` draws something of its own: a letter, digit, punctuation or
    symbol (a combining mark alone does not), and not one that looks blank."""
    return unicodedata.category(char)[0] in "LNPS" and char not in BLANK_LOOKING


def check_reviewer(name: str, source: str = "the reviewer name") -> str:
    """``name`` without surrounding blanks, or CuratorError (one line) when unusable.

    Printable characters only (``str.isprintable``): no control or format character (a
    right-to-left override would make one name look like another), no line or paragraph
    separator, no byte that is not text (a name from the environment that is not UTF-8).
    """
    cleaned = name.strip()
    if not cleaned:
        raise CuratorError(f"{source} is empty; give the name your decisions should carry")
    problem = control_problem(cleaned, source)
    if problem is not None or "\n" in cleaned:
        raise CuratorError(problem or f"{source} must be one line")
    odd = next((c for c in cleaned if not c.isprintable()), None)
    if odd is not None:
        raise CuratorError(
            f"{source} holds U+{ord(odd):04X}, which is not a printable character; "
            "use letters, digits, spaces and punctuation"
        )
    if not any(_shows(c) for c in cleaned):
        raise CuratorError(
            f"{source} shows nothing (only marks or blank-looking characters); use letters, "
            "digits or punctuation that tell reviewers apart"
        )
    if len(cleaned) > MAX_REVIEWER_CHARS:
        raise CuratorError(
            f"{source} is {len(cleaned):,} characters; at most {MAX_REVIEWER_CHARS} are allowed"
        )
    return cleaned


MAX_PROFILE_BYTES = 1 << 20
"""A profile is a few lines: a larger file is not one (and is not read whole)."""


def _load_profile(path: Path) -> dict[str, Any] | None:
    """The profile's document, None when there is none; CuratorError (one sentence) when
    it exists and is not a profile. Opened without waiting (a named pipe put in its place
    never blocks a command) and judged on what was opened: a regular file, at most
    :data:`MAX_PROFILE_BYTES`, a JSON object (nesting too deep is no profile either)."""
    unusable = f"the profile {path} is not a JSON object; correct or delete it"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CuratorError(f"the profile {path} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise CuratorError(f"the profile {path} is not a regular file; delete it")
        raw = handle.read(MAX_PROFILE_BYTES + 1)
    if len(raw) > MAX_PROFILE_BYTES:
        raise CuratorError(unusable)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise CuratorError(unusable) from None
    if not isinstance(doc, dict):
        raise CuratorError(unusable)
    return doc


def _read_profile() -> dict[str, Any]:
    """The profile's document; {} when there is none or it cannot be read (a reviewer name
    is then the next rule's: a hand-edited profile never blocks a decision)."""
    try:
        return _load_profile(profile_path()) or {}
    except CuratorError:
        return {}


def _write_profile(path: Path, doc: dict[str, Any]) -> None:
    """Written beside the file and renamed into place: never half a file (its folder
    exists: :func:`_profile_changed` made it to lock it)."""
    part = part_path(path)
    try:
        part.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        part.replace(path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise CuratorError(f"the profile {path} could not be written ({exc.strerror})") from None


LOCK_WAIT_S = 10.0
"""How long a save waits for another's (a save takes milliseconds)."""


def _take_lock(fd: int, path: Path) -> None:
    """The profile's lock, waited for at most :data:`LOCK_WAIT_S`: a program that holds
    it for longer is named in one sentence, and nothing waits for ever."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise CuratorError(
                    f"another program has held the profile {path} for {LOCK_WAIT_S:g} s; "
                    "nothing was saved: try again"
                ) from None
            time.sleep(0.02)


@contextlib.contextmanager
def _profile_changed() -> Iterator[dict[str, Any]]:
    """The profile's document to change, then written: one process at a time (a lock on
    its folder), so two saves at once never lose one; a profile that exists and is
    not one is refused, never replaced (what it held would be lost)."""
    path = profile_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)  # its folder: no file left
    except OSError as exc:
        raise CuratorError(f"the profile {path} could not be written ({exc.strerror})") from None
    try:
        _take_lock(lock, path)
        try:
            doc = _load_profile(path)
        except CuratorError as exc:
            raise CuratorError(f"{exc}; nothing was saved") from None
        doc = doc if doc is not None else {}
        yield doc
        _write_profile(path, doc)
    finally:
        os.close(lock)  # closing releases the lock


def saved_reviewer() -> str | None:
    """The name saved in the profile, or None (no profile, or an unreadable one)."""
    name = _read_profile().get("reviewer")
    if not isinstance(name, str):
        return None
    try:
        return check_reviewer(name)
    except CuratorError:
        return None  # a hand-edited profile never blocks a decision: the next rule applies


def save_reviewer(name: str | None) -> None:
    """Save the profile's name (None or "" removes it: the OS user name applies again)."""
    checked = None if name is None or not name.strip() else check_reviewer(name)
    with _profile_changed() as doc:
        if checked is None:
            doc.pop("reviewer", None)
        else:
            doc["reviewer"] = checked


def check_database(value: str) -> str | None:
    """The database as the profile keeps it, or CuratorError (one line) when unusable.

    None for an empty value (the default database); a ``postgresql://`` URL made
    canonical, refused when it names a password; otherwise a SQLite file's absolute path
    (``~`` expanded), which need not exist yet: the window creates it.
    """
    cleaned = value.strip()
    if not cleaned:
        return None
    try:
        cleaned.encode("utf-8")
    except UnicodeEncodeError:
        raise CuratorError("the database holds characters that are not text") from None
    if "\x00" in cleaned:
        raise CuratorError("the database path contains a NUL character")
    problem = control_problem(cleaned, "the database")
    if problem is not None:
        raise CuratorError(problem)
    if any(char.isspace() and char != " " for char in cleaned):
        raise CuratorError("the database must be one line, without tabs or line breaks")
    if is_postgres_url(cleaned):
        return check_postgres_url(cleaned, PROFILE_SOURCE)
    special = sqlite_special_name(cleaned)
    if special is not None:
        raise CuratorError(special)
    path = os.path.abspath(user_path(cleaned, "the database path"))
    if path != path.strip():
        raise CuratorError(f"the database path {path!r} ends with a space")
    if os.path.isdir(path):
        raise CuratorError(f"{path} is a folder: name the database file in it")
    return path


def saved_database() -> str | None:
    """The database saved in the profile, or None when it names none.

    A profile that exists but cannot be read, or names a database that is no longer
    valid, is a CuratorError: falling back to another database would open one the
    person never chose.
    """
    path = profile_path()
    try:
        doc = _load_profile(path)
    except CuratorError as exc:
        raise CuratorError(f"{exc}, or name the database with --db") from None
    if doc is None:
        return None
    value = doc.get(DATABASE_KEY)
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise CuratorError("it is not text")
        written = os.path.expanduser(value.strip())
        if written and not is_postgres_url(written) and not os.path.isabs(written):
            # Settings saves absolute paths; a relative one names another file in every
            # folder a command is started from
            raise CuratorError(f"{value.strip()!r} is a relative path")
        return check_database(value)
    except CuratorError as exc:
        raise CuratorError(
            f"the database saved in the profile {path} is not usable ({exc}); name a "
            "database with --db and choose another in Settings, or correct the profile"
        ) from None


def save_database(value: str | None) -> str | None:
    """Save the database the window and the commands open (None or "": the default).

    Returns what was saved (see :func:`check_database`); an unusable value is refused
    with one sentence and the profile is left as it was.
    """
    database = check_database(value or "")
    with _profile_changed() as doc:
        if database is None:
            doc.pop(DATABASE_KEY, None)
        else:
            doc[DATABASE_KEY] = database
    return database


def os_user() -> str:
    """The OS account's name, or :data:`FALLBACK_REVIEWER` when the system names none."""
    try:
        return check_reviewer(getpass.getuser())
    except (CuratorError, OSError, KeyError, ImportError):
        return FALLBACK_REVIEWER


def reviewer_name() -> str:
    """The name in force: ``$CURATOR_REVIEWER``, else the profile's, else the OS user's.

    An unusable ``$CURATOR_REVIEWER`` is refused (CuratorError), never silently replaced:
    a script that set it means its decisions to carry that name.
    """
    env = os.environ.get(REVIEWER_ENV)
    if env is not None and env.strip():
        return check_reviewer(env, f"${REVIEWER_ENV}")
    return saved_reviewer() or os_user()
