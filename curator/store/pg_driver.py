"""The PostgreSQL driver is imported only by a process that opens a PostgreSQL database.

peewee tries ``import psycopg`` (and ``psycopg2``) when it is itself imported, and where a
driver is installed that alone costs about a tenth of a second at every start, which cron
jobs, shells and agents pay often, mostly for a SQLite file. :func:`hold_back` (called by
the command line before anything imports peewee) marks the drivers absent, so peewee
takes its "not installed" branch; :func:`load` takes the marks back and imports psycopg
3 for real when a ``postgresql://`` database is opened
(:func:`curator.store.pg_connection.postgres_database` hands it to peewee).

No imports beyond the standard library: this module runs before everything else.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_DRIVERS = ("psycopg", "psycopg2", "psycopg2cffi")
_held: set[str] = set()
_HELD_LOCK = threading.Lock()
"""Taken to change the marks: two threads opening PostgreSQL databases at once (the
window's jobs) would both find a mark and both remove it, and one would raise."""


def hold_back() -> None:
    """Mark the drivers absent for peewee's import (only those nothing imported yet)."""
    with _HELD_LOCK:
        for name in _DRIVERS:
            if name not in sys.modules:
                sys.modules[name] = None  # type: ignore[assignment]
                _held.add(name)


def load() -> ModuleType:
    """psycopg 3, imported now (the marks of :func:`hold_back` are taken back first)."""
    with _HELD_LOCK:
        for name in list(_held):
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
            _held.discard(name)
    import logging

    module = importlib.import_module("psycopg")
    # psycopg logs at WARNING what it could not clean up after an error it raises anyway
    # ("error ignored terminating <psycopg.Pipeline ...>" after a refused value): with no
    # handler configured Python prints that on stderr beside the one-line error the
    # store makes of the raised error. Its errors are all raised, so only those stay.
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    return module
