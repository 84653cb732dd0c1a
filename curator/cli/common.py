"""What every subcommand shares: global options, the lazily opened store, output.

Which commands may create a missing database is one table, :data:`DATABASE_USE`: a
mistyped ``--db`` in a cron job must stop with "no database at PATH" (exit 2, nothing
created), not hand the agent the empty memory of a database made on the spot.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.core.jsonsafe import dumps
from curator.core.redact import redact
from curator.core.textsafety import escape_controls, escape_json_controls
from curator.errors import CuratorError

if TYPE_CHECKING:  # the store (and peewee) is imported on first use: --help stays cheap
    from curator.store.db import Store
    from curator.store.take_back import Made

Handler = Callable[["CommandContext"], int]

CREATES = "creates"
"""Creates the database when it is missing: that is what the command is for."""
OPENS = "opens"
"""Needs an existing database: a missing one is refused (exit 2) unless ``--create``."""
RESTORES = "restores"
"""Puts a backup in place: may create the file, in a folder that exists (or ``--create``)."""
NO_DATABASE = "none"
"""Never opens the database."""

DATABASE_USE: dict[str, str] = {
    "demo": CREATES,
    "import": CREATES,
    "watch": OPENS,
    "import-knowledge": CREATES,
    "gold import": CREATES,
    "gold export": OPENS,
    "restore": RESTORES,
    "models": NO_DATABASE,
    "export": OPENS,
    "stats": OPENS,
    "classify": OPENS,
    "distill": OPENS,
    "runs": OPENS,
    "run": OPENS,
    "review": OPENS,
    "decide": OPENS,
    "commit": OPENS,
    "undo": OPENS,
    "label": OPENS,
    "history": OPENS,
    "audit": OPENS,
    "retire": OPENS,
    "settings": OPENS,
    "insights": OPENS,
    "replay": OPENS,
    "backup": OPENS,
    "compact": OPENS,
    "mcp": OPENS,
    "copy": OPENS,
}
"""Every command (``"gold import"``: a command and its action) and what it may do with a
missing database; a test checks that every command of the parser is here. The commands
that bring data in (episodes, existing knowledge, a gold set) create one, as the demo
does; the ones that read or change what is there refuse. A command missing from the table
may not create one. The window (no command) creates the default database on its first
run, as before."""


class OutputError(CuratorError):
    """Standard output could not be written (a full disk, a closed file): exit code 1.

    Not 2: the command's work may be done (a commit is committed); only its report is lost.
    """

    exit_code = 1


SQLITE_INT_MAX = 2**63 - 1
"""SQLite stores 64-bit signed integers; a larger id or count cannot even be looked up."""


def integer(text: str) -> int:
    """argparse type: an integer SQLite can hold; anything else is a usage error (exit 2)."""
    digits = text.strip().lstrip("+-")
    if not digits.isdigit() or not digits.isascii():
        raise argparse.ArgumentTypeError(f"not an integer: {text[:40]!r}")
    if len(digits) > 19 or abs(int(text)) > SQLITE_INT_MAX:
        raise argparse.ArgumentTypeError(
            f"{text[:40]} is out of range (at most {SQLITE_INT_MAX} in absolute value)"
        )
    return int(text)


def utf8_text(text: str) -> str:
    """argparse type: text that can be stored (arguments that are not UTF-8 arrive with
    lone surrogates, which SQLite refuses half way through a write)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("the text is not valid UTF-8") from None
    return text


def add_common_options(parser: argparse.ArgumentParser, *, suppress_defaults: bool) -> None:
    """``--db`` and ``--json`` are accepted before and after the subcommand.

    On subparsers the defaults are suppressed so a value given before the subcommand is
    not overwritten by the subparser's default.
    """
    default: Any = argparse.SUPPRESS if suppress_defaults else None
    parser.add_argument(
        "--db",
        metavar="PATH",
        default=default,
        help="database file, or a postgresql://USER@HOST:PORT/NAME URL without a password "
        "(default: $CURATOR_DB, else the user data directory)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress_defaults else False,
        help='print one JSON document on stdout (on failure too: {"error": ..., "exit": N})',
    )
    parser.add_argument(
        "--create",
        action="store_true",
        default=argparse.SUPPRESS if suppress_defaults else False,
        help="create the database if it does not exist (without it, only demo, the imports "
        "and the window create one)",
    )


@contextlib.contextmanager
def writing_stdout() -> Iterator[None]:
    """Turn a failed write to stdout (other than a closed pipe) into an OutputError."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OutputError(
            f"cannot write the output to standard output: {reason}; the command itself ran"
        ) from exc


class _ClosedOutput(io.TextIOBase):
    """Standard output the caller closed (``>&-``): Python leaves ``sys.stdout`` None.

    Every write fails as a write to a closed descriptor does, so the command reports it
    (OutputError, one line, exit code 1) instead of stopping on ``None.write``.
    """

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def ensure_standard_streams() -> None:
    """Give the streams a caller closed something to stand for them.

    A closed stdout becomes :class:`_ClosedOutput` (writes are reported as lost); a closed
    stderr the null device (there is nowhere to say anything; the exit code still
    tells). A closed stdin stays None: the readers of ``-`` say there is none.
    """
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process
    for stream in (sys.stdout, sys.stderr):
        # A stream whose encoding cannot write a character (PYTHONIOENCODING=ascii, a C
        # locale's ASCII) writes it as \uXXXX: still one line, still valid JSON, where
        # it raised UnicodeEncodeError from whatever printed a path or a text.
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors=_ESCAPE_ERRORS)


def _escape_as_json(exc: UnicodeError) -> tuple[str, int]:
    """The codec error handler of :func:`ensure_standard_streams`: each character the
    encoding cannot write as JSON's ``\\uXXXX`` (a surrogate pair above U+FFFF)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    escaped = []
    for ch in exc.object[exc.start : exc.end]:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), exc.end


_ESCAPE_ERRORS = "curator-json-escape"
codecs.register_error(_ESCAPE_ERRORS, _escape_as_json)


def print_error_document(message: str, exit_code: int) -> None:
    """``{"error": ..., "exit": N}``: the one JSON document of a failed ``--json`` run.

    Best effort: a stdout that cannot be written has the error on stderr already.
    """
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(dumps({"error": message, "exit": exit_code}) + "\n")
        sys.stdout.flush()


class CommandContext:
    """The parsed arguments plus the resources a command may need, opened on first use."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.json: bool = bool(getattr(args, "json", False))
        self.create: bool = bool(getattr(args, "create", False))
        self.debug = os.environ.get("CURATOR_DEBUG", "") not in ("", "0")
        self.emitted = False  # a result document is on stdout: a failure adds none
        self.failed = False  # a failure was said: one line, one document per run
        self._store: Store | None = None
        self.extra_stores: list[Store] = []  # more databases a command opened (copy)
        self._made: Made | None = None  # what opening the database file may have made

    @property
    def db_path(self) -> Any:
        from curator.store.db_choice import resolve_db_path

        return resolve_db_path(getattr(self.args, "db", None))

    @property
    def db_source(self) -> str:
        """What chose the database: ``--db``, ``$CURATOR_DB``, ``the profile``, ``default``."""
        from curator.store.db_choice import db_path_source

        return db_path_source(getattr(self.args, "db", None))

    @property
    def db_display(self) -> str:
        """The database for messages and documents: a URL never shows its password."""
        from curator.store.pg_url import display_url

        location = self.db_path
        return display_url(location) if isinstance(location, str) else str(location)

    def db_file(self, what: str) -> Path:
        """The SQLite file, for what works only on a file (backup, restore, compact).

        A PostgreSQL database is refused with the server's own tool for ``what``.
        """
        location = self.db_path
        if isinstance(location, str):
            raise CuratorError(
                f"{what} works on a SQLite file; {self.db_display} is a PostgreSQL database: "
                "use pg_dump and pg_restore for it"
            )
        return Path(location)

    @property
    def database_use(self) -> str:
        """This command's row of :data:`DATABASE_USE` (OPENS when it is not listed)."""
        command = getattr(self.args, "command", None) or ""
        action = getattr(self.args, "action", None)
        if f"{command} {action}" in DATABASE_USE:
            return DATABASE_USE[f"{command} {action}"]
        return DATABASE_USE.get(command, OPENS)

    def missing_database_message(self) -> str:
        from curator.store.db_choice import missing_database_message

        return missing_database_message(self.db_path, self.db_source)

    def empty_database_message(self) -> str:
        from curator.store.db_choice import empty_database_message

        return empty_database_message(self.db_path, self.db_source)

    @property
    def store(self) -> Store:
        if self._store is None:
            from curator.store.db import Store
            from curator.store.db_choice import busy_timeout_from_env

            # Refuses (exit 2, file untouched) a damaged, foreign or newer database, and
            # opens a read-only one for reading; see curator.store.opening. A missing
            # one is created only by the commands made for it (DATABASE_USE) or --create.
            location = self.db_path
            if not isinstance(location, str):  # a file: what opening it may create
                from curator.store.take_back import Made

                self._made = Made.before_opening(Path(location))
            self._store = Store(
                location,
                busy_timeout_s=busy_timeout_from_env(),
                create=self.create or self.database_use == CREATES,
                missing_message=self.missing_database_message(),
                empty_message=self.empty_database_message(),
            )
            self._mark_abandoned_runs(self._store)
        return self._store

    def _mark_abandoned_runs(self, store: Store) -> None:
        """Every start marks runs whose process died as ``abandoned`` (best effort).

        A database we may not write (read-only, busy) is still readable: the runs stay
        as they are until a start that can write.
        """
        import peewee

        from curator.store.liveness import mark_abandoned_runs

        try:
            for run_id in mark_abandoned_runs(store):
                self.info(f"curator: note: run {run_id} was abandoned (its process is gone)")
        except (peewee.OperationalError, CuratorError) as exc:
            self.info(f"curator: note: abandoned runs not checked: {exc}")

    def emit(self, document: Any, human: str | Callable[[], str] | None = None) -> None:
        """Print the result: the JSON document with ``--json``, else the human text.

        Both may carry stored text; neither ever puts a control character on the terminal
        (:mod:`curator.core.textsafety`: shown escaped, e.g. ``\\x1b``). A stdout that cannot
        take it (``> /dev/full``) is an OutputError, one line; a reader that went away
        (``| head``) stays a BrokenPipeError for ``main``.
        """
        with writing_stdout():
            if self.json:
                text = escape_json_controls(dumps(document)) + "\n"
                # from its first byte: a failure now (a Ctrl-C while a reader is slow)
                # must not append a second document to the part already out
                self.emitted = True
                sys.stdout.write(text)
            elif human is not None:
                text = human() if callable(human) else human
                if text:
                    self.emitted = True
                    print(escape_controls(text))
            sys.stdout.flush()
        self.emitted = True

    def info(self, message: str) -> None:
        """Progress and notes for a person: stderr, so ``--json`` output stays one document."""
        print(escape_controls(message), file=sys.stderr, flush=True)

    def fail(self, message: str, exit_code: int) -> None:
        """The one-line error on stderr, and with ``--json`` its document on stdout.

        The document is printed only when no result was (exactly one document per run),
        and only the first failure is said (a second Ctrl-C while the first is handled).
        """
        if self.failed:
            return
        self.failed = True
        first_line = escape_controls(redact(" ".join(message.split()).strip()))
        print(f"curator: error: {first_line}", file=sys.stderr, flush=True)
        if self.json and not self.emitted:
            self.emitted = True
            print_error_document(first_line, exit_code)

    def discard_created(self) -> None:
        """A failed command takes back the database it created on opening.

        A command allowed to create a database opens (and so creates) it before it checks
        the rest of its input; when it then refuses (exit 2), or every file it was named
        was unreadable (exit 1), the new file holds nothing but the schema, and removing
        it (and the folders made for it) keeps the promise that a failure changes nothing.
        A file that had zero bytes is given its zero bytes back. Only what holds nothing,
        of this command or of another process (:mod:`curator.store.take_back`): an import
        that kept one file of three keeps its database.
        """
        if self._made is not None:
            self.close()
            self._made.take_back()
            self._made = None

    def close(self) -> None:
        for store in self.extra_stores:
            store.dispose()
        self.extra_stores = []
        if self._store is not None:
            self._store.dispose()
            self._store = None
