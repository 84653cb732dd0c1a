"""Backups (checked, rotated) and quarantine of a damaged database at start."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.store.backup import (
    backup_database,
    check_or_quarantine,
    list_backups,
    restore_backup,
)
from curator.store.db import Store
from curator.store.models import Pattern
from review.conftest import make_patterns


def _count(path: Path, table: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_backup_is_a_checked_copy_and_rotates(store: Store) -> None:
    make_patterns(store)
    made = [backup_database(store, keep=3) for _ in range(5)]
    kept = list_backups(store.path)
    assert kept == made[-3:]
    assert all(not p.exists() for p in made[:2])
    assert kept[-1].parent == store.path.parent / "backups"
    assert _count(kept[-1], "pattern") == 4
    conn = sqlite3.connect(kept[-1])
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    assert not list((store.path.parent / "backups").glob("*.partial"))

    other = backup_database(store, store.path.parent / "elsewhere", keep=1)
    assert other.parent.name == "elsewhere" and len(list_backups(store.path, other.parent)) == 1
    with pytest.raises(CuratorError, match="at least 1"):
        backup_database(store, keep=0)


def test_backup_sees_only_committed_data(store: Store) -> None:
    make_patterns(store)
    # A write transaction of this connection is open while the backup copies the file.
    with store.write():
        Pattern.update(importance=0.99).execute()
        copy = backup_database(store)
    conn = sqlite3.connect(copy)
    assert conn.execute("SELECT max(importance) FROM pattern").fetchone()[0] < 0.99
    conn.close()


def test_sound_or_missing_database_is_left_alone(store: Store, tmp_path: Path) -> None:
    make_patterns(store)
    assert check_or_quarantine(store.path) is None
    assert check_or_quarantine(tmp_path / "absent.sqlite") is None
    assert store.path.exists()


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(4096 * 2, min(len(data), 4096 * 2 + 3000)):
        data[offset] = 0x55
    path.write_bytes(bytes(data))


def test_damaged_database_is_moved_aside_with_its_wal(tmp_path: Path) -> None:
    path = tmp_path / "curator.sqlite"
    store = Store(path)
    make_patterns(store)
    good = backup_database(store)
    store.close()
    # A newer backup that is itself damaged must not be recommended.
    bad = good.parent / "curator-29991231T235959999999Z.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    assert list_backups(path)[-1] == bad

    _corrupt(path)
    wal = path.with_name(path.name + "-wal")
    wal.write_bytes(b"")
    report = check_or_quarantine(path)
    assert report is not None
    assert not path.exists() and not wal.exists()
    assert report.moved_to.exists() and ".damaged-" in report.moved_to.name
    assert any(p.name.endswith("-wal") for p in report.moved)
    assert report.backup == good
    assert str(good) in report.message and "moved aside" in report.message

    restore_backup(report.backup, path)
    reopened = Store(path)
    assert reopened.integrity_check() == "ok" and Pattern.select().count() == 4
    reopened.close()


def test_file_that_is_not_a_database_is_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "curator.sqlite"
    path.write_bytes(b"hello world" * 1000)
    report = check_or_quarantine(path)
    assert report is not None and report.backup is None
    assert "not a database" in report.problem
    assert "No good backup" in report.message
    assert report.moved_to.read_bytes().startswith(b"hello world")
    with pytest.raises(CuratorError, match="exists"):
        restore_backup(report.moved_to, report.moved_to)
