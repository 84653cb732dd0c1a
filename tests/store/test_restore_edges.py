"""Backups and restores at the edges: names the file system cannot hold, a restore of the
database onto itself, copies left by a killed restore, a set-aside that fails half way,
and backups taken at the same time that prune each other's. Real SQLite files."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.store import restore as restore_module
from curator.store.backup import backup_stamp, list_backups, take_backup
from curator.store.backup_partials import claimed
from curator.store.db import Store
from curator.store.models import Pattern, utcnow
from curator.store.opening import StoreError
from curator.store.restore import restore_backup


def _database(path: Path, text: str = "kept") -> Path:
    with Store(path) as store, store.write():
        Pattern.create(text=text, importance=0.5, distilled_at=utcnow(), rank_key=0.5)
    return path


def _patterns(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM pattern ORDER BY id")]


def _name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spare=st.integers(min_value=len("-journal"), max_value=48))
def test_a_name_too_long_for_a_backup_is_refused_before_anything_is_written(
    tmp_path: Path, spare: int
) -> None:
    """Any name from the longest a backup's names fit to the longest a database may have
    (its ``-journal`` must fit too): the backup either works or is refused in one
    sentence, and a refusal leaves no backup folder behind."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # one a example
    size = _name_max(folder) - spare
    db = _database(folder / ("d" * (size - len(".db")) + ".db"))
    try:
        result = take_backup(db)
    except CuratorError as exc:
        assert "too long" in str(exc) and "\n" not in str(exc)
        assert not (folder / "backups").exists()
        assert sorted(p.name for p in folder.iterdir()) == [db.name]
    else:
        assert result.path.is_file() and list_backups(db) == [result.path]
    assert _patterns(db) == ["kept"]


@pytest.mark.parametrize("spare", range(len("-journal")))
def test_a_database_whose_side_files_cannot_be_named_is_not_created(
    tmp_path: Path, spare: int
) -> None:
    path = tmp_path / ("n" * (_name_max(tmp_path) - spare - 3) + ".db")
    with pytest.raises(StoreError, match="no room for SQLite's -wal and -journal") as info:
        Store(path)
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_name_too_long_for_a_restore_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    spare = len(".replaced-") + len(backup_stamp()) + len("-wal") - 1
    db = _database(tmp_path / ("r" * (_name_max(tmp_path) - spare - 3) + ".db"))
    backup = _database(tmp_path / "b.sqlite", "from the backup")
    with pytest.raises(CuratorError, match="too long"):
        restore_backup(db, backup)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([db.name, backup.name])
    assert _patterns(db) == ["kept"]


def test_restoring_the_database_onto_itself_is_refused(tmp_path: Path) -> None:
    db = _database(tmp_path / "self.db")
    link = tmp_path / "another-name.db"
    link.symlink_to(db.name)
    for same in (db, link):
        with pytest.raises(CuratorError, match="the database itself"):
            restore_backup(db, same)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["another-name.db", "self.db"]


def test_a_copy_left_by_a_killed_restore_is_swept_and_a_held_one_is_not(tmp_path: Path) -> None:
    db = _database(tmp_path / "m.db")
    backup = take_backup(db).path
    # what a restore killed with SIGKILL leaves: its copy, which no process holds
    left = tmp_path / f"m.db.restoring-{backup_stamp()}"
    left.write_bytes(backup.read_bytes())
    held = tmp_path / f"m.db.restoring-{backup_stamp()}"
    other = tmp_path / f"other.db.restoring-{backup_stamp()}"
    other.write_bytes(b"another database's restore")
    with claimed(held):  # a restore still running in another process holds its copy
        report = restore_backup(db, backup)
        assert not left.exists() and held.exists() and other.exists()
    assert report.moved and report.moved[0].name.startswith("m.db.replaced-")
    assert _patterns(db) == ["kept"]


def test_a_set_aside_that_fails_half_way_puts_back_what_it_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _database(tmp_path / "w.db")
    backup = take_backup(db).path
    (tmp_path / "w.db-wal").write_bytes(b"")  # a -wal left empty (as PERSIST_WAL leaves it)
    (tmp_path / "w.db-shm").write_bytes(b"\0" * 32768)
    files = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    stamp = "20260101T000000000000Z"
    # the clock pinned (a test double for time) so that the -wal's name aside is known:
    # a folder there makes its rename fail for real, after the database's has been done
    monkeypatch.setattr(restore_module, "backup_stamp", lambda: stamp)
    blocker = tmp_path / f"w.db.replaced-{stamp}-wal"
    blocker.mkdir()
    (blocker / "keep").write_text("a folder that is not empty")
    with pytest.raises(CuratorError, match="nothing changed"):
        restore_backup(db, backup)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == files
    assert _patterns(db) == ["kept"]


def test_backups_at_the_same_time_keeping_one_all_succeed(tmp_path: Path) -> None:
    """Eight backups at once with ``keep=1``: each prunes the others', and none fails
    because another deleted its file before it said how big it was."""
    db = _database(tmp_path / "busy.db")
    failures: list[BaseException] = []

    def one(start: threading.Barrier) -> None:
        try:
            start.wait()
            take_backup(db, keep=1, read_only=True)
        except BaseException as exc:
            failures.append(exc)

    for _ in range(3):
        start = threading.Barrier(8)
        threads = [threading.Thread(target=one, args=(start,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert list_backups(db)
