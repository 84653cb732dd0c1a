"""Shared helpers for the follow tests: a real database and real log files in tmp_path."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.models import Episode


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module that sets ``BOTH_ENGINES = True`` runs each of its ``store`` tests on a
    SQLite file and on a PostgreSQL database (the same test, not a copy of it), except
    the tests its ``SQLITE_ONLY`` names."""
    if "store" not in metafunc.fixturenames or not getattr(metafunc.module, "BOTH_ENGINES", False):
        return
    if metafunc.function.__name__ in getattr(metafunc.module, "SQLITE_ONLY", ()):
        return
    metafunc.parametrize("engine", ["sqlite", "postgresql"])


@pytest.fixture
def engine() -> str:
    """The engine of the ``store`` fixture: SQLite unless the module asks for both."""
    return "sqlite"


@pytest.fixture
def store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    location = tmp_path / "db.sqlite" if engine == "sqlite" else request.getfixturevalue("pg_url")
    with Store(location) as s:
        yield s


def line(text: str) -> bytes:
    return (json.dumps({"text": text, "source": "agent"}, ensure_ascii=False) + "\n").encode()


def texts(store: Store) -> Counter[str]:
    with store.read():
        return Counter(e.text for e in Episode.select(Episode.text))


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)
