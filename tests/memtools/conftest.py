"""Fixtures for the memory-tool formats: a real SQLite file and files shaped like the real ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store(tmp_path / "curator.sqlite")
    yield db
    db.close()
