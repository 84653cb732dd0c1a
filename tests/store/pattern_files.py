"""Small real SQLite databases of ours for the backup and restore tests: one pattern in
each, and what a database holds read back with plain ``sqlite3``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from curator.store.db import Store
from curator.store.models import Pattern, utcnow


def database_with(path: Path, text: str = "kept") -> Path:
    """A database at ``path`` holding one pattern, ``text``."""
    with Store(path) as store, store.write():
        Pattern.create(text=text, importance=0.5, distilled_at=utcnow(), rank_key=0.5)
    return path


def pattern_texts(path: Path) -> list[str]:
    """The patterns' texts in ``path`` (through its -wal, if any), oldest first."""
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM pattern ORDER BY id")]
