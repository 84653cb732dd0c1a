"""Schema migrations: fresh database, upgrade from the previous version, refusal of a newer one."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from curator.store.db import SchemaTooNewError, Store, StoreError
from curator.store.migrations import LATEST_VERSION, MIGRATIONS


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_fresh_database_gets_latest_schema_and_pragmas(tmp_path: Path) -> None:
    store = Store(tmp_path / "fresh.sqlite")
    assert store.schema_version == LATEST_VERSION
    assert store.execute("PRAGMA journal_mode") == [("wal",)]
    assert store.execute("PRAGMA foreign_keys") == [(1,)]
    assert store.execute("PRAGMA synchronous") == [(1,)]  # NORMAL
    assert store.execute("PRAGMA busy_timeout")[0][0] >= 1000
    assert store.integrity_check() == "ok"
    store.close()
    assert {"episode", "pattern", "candidate", "changeset", "setting"} <= _tables(
        tmp_path / "fresh.sqlite"
    )


def test_upgrade_from_previous_version_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,"
        " classify_truncated) VALUES ('h1', 'hello', '2026-01-01T00:00:00.000000+00:00', 's',"
        " '{}', '2026-01-01T00:00:00.000000+00:00', 0)"
    )
    conn.commit()
    conn.close()
    assert "setting" not in _tables(path)

    store = Store(path)
    assert store.schema_version == LATEST_VERSION
    assert store.execute("SELECT text FROM episode") == [("hello",)]
    assert store.execute("SELECT name FROM sqlite_master WHERE name = 'pattern_rank'")
    store.close()


def test_top_k_query_uses_the_rank_index(tmp_path: Path) -> None:
    store = Store(tmp_path / "plan.sqlite")
    plan = store.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM pattern WHERE status = 'active' "
        "ORDER BY rank_key DESC, distilled_at DESC, id LIMIT 50"
    )
    details = " ".join(str(row[-1]) for row in plan)
    assert "pattern_rank" in details
    assert "TEMP B-TREE" not in details  # no sort step: the index delivers the order
    store.close()


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE future (x)")
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.commit()
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(SchemaTooNewError, match="newer"):
        Store(path)

    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not Path(str(path) + "-wal").exists()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StoreError, match="not a SQLite database"):
        Store(path)
    assert path.read_text().startswith("these are my notes")


def test_failed_migration_rolls_back_entirely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: a migration whose second statement fails leaves version 1 intact."""
    path = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    broken = (MIGRATIONS[0], ("CREATE TABLE half_done (x)", "THIS IS NOT SQL"))
    monkeypatch.setattr("curator.store.engine.MIGRATIONS", broken)
    with pytest.raises(StoreError):
        Store(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "half_done" not in names
    finally:
        conn.close()
