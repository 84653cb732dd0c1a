"""A backup or restore that fails leaves no folder it made: ``curator backup --dir NEW/DIR``
(a mistyped folder, then a full disk) left the empty folders behind it.

Only the folders the command made, and only while they are empty: a folder that was there
before, or that something else has filled meanwhile, stays. The full disk is this
process's file size limit (:mod:`store.file_limit`), a real failed write.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from store.file_limit import files_limited_to

from curator.errors import CuratorError
from curator.store.backup import BackupCancelled, take_backup
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.pg_backup import take_pg_backup
from tests.store.test_copy import cli, fill


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    """A database of some 800 KB: a backup of it needs more room than the limits below."""
    path = tmp_path / "curator.sqlite"
    with Store(path) as store:
        create_demo(store)
    return path


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("where", ["two new folders", "an empty folder", "beside a file"])
def test_a_backup_the_full_disk_stops_leaves_no_folder_it_made(
    demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """Only what this backup made goes: an empty folder given as --dir was there before
    and stays, and so does a parent that holds a file."""
    if where == "two new folders":
        folder = tmp_path / "new" / "backups"
    elif where == "an empty folder":
        folder = tmp_path / "kept"
        folder.mkdir()
    else:
        (tmp_path / "parent").mkdir()
        (tmp_path / "parent" / "notes.txt").write_text("mine\n", encoding="utf-8")
        folder = tmp_path / "parent" / "backups"
    before = _tree(tmp_path)
    with files_limited_to(65_536):
        code, _, err = cli(capsys, "--db", str(demo_db), "backup", "--dir", str(folder))
    assert code == 2 and err.count("\n") == 1 and "backup of" in err, err
    after = [p for p in _tree(tmp_path) if not p.startswith(demo_db.name)]  # (its -wal)
    assert after == [p for p in before if not p.startswith(demo_db.name)]


@pytest.mark.parametrize("stop", ["cancelled", "interrupted"])
def test_a_backup_stopped_half_way_leaves_no_folder_it_made(
    demo_db: Path, tmp_path: Path, stop: str
) -> None:
    """Stopped on request (the window closing) or by Ctrl-C (a fault injection: the
    progress report raises KeyboardInterrupt between two steps of the copy)."""
    folder = tmp_path / "new" / "backups"

    def progress(done: int, total: int) -> None:
        if stop == "interrupted":
            raise KeyboardInterrupt

    expected: type[BaseException] = BackupCancelled if stop == "cancelled" else KeyboardInterrupt
    with pytest.raises(expected):
        take_backup(
            demo_db,
            dest_dir=folder,
            pages=8,
            progress=progress,
            cancelled=lambda: stop == "cancelled",
        )
    assert not (tmp_path / "new").exists()


def test_a_folder_something_else_filled_meanwhile_stays(demo_db: Path, tmp_path: Path) -> None:
    """The folder this backup made, but that another program wrote into while the copy
    ran (a fault injection: the progress report writes the file, and the backup is
    cancelled at its next step), is no longer this backup's to remove."""
    folder = tmp_path / "new" / "backups"
    theirs = folder / "theirs.txt"

    def progress(done: int, total: int) -> None:
        theirs.write_text("written meanwhile\n", encoding="utf-8")

    with pytest.raises(BackupCancelled):
        take_backup(demo_db, dest_dir=folder, pages=8, progress=progress, cancelled=theirs.exists)
    assert _tree(tmp_path / "new") == ["backups", "backups/theirs.txt"]


def test_a_restore_into_a_new_folder_the_full_disk_stops_leaves_no_folder(
    demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``curator --create --db NEW/DIR/x.sqlite restore BACKUP`` makes the database's
    folder; the copy then fails for want of room, and the folder goes with it."""
    backup = take_backup(demo_db, dest_dir=tmp_path / "backups").path
    target = tmp_path / "new" / "folder" / "curator.sqlite"
    with files_limited_to(65_536):
        code, _, err = cli(capsys, "--create", "--db", str(target), "restore", str(backup))
    assert code == 2 and err.count("\n") == 1 and "nothing changed" in err, err
    assert not (tmp_path / "new").exists()


def test_a_postgresql_backup_that_fails_leaves_no_folder_it_made(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL database's backup makes its folder the same way: here the logical
    export (no pg_dump on the PATH) runs out of room in the new folder."""
    store = Store(pg_url)
    fill(store, random.Random(3), at_least=1)
    no_tools = tmp_path / "no-tools"
    no_tools.mkdir()
    monkeypatch.setenv("PATH", str(no_tools))
    folder = tmp_path / "new" / "backups"
    try:
        with files_limited_to(65_536), pytest.raises(CuratorError, match="disk I/O error"):
            take_pg_backup(store, folder)
    finally:
        store.close()
    assert not (tmp_path / "new").exists()


def test_a_claim_in_a_folder_another_run_took_back_makes_it_again(tmp_path: Path) -> None:
    """Two backups into one new folder: the first failed and took back the folder it
    made while the second, which found it made, waited for its database; the second
    then failed on "No such file or directory". Its file now makes the folder again (and
    once the file is in it, the folder is no longer empty: no take-back removes it)."""
    from curator.store.backup_partials import claimed
    from curator.store.opened_file import folders_taken_back

    folder = tmp_path / "new" / "backups"
    partial = folder / "curator.sqlite-20261207T000000.000000Z.partial"
    with pytest.raises(OSError), folders_taken_back(folder):  # the first run
        folder.mkdir(parents=True)
        raise OSError("no space left on device")
    assert not (tmp_path / "new").exists()
    with claimed(partial):  # the second, which had found the folder there
        assert partial.is_file()
