"""A file written to while an import reads it imports nothing, and says why.

A JSONL file is read as a stream (and counted first, for the progress bar): a rewrite in
place half way spliced the old version's first lines to the new version's last ones,
and the import said nothing (40,000 lines: 16,471 old and 23,529 new were stored).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from curator.store import importer
from curator.store.db import Store
from curator.store.models import Episode

LINES = 300


def _write(path: Path, tag: str) -> None:
    path.write_text(
        "".join(
            json.dumps({"text": f"{tag} line {i}", "source": "log"}) + "\n" for i in range(LINES)
        ),
        encoding="utf-8",
    )


def _reading_then(action: Callable[[], None]) -> Callable[[io.BufferedReader, str], Iterator[Any]]:
    """The importer's reader, with ``action`` done after the file's first line was read."""
    read = importer.read_episodes

    def reader(handle: io.BufferedReader, name: str) -> Iterator[Any]:
        for number, item in enumerate(read(handle, name)):
            if number == 1:
                action()
            yield item

    return reader


def _texts(store: Store) -> list[str]:
    return [e.text for e in Episode.select(Episode.text).order_by(Episode.id)]


@pytest.mark.parametrize("change", ["rewrite", "append", "truncate"])
def test_a_file_written_to_while_it_is_read_imports_nothing(tmp_path: Path, change: str) -> None:
    """Fault injection: another program writes to the file in place after its first line
    was read."""
    path = tmp_path / "log.jsonl"
    _write(path, "old")

    def written_to() -> None:
        if change == "rewrite":
            _write(path, "new")
        elif change == "append":
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"text": "late"}) + "\n")
        else:
            with path.open("r+b") as out:
                out.truncate(200)

    store = Store(tmp_path / "c.sqlite")
    try:
        with mock.patch.object(importer, "read_episodes", _reading_then(written_to)):
            report = importer.import_file(store, path)
        assert report.imported == 0
        [error] = report.errors
        assert error.line == 0 and "written to while it was read" in error.reason
        assert "nothing of it was imported" in error.reason
        assert _texts(store) == []
    finally:
        store.close()


def test_a_file_replaced_by_a_rename_is_imported_as_it_was_opened(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    _write(path, "old")

    def replaced() -> None:
        _write(tmp_path / "next.jsonl", "new")
        (tmp_path / "next.jsonl").replace(path)

    store = Store(tmp_path / "c.sqlite")
    try:
        with mock.patch.object(importer, "read_episodes", _reading_then(replaced)):
            report = importer.import_file(store, path)
        assert report.imported == LINES and not report.errors
        assert _texts(store) == [f"old line {i}" for i in range(LINES)]
    finally:
        store.close()


def test_standard_input_and_an_untouched_file_import_whole(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    _write(path, "old")
    store = Store(tmp_path / "c.sqlite")
    try:
        assert importer.import_file(store, path, progress=lambda *_: None).imported == LINES
        _write(path, "piped")
        piped = io.BytesIO(path.read_bytes())
        assert importer.import_file(store, "-", stdin=piped).imported == LINES
        assert len(_texts(store)) == 2 * LINES
    finally:
        store.close()
