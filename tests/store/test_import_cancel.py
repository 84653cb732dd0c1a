"""An import stops when asked to, and a stopped import has written nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.importer import CANCEL_EVERY, PROGRESS_EVERY, ImportCancelled, import_file


def _write(path: Path, lines: int) -> Path:
    path.write_text(
        "".join(
            json.dumps({"text": f"cancel test episode {i}", "timestamp": "2031-01-01T00:00:00Z"})
            + "\n"
            for i in range(lines)
        ),
        encoding="utf-8",
    )
    return path


def _count(store: Store) -> int:
    (count,) = store.execute("SELECT count(*) FROM episode")[0]
    return int(count)


def test_cancel_while_writing_rolls_the_whole_file_back(tmp_path: Path) -> None:
    """Chunks already inserted in the transaction are rolled back: nothing half-written."""
    store = Store(tmp_path / "c.sqlite")
    lines = 3 * PROGRESS_EVERY
    path = _write(tmp_path / "many.jsonl", lines)
    stop = [False]
    writing: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == lines and total == lines and not writing:
            writing.append(0)  # reading finished; the next reports are rows written
        elif writing and done > 0:
            writing.append(done)
            stop[0] = True  # some chunks are in the transaction now

    with pytest.raises(ImportCancelled, match="nothing of it was imported"):
        import_file(store, path, progress=progress, cancelled=lambda: stop[0])
    assert writing[-1] >= PROGRESS_EVERY  # it was stopped half way through writing
    assert _count(store) == 0
    assert import_file(store, path).imported == lines  # and the file imports later
    store.close()


def test_cancel_while_reading_stops_before_the_end_of_the_file(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    path = _write(tmp_path / "many.jsonl", 10 * CANCEL_EVERY)
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) >= 2

    with pytest.raises(ImportCancelled):
        import_file(store, path, cancelled=cancelled)
    assert len(asked) == 2  # stopped at the second check, long before the tenth
    assert _count(store) == 0
    store.close()
