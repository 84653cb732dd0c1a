"""Shared helpers for the follow tests: a real database and real log files in tmp_path."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.models import Episode


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "db.sqlite") as s:
        yield s


def line(text: str) -> bytes:
    return (json.dumps({"text": text, "source": "agent"}, ensure_ascii=False) + "\n").encode()


def texts(store: Store) -> Counter[str]:
    with store.read():
        return Counter(e.text for e in Episode.select(Episode.text))


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)
