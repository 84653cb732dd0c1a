"""Attacks on the recovery, settings and liveness paths, each a regression test.

Each test is a way a hostile user, a fault or a second process once broke a promise of
the README's "What happens when things go wrong" section: a restore under a live
connection, saved settings that could not be repaired or that crashed the command, a
model path the system refuses to look up, a run whose pid was reused. The child
processes are the real ``curator`` command (:func:`reliability.harness.run_case`).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.demo import create_demo
from reliability.harness import Expect, row_counts, run_case, sha256_of


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo database (checkpointed into a single file), copied by every test."""
    path = tmp_path_factory.mktemp("template") / "curator.sqlite"
    store = Store(path)
    create_demo(store)
    store.close()
    return path


@pytest.fixture
def demo_db(tmp_path: Path, demo_template: Path) -> Path:
    db = tmp_path / "db.sqlite"
    shutil.copyfile(demo_template, db)
    return db


def _backup_of(db: Path, template: Path) -> Path:
    folder = db.parent / "backups"
    folder.mkdir(exist_ok=True)
    backup = folder / f"{db.stem}-20260101T000000000000Z.sqlite"
    shutil.copyfile(template, backup)
    return backup


# -- restore ----------------------------------------------------------------------------


_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM episode").fetchone()
print("open", flush=True)
sys.stdin.readline()
conn.execute("UPDATE episode SET source = 'written-after' WHERE id = 1")
conn.commit()
conn.close()
print("done", flush=True)
"""


def test_restore_refuses_while_another_process_has_the_database_open(
    demo_db: Path, demo_template: Path
) -> None:
    """A restore under a live connection would lose that process's later writes (they go
    to the file set aside) and SQLite would delete the restored file's -wal by name when
    that connection closed. It must refuse, change nothing, and the writer's row stays.

    The holder is a separate process: in this one, reading the file (the hash) would
    drop the holder's POSIX locks, which belong to the process, not the connection.
    """
    _backup_of(demo_db, demo_template)
    before = sha256_of(demo_db)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(demo_db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "open"
        run_case(
            ["--db", str(demo_db), "restore"],
            Expect(code=1, message=r"busy: .* is open in another process.*nothing changed"),
        )
        names = [p.name for p in demo_db.parent.iterdir()]
        assert not [n for n in names if ".restoring-" in n or ".replaced-" in n], names
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "done"
    finally:
        holder.communicate(timeout=60)
    assert sha256_of(demo_db) != before  # the holder's write landed in the live file
    conn = sqlite3.connect(demo_db)
    try:
        row = conn.execute("SELECT source FROM episode WHERE id = 1").fetchone()
        assert row[0] == "written-after"
    finally:
        conn.close()


def test_restore_goes_ahead_once_the_other_process_closed(
    demo_db: Path, demo_template: Path
) -> None:
    """The guard is no false alarm: the same database, closed, is restored."""
    _backup_of(demo_db, demo_template)
    holder = sqlite3.connect(demo_db)
    holder.execute("SELECT count(*) FROM episode").fetchone()
    holder.close()
    run_case(["--db", str(demo_db), "restore"], Expect(code=0, db=demo_db))
    assert list(demo_db.parent.glob("db.sqlite.replaced-*"))
    assert row_counts(demo_db)["episode"] > 0
