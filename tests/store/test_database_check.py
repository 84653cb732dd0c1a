"""What Settings ▸ Database says about a database: where it is, and what a Check found."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.store.database_check import check_database, describe_location
from curator.store.db import Store
from curator.store.migrations import LATEST_VERSION


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("/data/curator.sqlite", "SQLite file /data/curator.sqlite"),
        ("postgresql://ana@db.example:5432/memory", "PostgreSQL at db.example:5432/memory as ana"),
        ("postgresql://ana:hunter2@db.example/memory", "PostgreSQL at db.example/memory as ana"),
        (
            "postgresql://db.example/memory?user=bo&port=6000",
            "PostgreSQL at db.example:6000/memory as bo",
        ),
        ("postgresql:///memory?host=/run/postgresql", "PostgreSQL at /run/postgresql/memory"),
        ("postgresql:///memory", "PostgreSQL at the local socket/memory"),
        ("postgresql://?service=curator", "PostgreSQL at the local socket/service curator"),
    ],
)
def test_where_a_database_is_never_shows_a_password(location: str, shown: str) -> None:
    assert describe_location(location) == shown


def test_a_check_writes_nothing_and_names_an_older_schema_as_an_upgrade_to_come(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    with Store(path) as store:
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION - 1}")
    conn.close()
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    found = check_database(path)
    assert found == (
        f"SQLite file {path}, schema version {LATEST_VERSION - 1} (upgraded to "
        f"{LATEST_VERSION} when the window opens it), 0 episodes."
    )
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


def test_a_file_that_is_no_database_is_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.sqlite"
    notes.write_text("shopping list\n" * 20, encoding="utf-8")
    with pytest.raises(CuratorError) as refused:
        check_database(notes)
    assert "not a SQLite database" in str(refused.value) and "\n" not in str(refused.value)


def test_an_empty_file_is_named_empty_not_unreadable(tmp_path: Path) -> None:
    """An empty SQLite file was "cannot read ...: no such table: episode"."""
    zero = tmp_path / "zero.db"
    zero.write_bytes(b"")
    empty = tmp_path / "empty.db"
    with sqlite3.connect(empty) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")
    conn.close()
    for path in (zero, empty):
        before = path.read_bytes()
        assert check_database(path) == (
            f"{path} is empty: no curator tables yet; the window sets them up when it opens."
        )
        assert path.read_bytes() == before


def test_a_check_waits_for_a_connection_no_longer_than_its_timeout() -> None:
    """libpq counts the connect timeout in whole seconds (less than 2 counts as 2): the
    check passes its own timeout on, rounded up, instead of the store's ten seconds."""
    from curator.store.pg_connection import CONNECT_TIMEOUT_S, postgres_database

    assert postgres_database("postgresql://h/db", 1.0).connect_params["connect_timeout"] == (
        CONNECT_TIMEOUT_S
    )
    shorter = postgres_database("postgresql://h/db", 1.0, connect_timeout_s=3)
    assert shorter.connect_params["connect_timeout"] == 3
