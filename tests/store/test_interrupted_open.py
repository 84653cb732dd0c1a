"""An open stopped at any moment (Ctrl-C, SIGTERM) leaves the new file free to take back.

``curator copy a.sqlite new.sqlite`` stopped just as ``new.sqlite`` appeared left it behind
(15 times in 30 with SIGINT): the store being opened kept its connection, whose lock made
the take-back find the file "in use". Now an open that is stopped closes what it opened.

Fault injection (a test double, named as such): a real signal lands at a moment nobody
can choose, so a trace function raises ``KeyboardInterrupt`` where Python would run a
signal handler: just after each statement the opening runs (the moment of the copy's
failures: ``PRAGMA journal_mode=wal`` had run, and its cursor, not yet read, held the
new file's lock), every one of them; and at any line of the store's code or peewee's.
"""

from __future__ import annotations

import inspect
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import peewee
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.take_back import Made

_WATCHED = ("/curator/store/", "/peewee.py")

Tracer = Callable[[FrameType, str, Any], Any]


def _lines_until(limit: int | None) -> tuple[Tracer, list[int]]:
    """A trace function counting the lines run in the watched files, raising
    ``KeyboardInterrupt`` at line ``limit`` (None: never); and the count so far."""
    count = [0]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
            if count[0] == limit:
                raise KeyboardInterrupt
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename.replace("\\", "/")
        return local if any(part in name for part in _WATCHED) else None

    return calls, count


def _after_statements(limit: int | None) -> tuple[Tracer, list[int]]:
    """A trace function counting the moments just after a statement ran (peewee's
    ``cursor.execute`` returned, the cursor not yet handed back), raising
    ``KeyboardInterrupt`` at moment ``limit`` (None: never); and the count so far."""
    source, first = inspect.getsourcelines(peewee.Database._execute_cursor)
    ran = first + next(i for i, line in enumerate(source) if "cursor.execute(" in line)
    count = [0]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno > ran:
            count[0] += 1
            if count[0] == limit:
                raise KeyboardInterrupt
            return None  # once for each statement
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code is peewee.Database._execute_cursor.__code__ else None

    return calls, count


def _open_traced(path: Path, tracer: Tracer) -> Store:
    sys.settrace(tracer)
    try:
        return Store(path)
    finally:
        sys.settrace(None)


def _count(make: Callable[[int | None], tuple[Tracer, list[int]]]) -> int:
    tracer, count = make(None)
    _open_traced(Path(tempfile.mkdtemp()) / "counted.sqlite", tracer).close()
    return count[0]


LINES = _count(_lines_until)
STATEMENTS = _count(_after_statements)


def test_the_counts_cover_the_making_of_the_schema() -> None:
    assert LINES > 500 and STATEMENTS > 20  # a new file: its check, schema and pragmas


def _stopped_open_is_taken_back(folder: Path, tracer: Tracer, where: str) -> None:
    path = folder / "sub" / "new.sqlite"
    made = Made.before_opening(path)
    try:
        store = _open_traced(path, tracer)
    except KeyboardInterrupt:
        made.take_back()
        assert list(folder.iterdir()) == [], f"stopped {where}"
    else:  # the stop came after the last moment watched: the store is whole
        store.close()
        assert path.is_file()


@pytest.mark.parametrize("at", range(1, STATEMENTS + 1))
def test_an_open_stopped_after_any_statement_leaves_the_new_file_to_be_taken_back(
    tmp_path: Path, at: int
) -> None:
    tracer, _ = _after_statements(at)
    _stopped_open_is_taken_back(tmp_path, tracer, f"after statement {at} of {STATEMENTS}")


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(at=st.integers(min_value=1, max_value=LINES))
def test_an_open_stopped_at_any_line_leaves_the_new_file_to_be_taken_back(
    tmp_path: Path, at: int
) -> None:
    tracer, _ = _lines_until(at)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # one an example
    _stopped_open_is_taken_back(folder, tracer, f"at line {at} of {LINES}")
