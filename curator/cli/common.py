"""What every subcommand shares: global options, the lazily opened store, output."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import peewee

from curator.core.jsonsafe import dumps
from curator.core.textsafety import escape_controls, escape_json_controls
from curator.errors import CuratorError
from curator.store.db import Store, busy_timeout_from_env, resolve_db_path
from curator.store.liveness import mark_abandoned_runs

Handler = Callable[["CommandContext"], int]

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
        help="database file (default: $CURATOR_DB, else the user data directory)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress_defaults else False,
        help="print one JSON document on stdout",
    )


class CommandContext:
    """The parsed arguments plus the resources a command may need, opened on first use."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.json: bool = bool(getattr(args, "json", False))
        self.debug = os.environ.get("CURATOR_DEBUG", "") not in ("", "0")
        self._store: Store | None = None

    @property
    def db_path(self) -> Any:
        return resolve_db_path(getattr(self.args, "db", None))

    @property
    def store(self) -> Store:
        if self._store is None:
            # Refuses (exit 2, file untouched) a damaged, foreign or newer database, and
            # opens a read-only one for reading; see curator.store.opening.
            self._store = Store(self.db_path, busy_timeout_s=busy_timeout_from_env())
            self._mark_abandoned_runs(self._store)
        return self._store

    def _mark_abandoned_runs(self, store: Store) -> None:
        """Every start marks runs whose process died as ``abandoned`` (best effort).

        A database we may not write (read-only, busy) is still readable: the runs stay
        as they are until a start that can write.
        """
        try:
            for run_id in mark_abandoned_runs(store):
                self.info(f"curator: note: run {run_id} was abandoned (its process is gone)")
        except (peewee.OperationalError, CuratorError) as exc:
            self.info(f"curator: note: abandoned runs not checked: {exc}")

    def emit(self, document: Any, human: str | Callable[[], str] | None = None) -> None:
        """Print the result: the JSON document with ``--json``, else the human text.

        Both may carry stored text; neither ever puts a control character on the terminal
        (:mod:`curator.core.textsafety`: shown escaped, e.g. ``\\x1b``).
        """
        if self.json:
            sys.stdout.write(escape_json_controls(dumps(document)) + "\n")
        elif human is not None:
            text = human() if callable(human) else human
            if text:
                print(escape_controls(text))
        sys.stdout.flush()

    def info(self, message: str) -> None:
        """Progress and notes for a person: stderr, so ``--json`` output stays one document."""
        print(escape_controls(message), file=sys.stderr, flush=True)

    def fail(self, message: str) -> None:
        first_line = " ".join(message.split("\n")).strip()
        print(f"curator: error: {escape_controls(first_line)}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
