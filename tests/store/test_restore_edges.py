"""Backups and restores at the edges: names the file system cannot hold, a restore of the
database onto itself, copies left by a killed restore, a set-aside that fails half way,
and backups taken at the same time that prune each other's. Real SQLite files."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store.pattern_files import database_with, pattern_texts

from curator.errors import CuratorError
from curator.store import restore as restore_module
from curator.store.backup import backup_stamp, list_backups, take_backup
from curator.store.backup_identity import ensure_database_id
from curator.store.backup_partials import ClaimTaken, claimed
from curator.store.db import Store
from curator.store.opening import StoreError
from curator.store.restore import restore_backup


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
    db = database_with(folder / ("d" * (size - len(".db")) + ".db"))
    try:
        result = take_backup(db)
    except CuratorError as exc:
        assert "too long" in str(exc) and "\n" not in str(exc)
        assert not (folder / "backups").exists()
        assert sorted(p.name for p in folder.iterdir()) == [db.name]
    else:
        assert result.path.is_file() and list_backups(db) == [result.path]
    assert pattern_texts(db) == ["kept"]


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
    db = database_with(tmp_path / ("r" * (_name_max(tmp_path) - spare - 3) + ".db"))
    backup = database_with(tmp_path / "b.sqlite", "from the backup")
    with pytest.raises(CuratorError, match="too long"):
        restore_backup(db, backup)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([db.name, backup.name])
    assert pattern_texts(db) == ["kept"]


def test_restoring_the_database_onto_itself_is_refused(tmp_path: Path) -> None:
    db = database_with(tmp_path / "self.db")
    link = tmp_path / "another-name.db"
    link.symlink_to(db.name)
    for same in (db, link):
        with pytest.raises(CuratorError, match="the database itself"):
            restore_backup(db, same)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["another-name.db", "self.db"]


@pytest.mark.parametrize("kind", ["fifo", "socket", "link to a fifo"])
def test_a_restore_onto_a_pipe_or_socket_is_refused_and_it_stays(tmp_path: Path, kind: str) -> None:
    """A ``--db`` naming a pipe, a socket or a device is nobody's database: it is never
    renamed aside for a file (a character device would have been, /dev/null included)."""
    import socket

    backup = database_with(tmp_path / "b.sqlite", "from the backup")
    special = tmp_path / "special"
    listener = None
    if kind == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(special))
    else:
        os.mkfifo(special)
    target = special
    if kind == "link to a fifo":
        target = tmp_path / "link"
        target.symlink_to(special.name)
    try:
        with pytest.raises(CuratorError, match="not a regular file") as info:
            restore_backup(target, backup)
        assert "\n" not in str(info.value)
        names = sorted(p.name for p in tmp_path.iterdir())
        assert names == sorted(["b.sqlite", "special", *(["link"] if target != special else [])])
        assert not special.is_file() and special.exists()
    finally:
        if listener is not None:
            listener.close()


def test_a_copy_left_by_a_killed_restore_is_swept_and_a_held_one_is_not(tmp_path: Path) -> None:
    db = database_with(tmp_path / "m.db")
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
    assert pattern_texts(db) == ["kept"]


def test_a_set_aside_that_fails_half_way_puts_back_what_it_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = database_with(tmp_path / "w.db")
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
    assert pattern_texts(db) == ["kept"]


def test_backups_at_the_same_time_keeping_one_all_succeed(tmp_path: Path) -> None:
    """Eight backups at once with ``keep=1``: each prunes the others', and none fails
    because another deleted its file before it said how big it was."""
    db = database_with(tmp_path / "busy.db")
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


def _crash_after(db: Path, texts: list[str], mode: str, *, in_a_transaction: bool) -> None:
    """Add a pattern per text in a child that then dies without closing or committing
    what is open (as ``kill -9`` would): what SQLite leaves on disk (a -wal, a hot
    -journal) stays."""
    script = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        f"c.execute('PRAGMA journal_mode={mode}')\n"
        "c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "cols = [r[1] for r in c.execute('PRAGMA table_info(pattern)')]\n"
        "cols = [n for n in cols if n not in ('id', 'text')]\n"
        "copy = 'INSERT INTO pattern (text, %s) SELECT ?, %s FROM pattern LIMIT 1' % "
        "(', '.join(cols), ', '.join(cols))\n"
        + ("c.execute('BEGIN')\n" if in_a_transaction else "")
        + "for text in sys.argv[2:]:\n"
        "    c.execute(copy, (text,))\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(db), *texts], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_backup_with_a_wal_of_its_own_is_restored_with_its_commits(tmp_path: Path) -> None:
    """A file set aside by an earlier restore keeps its -wal beside it; restoring it (an
    undo) must bring back what that -wal holds, which the checks already read."""
    source = database_with(tmp_path / "source.db")
    _crash_after(source, ["only in the wal"], "WAL", in_a_transaction=False)
    assert (tmp_path / "source.db-wal").stat().st_size > 0
    expected = pattern_texts(source)  # read through the -wal
    assert "only in the wal" in expected
    target = database_with(tmp_path / "target.db", "target's own")
    with sqlite3.connect(target) as conn:  # the same database, as a restore needs
        conn.execute("UPDATE setting SET value = (SELECT value FROM setting) WHERE 0")
    report = restore_backup(target, source)
    assert pattern_texts(target) == expected
    assert report.moved
    assert not [p for p in tmp_path.iterdir() if ".restoring-" in p.name]


def test_a_hot_journal_is_set_aside_with_itsdatabase_with(tmp_path: Path) -> None:
    """A writer that died in a transaction left a hot -journal: it belongs to the file
    set aside (which needs it), never to the restored copy (which it would damage)."""
    db = database_with(tmp_path / "j.db")
    backup = take_backup(db).path
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    many = [f"row {i} " + "x" * 2000 for i in range(60)]
    _crash_after(db, many, "DELETE", in_a_transaction=True)
    assert (tmp_path / "j.db-journal").stat().st_size > 0
    report = restore_backup(db, backup)
    assert not (tmp_path / "j.db-journal").exists()
    assert any(p.name.endswith("-journal") for p in report.moved)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert pattern_texts(db) == ["kept"]


def test_a_backup_named_for_a_later_time_never_prunes_the_new_one(tmp_path: Path) -> None:
    db = database_with(tmp_path / "k.db")
    first = take_backup(db).path
    later = first.with_name("k.db-20991231T235959000000Z.sqlite")  # the clock was set back
    shutil.copyfile(first, later)
    result = take_backup(db, keep=1)
    assert result.path.is_file(), "the backup just taken was pruned"


def test_restore_without_a_backup_skips_a_link_to_the_database_itself(tmp_path: Path) -> None:
    db = database_with(tmp_path / "h.db")
    good = take_backup(db).path
    os.link(db, good.with_name("h.db-20991231T235959000000Z.sqlite"))
    report = restore_backup(db)
    assert report.backup == good


def test_a_sweep_leaves_another_database_that_bears_a_copys_name(tmp_path: Path) -> None:
    db = database_with(tmp_path / "s.db")
    backup = take_backup(db).path
    closed = database_with(tmp_path / f"s.db.restoring-{backup_stamp()}", "another database")
    ensure_database_id(closed, 5.0)  # another database of ours: an identity of its own
    in_use = database_with(tmp_path / f"s.db.restoring-{backup_stamp()}", "one in use")
    holder = sqlite3.connect(in_use)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("SELECT count(*) FROM pattern").fetchone()
    try:
        restore_backup(db, backup)
        assert pattern_texts(closed) == ["another database"]
        assert in_use.exists() and (tmp_path / f"{in_use.name}-wal").exists()
    finally:
        holder.close()


def test_a_name_claimed_twice_is_refused_and_the_first_claim_keeps_its_file(
    tmp_path: Path,
) -> None:
    partial = tmp_path / f"x.db-{backup_stamp()}.partial"
    with claimed(partial):
        with pytest.raises(ClaimTaken), claimed(partial):
            pass
        assert partial.exists()
    outside = tmp_path / f"x.db-{backup_stamp()}.partial"
    outside.write_bytes(b"another run's")
    with pytest.raises(ClaimTaken), claimed(outside):
        pass
    assert outside.read_bytes() == b"another run's"


def test_a_backup_named_by_a_link_brings_the_wal_beside_its_target(tmp_path: Path) -> None:
    """SQLite reads the -wal beside the file a link names; the restore's copy must hold
    the same, not the main file alone (nor a -wal beside the link, which SQLite skips)."""
    (tmp_path / "kept").mkdir()
    source = database_with(tmp_path / "kept" / "snap.db")
    _crash_after(source, ["only in the wal"], "WAL", in_a_transaction=False)
    link = tmp_path / "snap-link.db"
    link.symlink_to(source)
    expected = pattern_texts(link)
    assert "only in the wal" in expected
    target = database_with(tmp_path / "target.db", "target's own")
    restore_backup(target, link)
    assert pattern_texts(target) == expected


def test_the_copy_a_restore_killed_while_folding_left_is_swept(tmp_path: Path) -> None:
    """Killed while it brought a backup's -wal into its copy: the copy, its -wal and its
    -shm are left, open by no one; the next restore removes all three."""
    db = database_with(tmp_path / "f.db")
    backup = take_backup(db).path
    left = tmp_path / f"f.db.restoring-{backup_stamp()}"
    shutil.copyfile(backup, left)
    _crash_after(left, ["in the killed fold"], "WAL", in_a_transaction=False)
    assert (tmp_path / f"{left.name}-wal").exists()
    restore_backup(db, backup)
    assert sorted(p.name for p in tmp_path.iterdir() if left.name in p.name) == []


def test_a_database_held_open_by_another_process_under_a_copys_name_stays(
    tmp_path: Path,
) -> None:
    db = database_with(tmp_path / "o.db")
    backup = take_backup(db).path
    held = database_with(tmp_path / f"o.db.restoring-{backup_stamp()}", "held elsewhere")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1])\n"
            "c.execute('PRAGMA journal_mode=WAL')\n"
            "c.execute('SELECT count(*) FROM pattern').fetchone()\n"
            "print('open', flush=True)\n"
            "sys.stdin.read()\n",
            str(held),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        restore_backup(db, backup)
        assert pattern_texts(held) == ["held elsewhere"]
    finally:
        holder.communicate("", timeout=30)
