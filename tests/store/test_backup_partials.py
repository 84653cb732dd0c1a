"""A backup killed half way (``kill -9``, a crash) left its partial copy for ever; the next
backup of the same database removes it, and never one that a live backup is writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from curator.cli import main
from curator.store.backup_partials import claimed, sweep_stale

STAMP = "20260101T000000000000Z"


def _demo(tmp_path: Path) -> Path:
    db = tmp_path / "db.sqlite"
    assert main(["--db", str(db), "demo"]) == 0
    return db


def test_the_next_backup_removes_what_a_killed_one_left(tmp_path: Path) -> None:
    db = _demo(tmp_path)
    folder = tmp_path / "backups"
    folder.mkdir()
    left = [folder / f"db.sqlite-{STAMP}.partial", folder / f"db.sqlite-{STAMP}.partial-journal"]
    for path in left:
        path.write_bytes(b"half a copy")
    others = [  # not partial backups of this database: kept
        folder / "db.sqlite-not-a-time.partial",
        folder / f"other.sqlite-{STAMP}.partial",
        folder / f"db.sqlite-{STAMP}.sqlite.partial-notes",
    ]
    for path in others:
        path.write_bytes(b"someone else's")
    assert main(["--db", str(db), "backup", "--dir", str(folder)]) == 0
    assert not any(path.exists() for path in left)
    assert all(path.read_bytes() == b"someone else's" for path in others)
    assert len(list(folder.glob("db.sqlite-*.sqlite"))) == 1


def test_a_partial_backup_being_written_is_never_swept(tmp_path: Path) -> None:
    """The writer's lock is taken by its own open of the file: another open (another
    process, or this one) cannot take it while the writer holds it."""
    db = _demo(tmp_path)
    folder = tmp_path / "backups"
    folder.mkdir()
    partial = folder / f"db.sqlite-{STAMP}.partial"
    with claimed(partial):
        assert sweep_stale(folder, db) == []
        assert main(["--db", str(db), "backup", "--dir", str(folder)]) == 0
        assert partial.exists()
    assert sweep_stale(folder, db) == [partial] and not partial.exists()


def test_a_killed_writer_lets_go_of_its_partial_copy(tmp_path: Path) -> None:
    """A real process holds the claim and is killed with SIGKILL: its lock goes with it."""
    db = _demo(tmp_path)
    folder = tmp_path / "backups"
    folder.mkdir()
    partial = folder / f"db.sqlite-{STAMP}.partial"
    code = (
        "import sys, time; from pathlib import Path\n"
        "from curator.store.backup_partials import claimed\n"
        "with claimed(Path(sys.argv[1])):\n"
        "    print('claimed', flush=True); time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(partial)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "claimed\n"
        assert sweep_stale(folder, db) == []
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
    deadline = time.monotonic() + 10
    while sweep_stale(folder, db) != [partial]:  # the kernel drops the lock as it reaps
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not partial.exists()


def test_a_journal_whose_copy_is_gone_is_swept_by_the_next_backup(tmp_path: Path) -> None:
    """A copy stopped by a full disk was removed and its -journal stayed (now the copy's
    side files go with it): no later backup removed such a journal. Another database's,
    or one not named for a time, is not touched."""
    db = _demo(tmp_path)
    folder = tmp_path / "backups"
    folder.mkdir()
    orphan = folder / f"db.sqlite-{STAMP}.partial-journal"
    orphan.write_bytes(b"the journal of a copy that is gone")
    kept = [
        folder / f"other.sqlite-{STAMP}.partial-journal",
        folder / "db.sqlite-not-a-time.partial-journal",
        folder / f"db.sqlite-{STAMP}.sqlite-journal",
    ]
    for path in kept:
        path.write_bytes(b"someone else's")
    assert main(["--db", str(db), "backup", "--dir", str(folder)]) == 0
    assert not orphan.exists()
    assert all(path.read_bytes() == b"someone else's" for path in kept)
