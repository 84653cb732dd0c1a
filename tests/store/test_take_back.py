"""A refused command takes back the database it made, never one another process filled.

Two `curator copy SOURCE DEST` into one new DEST at once: the one that lost (DEST "already
holds rows", or its wait for the lock ran out) removed DEST, and with it the copy the other
had just reported as copied and verified (exit 0), in 3 of 5 tries on a large source.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from store.file_limit import files_limited_to

from curator.cli import main
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.take_back import Made, _lock_without_waiting, take_back


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    path = tmp_path / "curator.sqlite"
    with Store(path) as store:
        create_demo(store)
    return path


def _schema_only(path: Path) -> Path:
    Store(path).close()  # the schema, a setting row and the full-text index's own rows
    return path


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "-"))


def test_a_database_holding_only_its_schema_is_taken_back(tmp_path: Path) -> None:
    folder = tmp_path / "made" / "for it"
    folder.mkdir(parents=True)
    database = _schema_only(folder / "new.sqlite")
    assert take_back(database, [folder, folder.parent])
    assert not (tmp_path / "made").exists()


def test_a_database_with_rows_of_anyone_stays(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    assert not take_back(demo_db)
    assert not take_back(demo_db, zero_bytes=True)
    assert demo_db.read_bytes() == before


def test_a_setting_someone_saved_keeps_the_database(tmp_path: Path) -> None:
    """`curator --create settings top_k=7` exits 0 having saved only a setting; a failing
    command beside it removed that database (4 of 30 tries) or truncated it (6 of 25)."""
    database = _schema_only(tmp_path / "new.sqlite")
    with sqlite3.connect(database) as conn:
        conn.execute("INSERT INTO setting (key, value) VALUES ('top_k', '7')")
    conn.close()
    assert not take_back(database)
    assert not take_back(database, zero_bytes=True)
    with Store(database, create=False) as store:
        assert store.db.execute_sql("SELECT value FROM setting WHERE key = 'top_k'").fetchone()


def test_a_database_another_process_is_writing_stays(tmp_path: Path) -> None:
    database = _schema_only(tmp_path / "new.sqlite")
    writer = sqlite3.connect(database, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # in the middle of filling it
    try:
        assert not take_back(database)
        assert database.exists()
    finally:
        writer.close()


def test_a_file_that_had_zero_bytes_gets_them_back(tmp_path: Path) -> None:
    database = _schema_only(tmp_path / "was-empty.sqlite")
    assert take_back(database, zero_bytes=True)
    assert database.stat().st_size == 0 and _siblings(database) == []


def test_two_copies_into_one_new_destination_never_lose_the_one_that_succeeded(
    demo_db: Path, tmp_path: Path
) -> None:
    """Whatever the timing, a copy that said it copied leaves its destination there. (Both
    may fail: a loser may take back the file while the other has opened it and not yet
    written, and the other's first write is then refused, as the store writes only the
    file it opened; never a success whose file is gone.)"""
    source = tmp_path / "source.sqlite"
    shutil.copyfile(demo_db, source)
    command = [sys.executable, "-m", "curator", "copy", str(source)]
    successes = 0
    for round_ in range(12):
        dest = tmp_path / f"dest{round_}.sqlite"
        env = {**os.environ, "CURATOR_BUSY_TIMEOUT": str(round_ % 3)}
        children = [
            subprocess.Popen(
                [*command, str(dest)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(2)
        ]
        outcomes = [(child.wait(timeout=120), *child.communicate()) for child in children]
        for code, _, err in outcomes:
            assert code == 0 or (code in (1, 2) and err.count("\n") == 1), outcomes
        if any(code == 0 for code, *_ in outcomes):
            successes += 1
            assert dest.exists(), outcomes
            with Store(dest, create=False, read_only=True) as store:
                episodes = store.db.execute_sql("SELECT COUNT(*) FROM episode").fetchone()[0]
            assert episodes == 203, outcomes
    assert successes  # the race is run, not skipped


def test_a_zero_byte_file_nothing_filled_is_not_touched(tmp_path: Path) -> None:
    """A command refused before it wrote (`stats` on an empty file) leaves the file and
    whatever lies beside it (a stale -wal) as they were."""
    database = tmp_path / "empty.sqlite"
    database.write_bytes(b"")
    stale = tmp_path / "empty.sqlite-wal"
    stale.write_bytes(b"not ours")
    made = Made.before_opening(database)
    assert made.zero_bytes == database.resolve() and made.missing == ()
    made.take_back()
    assert database.stat().st_size == 0 and stale.read_bytes() == b"not ours"
    _schema_only(database)  # now filled by a command that then failed: given back
    made.take_back()
    assert database.stat().st_size == 0 and _siblings(database) == []


# -- a full disk: the -shm the failed open left cannot be grown -----------------------------


def _left_by_a_full_disk(path: Path, *, row_in_wal: bool) -> Path:
    """``path`` (in a new folder) as a command that ran out of room leaves it: its ``-shm``
    one page long (SQLite grows it a page at a time), and with ``row_in_wal`` a setting
    another process committed that is still only in the ``-wal``, never checkpointed."""
    apart = path.parent.parent / "apart"
    apart.mkdir()
    _schema_only(apart / path.name)
    writer = sqlite3.connect(apart / path.name)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("SELECT count(*) FROM setting").fetchone()  # (its -wal opened)
    if row_in_wal:
        writer.execute("INSERT INTO setting (key, value) VALUES ('top_k', '7')")
        writer.commit()
    path.parent.mkdir()
    for suffix in ("", "-wal"):  # as they are while it is open: a process stopped here
        shutil.copyfile(apart / (path.name + suffix), path.with_name(path.name + suffix))
    writer.close()
    path.with_name(path.name + "-shm").write_bytes(bytes(4096))
    return path


def test_a_file_whose_shm_a_full_disk_left_short_is_taken_back(tmp_path: Path) -> None:
    """Every reader of a WAL database grows a short ``-shm`` first; with the disk full
    that failed ("disk I/O error"), so the take-back's own look at the file failed and
    `curator copy` into a new file left it (4 KiB) with its side files. The look is then
    made without a ``-shm``. The full disk is this process's file size limit, a real one."""
    database = _left_by_a_full_disk(tmp_path / "new" / "new.sqlite", row_in_wal=False)
    with files_limited_to(8192):
        assert take_back(database, [database.parent])
    assert not database.parent.exists()


def test_a_row_only_in_the_wal_keeps_the_file_when_its_shm_cannot_grow(tmp_path: Path) -> None:
    """The look without a ``-shm`` reads the ``-wal`` too: another process's commit there,
    never checkpointed, is someone's data, and the file stays as it was."""
    database = _left_by_a_full_disk(tmp_path / "new" / "new.sqlite", row_in_wal=True)
    with files_limited_to(8192):
        assert not take_back(database)
        assert not take_back(database, zero_bytes=True)
    with Store(database, create=False) as store:
        assert store.db.execute_sql("SELECT value FROM setting WHERE key = 'top_k'").fetchone()


def test_the_look_without_a_shm_is_refused_while_another_connection_has_the_file_open(
    tmp_path: Path,
) -> None:
    """The exclusive lock that look takes is refused at once while any other connection
    has the file open (every WAL connection holds a shared lock on it while open)."""
    database = _schema_only(tmp_path / "new.sqlite")
    reader = sqlite3.connect(database)
    reader.execute("SELECT count(*) FROM setting").fetchone()
    try:
        with pytest.raises(sqlite3.OperationalError) as refused:
            _lock_without_waiting(database, exclusive=True)
        assert refused.value.sqlite_errorname == "SQLITE_BUSY"
    finally:
        reader.close()
    _lock_without_waiting(database, exclusive=True).close()


@pytest.mark.parametrize(
    "command",
    [["demo"], ["import", "{notes}"], ["--create", "stats"]],
    ids=["demo", "import", "create"],
)
def test_a_command_the_full_disk_stops_as_it_makes_the_database_leaves_nothing(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands that make a database take it back the same way as `copy` (a real
    full disk: this process's file size limit; the new file's -shm stops growing)."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"content": "hello"}\n', encoding="utf-8")
    database = tmp_path / "new" / "curator.sqlite"
    argv = ["--db", str(database), *(a.format(notes=notes) for a in command)]
    with files_limited_to(12_288):
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "disk is full" in err and "free some space" in err, err  # not "disk I/O error"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl"]


def test_a_database_named_through_a_missing_folder_and_dots_is_taken_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--db X/new/../d.sqlite``: the open makes ``new`` to reach ``d.sqlite`` beside it,
    and a full disk stops it. The store removed ``new`` again, and the command's take-back
    then looked for the file through the folder no longer there: it stayed, with its side
    files, under a message saying nothing changed."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"content": "hello"}\n', encoding="utf-8")
    database = tmp_path / "new" / ".." / "d.sqlite"
    with files_limited_to(12_288):
        code = main(["--db", str(database), "import", str(notes)])
    assert code == 2 and "disk is full" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl"]
