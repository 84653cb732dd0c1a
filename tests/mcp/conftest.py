"""A curator database with demo data and a few known patterns, for the agent-side tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from curator.core.scoring import rank_key
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import Pattern, utcnow

PATTERNS = [
    ("Check the disk quota before writing large build artifacts.", 0.9),
    ("Retry flaky network calls with exponential backoff.", 0.6),
    ("Summarise long logs before sending them to the model.", 0.3),
]


@pytest.fixture()
def memory_db(tmp_path: Path) -> Path:
    """The demo database plus three patterns with known words and importance."""
    path = tmp_path / "memory.db"
    store = Store(path)
    create_demo(store)
    now = utcnow()
    with store.write():
        for text, importance in PATTERNS:
            Pattern.create(
                text=text,
                importance=importance,
                distilled_at=now,
                rank_key=rank_key(importance, now),
            )
    store.close()
    return path


def _table_counts(path: Path) -> dict[str, int]:
    store = Store(path, read_only=True)
    try:
        names = [r[0] for r in store.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: int(store.execute(f'SELECT count(*) FROM "{n}"')[0][0]) for n in names}
    finally:
        store.close()


@pytest.fixture()
def table_counts() -> Callable[[Path], dict[str, int]]:
    """Rows per table: what a refused or read-only call must leave unchanged."""
    return _table_counts
