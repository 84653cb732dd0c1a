"""The stepped online backup: progress, a consistent copy, quick_check, cancel, retention."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.store import change_marker
from curator.store.backup import (
    BackupCancelled,
    backup_due,
    list_backups,
    take_backup,
)
from curator.store.backup_schedule import STAMP_FORMAT
from curator.store.db import Store
from curator.store.models import Pattern, utcnow
from curator.store.restore import restore_backup
from review.conftest import make_patterns


def _count(path: Path, table: str = "pattern") -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def _pages(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])
    finally:
        conn.close()


def test_backup_in_steps_reports_progress_passes_quick_check_and_restores(store: Store) -> None:
    make_patterns(store)
    steps: list[tuple[int, int]] = []
    result = take_backup(store.path, pages=1, progress=lambda d, t: steps.append((d, t)))
    total = steps[-1][1]
    assert total == _pages(result.path) > 3 and len(steps) >= total  # one page per step
    assert [d for d, _ in steps] == sorted(d for d, _ in steps) and steps[-1][0] == total
    assert result.size == result.path.stat().st_size and result.seconds >= 0
    conn = sqlite3.connect(result.path)
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()

    with store.write():
        Pattern.delete().execute()
    store.close()
    report = restore_backup(store.path, result.path)
    assert report.backup == result.path and _count(store.path) == 4


def test_a_write_during_the_copy_is_not_blocked_and_not_in_it(store: Store) -> None:
    """One snapshot: another connection commits while the copy is half done, without
    waiting, and the copy neither restarts nor holds half of that write."""
    make_patterns(store)
    store.close()
    writer = sqlite3.connect(store.path, isolation_level=None, timeout=0)  # no waiting
    steps: list[int] = []

    def write_once(done: int, total: int) -> None:
        if not steps:  # raises if blocked; counted the way Store.write counts a change
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("UPDATE pattern SET importance = 0.99")
            change_marker.bump(writer)
            writer.execute("COMMIT")
        steps.append(done)

    try:
        result = take_backup(store.path, pages=1, progress=write_once)
    finally:
        writer.close()
    assert steps == sorted(steps) and len(steps) == _pages(result.path)  # no restart
    assert _count(result.path) == 4
    conn = sqlite3.connect(result.path)
    assert conn.execute("SELECT max(importance) FROM pattern").fetchone()[0] < 0.99
    conn.close()
    assert backup_due(store.path)  # the write came after the backup's start


def test_a_damaged_copy_is_deleted_and_reported(store: Store) -> None:
    make_patterns(store)
    store.close()
    # Damage a b-tree page of the source: the online backup copies pages as they are,
    # so only the check of the copy can tell.
    conn = sqlite3.connect(store.path)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'pattern'").fetchone()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    raw = bytearray(store.path.read_bytes())
    start = (root - 1) * page_size
    raw[start : start + 12] = b"\xde\xad\xbe\xef" * 3
    store.path.write_bytes(bytes(raw))
    with pytest.raises(CuratorError, match=r"failed its quick_check.*the copy was deleted"):
        take_backup(store.path)
    folder = store.path.parent / "backups"
    assert list_backups(store.path) == [] and not folder.exists()  # nor the folder it made


def test_a_cancelled_backup_leaves_nothing(store: Store) -> None:
    make_patterns(store)
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2  # stop after two steps

    with pytest.raises(BackupCancelled):
        take_backup(store.path, pages=1, cancelled=cancelled)
    assert not (store.path.parent / "backups").exists()  # nor the folder it made


def test_a_backup_is_due_only_after_a_change(store: Store) -> None:
    make_patterns(store)
    assert backup_due(store.path)
    take_backup(store.path)
    assert not backup_due(store.path)
    with store.write():
        Pattern.update(importance=0.5).execute()
    assert backup_due(store.path)


def test_old_backups_are_thinned_by_age(store: Store) -> None:
    make_patterns(store)
    first = take_backup(store.path).path
    now = utcnow()
    aged = []
    for days in (1, 2, 10, 11, 40):  # the copies of a month and more
        stamp = (now - timedelta(days=days)).strftime(STAMP_FORMAT)
        aged.append(first.with_name(f"{store.path.stem}-{stamp}.sqlite"))
        shutil.copyfile(first, aged[-1])
    newest = take_backup(store.path, keep=1).path
    kept = list_backups(store.path)
    # keep=1: the newest; one a day for a week (today's newest, days 1 and 2); the newest
    # of the week before (day 10); day 11 is a second one that week, day 40 too old
    assert kept == [aged[2], aged[1], aged[0], newest]
    assert not first.exists() and not aged[3].exists() and not aged[4].exists()
