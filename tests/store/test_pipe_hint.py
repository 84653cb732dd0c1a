"""A named pipe is refused by every file reader; only the one that reads standard input
says to pipe into it.

``curator gold import FIFO`` answered "pipe it into 'curator import -' instead": following
that imported a gold set's lines as unlabelled episodes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.pipeline.gold import import_gold
from curator.store.db import Store
from curator.store.importer import import_file
from curator.store.knowledge_file import read_knowledge

HINT = "curator import -"


@pytest.fixture
def pipe(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)  # nobody writes: no reader may wait for a writer
    return path


def test_the_episode_import_says_to_pipe_into_it(tmp_path: Path, pipe: Path) -> None:
    store = Store(tmp_path / "curator.sqlite")
    try:
        (error,) = import_file(store, pipe).errors
    finally:
        store.close()
    assert "is a named pipe" in str(error) and HINT in str(error)


def test_the_other_readers_name_the_pipe_without_that_hint(tmp_path: Path, pipe: Path) -> None:
    (error,) = read_knowledge(pipe).errors
    assert "is a named pipe" in str(error) and HINT not in str(error)
    store = Store(tmp_path / "curator.sqlite")
    try:
        with pytest.raises(CuratorError, match="is a named pipe") as refused:
            import_gold(store, pipe)
    finally:
        store.close()
    assert HINT not in str(refused.value)
