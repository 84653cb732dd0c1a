"""Backups (checked, rotated); a damaged database is refused at start and restored on request."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.store.backup import backup_database, list_backups
from curator.store.backup_identity import ensure_database_id
from curator.store.backup_listing import newest_good_backup
from curator.store.db import Store
from curator.store.migrations import LATEST_VERSION
from curator.store.models import Pattern
from curator.store.opening import DamagedDatabaseError, check_file
from curator.store.restore import restore_backup
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
    # The database's identity first: a first backup writes it, and that write would wait
    # the whole busy timeout (30 s) for the lock this test holds, then go without it.
    assert ensure_database_id(store.path, 1.0) is not None
    # A write transaction of this connection is open while the backup copies the file.
    with store.write():
        Pattern.update(importance=0.99).execute()
        copy = backup_database(store)
    conn = sqlite3.connect(copy)
    assert conn.execute("SELECT max(importance) FROM pattern").fetchone()[0] < 0.99
    conn.close()


def test_a_backup_of_a_busy_database_waits_only_the_busy_timeout(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the write lock: the first backup's one-row identity write
    waits ``CURATOR_BUSY_TIMEOUT`` (0.2 s here), not the 30 s default, then the copy goes
    on without the identity."""
    make_patterns(store)
    monkeypatch.setenv("CURATOR_BUSY_TIMEOUT", "0.2")
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    copies: list[Path] = []
    worker = threading.Thread(target=lambda: copies.append(backup_database(store)))
    try:
        worker.start()
        worker.join(timeout=10)  # far less than the default: only the setting gets here
        finished = not worker.is_alive()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        worker.join()
    assert finished, "the backup waited past CURATOR_BUSY_TIMEOUT for the write lock"
    assert copies and copies[0].exists()


def test_sound_or_missing_database_opens(store: Store, tmp_path: Path) -> None:
    make_patterns(store)
    assert check_file(store.path).version == LATEST_VERSION
    assert not check_file(tmp_path / "absent.sqlite").exists


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(4096 * 2, min(len(data), 4096 * 2 + 3000)):
        data[offset] = 0x55
    path.write_bytes(bytes(data))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_damaged_database_is_refused_then_restored_on_request(tmp_path: Path) -> None:
    """Opening refuses a damaged file (untouched, names the backup); restore swaps it."""
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
    before = _digest(path)
    with pytest.raises(DamagedDatabaseError) as refused:
        Store(path)
    assert refused.value.backup == good and str(good) in str(refused.value)
    assert _digest(path) == before and wal.exists()  # nothing renamed, nothing written
    assert newest_good_backup(path) == good

    with pytest.raises(CuratorError, match="cannot be restored"):
        restore_backup(path, bad)
    assert _digest(path) == before

    report = restore_backup(path)
    assert report.backup == good
    assert ".damaged-" in report.moved[0].name and _digest(report.moved[0]) == before
    assert any(p.name.endswith("-wal") for p in report.moved) and not wal.exists()
    assert not list(tmp_path.glob("*.restoring-*"))
    reopened = Store(path)
    assert reopened.integrity_check() == "ok" and Pattern.select().count() == 4
    reopened.close()


def test_file_that_is_not_a_database_is_refused_without_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "curator.sqlite"
    path.write_bytes(b"hello world" * 1000)
    with pytest.raises(DamagedDatabaseError, match="not a SQLite database") as refused:
        Store(path)
    assert refused.value.backup is None and "no good backup" in str(refused.value)
    with pytest.raises(CuratorError, match="no good backup"):
        restore_backup(path)
    assert path.read_bytes().startswith(b"hello world")
