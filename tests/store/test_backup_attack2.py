"""Backups of a database named through a symbolic link, or copied with ``cp``.

A link is another name for the same database: its backups are the database's own (named
after the file the link points to, in that file's backup folder), and a restore puts the
backup in place of that file, leaving the link as it was. A copy made with ``cp`` carries
the id of the original: retention and ``restore`` without a BACKUP go by the file name,
so neither prunes nor picks the other's backups. Real SQLite files and the real CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store.pattern_files import database_with, pattern_texts

from curator.cli import main
from curator.store.backup import list_backups
from curator.store.db import Store
from curator.store.models import Pattern, utcnow


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["--json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


def _add(path: Path, text: str) -> None:
    with Store(path) as store, store.write():
        Pattern.create(text=text, importance=0.5, distilled_at=utcnow(), rank_key=0.5)


def test_restore_through_a_link_restores_the_database_not_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = database_with(tmp_path / "real.sqlite", "before")
    link = tmp_path / "link.sqlite"
    link.symlink_to(real.name)
    assert _run(capsys, "--db", str(link), "backup")[0] == 0
    _add(real, "after the backup")
    code, doc = _run(capsys, "--db", str(link), "restore")
    assert code == 0, doc
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert pattern_texts(real) == ["before"]


def test_a_link_and_its_target_share_their_backups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = database_with(tmp_path / "real.sqlite", "one")
    link = tmp_path / "other-name.sqlite"
    link.symlink_to(real)
    assert _run(capsys, "--db", str(real), "backup")[0] == 0
    code, doc = _run(capsys, "--db", str(link), "backup")
    assert code == 0
    assert Path(str(doc["backup"])).name.startswith("real.sqlite-")
    assert len(list_backups(link)) == len(list_backups(real)) == 2


def test_a_copy_neither_prunes_nor_picks_the_originals_backups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = database_with(tmp_path / "original.sqlite", "original")
    assert _run(capsys, "--db", str(original), "backup")[0] == 0
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(original, copy)  # same id inside: cp
    _add(copy, "only in the copy")
    assert _run(capsys, "--db", str(copy), "backup", "--keep", "1")[0] == 0
    assert _run(capsys, "--db", str(copy), "backup", "--keep", "1")[0] == 0
    assert len(list_backups(original)) == 1  # the copy's --keep 1 left it alone
    assert len(list_backups(copy)) == 1
    _add(copy, "later")
    code, doc = _run(capsys, "--db", str(copy), "restore")
    assert code == 0, doc
    assert pattern_texts(copy) == ["original", "only in the copy"]  # its own, not the original's


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    depth=st.integers(min_value=1, max_value=3),
    relative=st.booleans(),
    name=st.text(
        st.characters(codec="utf-8", exclude_characters="/\x00", exclude_categories=["Cs"]),
        min_size=1,
        max_size=12,
    ).filter(lambda s: s not in (".", "..")),
)
def test_any_chain_of_links_restores_the_file_at_its_end(
    depth: int, relative: bool, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Property: whatever chain of links names the database, backup and restore act on
    the file at its end, and every link is left as it was."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        real = database_with(folder / f"{name}.sqlite", "before")
        links = []
        target = real
        for i in range(depth):
            link = folder / f"link{i}.sqlite"
            link.symlink_to(target.name if relative else target)
            links.append(link)
            target = link
        assert _run(capsys, "--db", str(target), "backup")[0] == 0
        _add(real, "after")
        code, doc = _run(capsys, "--db", str(target), "restore")
        assert code == 0, doc
        assert all(link.is_symlink() for link in links)
        assert pattern_texts(real) == ["before"]
        assert sorted(os.listdir(folder / "backups")) == [p.name for p in list_backups(real)]


def _only_backup(db: Path) -> Path:
    (backup,) = list_backups(db)
    return backup


def test_a_renamed_database_restores_its_old_backups_by_name_and_prunes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Renamed after a backup: the old backups keep the old name, so ``restore`` without
    BACKUP and retention do not see them (nothing is lost), and naming one restores it
    (the id inside is the database's)."""
    old = database_with(tmp_path / "old.sqlite", "before")
    assert _run(capsys, "--db", str(old), "backup")[0] == 0
    backup = _only_backup(old)
    new = tmp_path / "new.sqlite"
    old.rename(new)
    _add(new, "after")
    assert _run(capsys, "--db", str(new), "backup", "--keep", "1")[0] == 0
    assert _run(capsys, "--db", str(new), "backup", "--keep", "1")[0] == 0
    assert backup.exists()
    code, doc = _run(capsys, "--db", str(new), "restore", str(backup))
    assert code == 0, doc
    assert pattern_texts(new) == ["before"]


def _set_id(path: Path, value: str | None) -> None:
    with sqlite3.connect(path) as conn:
        if value is None:
            conn.execute("DELETE FROM setting WHERE key = 'database_id'")
        else:
            conn.execute("UPDATE setting SET value = ? WHERE key = 'database_id'", (value,))
    conn.close()


@pytest.mark.parametrize("tampered", ['"another id"', "123", "not json"])
def test_a_backup_whose_id_was_tampered_is_never_restored_as_another_databases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tampered: str
) -> None:
    db = database_with(tmp_path / "db.sqlite", "before")
    assert _run(capsys, "--db", str(db), "backup")[0] == 0
    backup = _only_backup(db)
    _set_id(backup, tampered)
    _add(db, "after")
    before = db.read_bytes()
    code, doc = _run(capsys, "--db", str(db), "restore", str(backup))
    if tampered == '"another id"':  # a readable id of another database: refused
        assert code == 2 and "another database" in str(doc["error"])
        assert db.read_bytes() == before
    else:  # no readable id: the name decides, and the name is this database's
        assert code == 0, doc
        assert pattern_texts(db) == ["before"]


def test_a_backup_of_a_newer_schema_is_refused_and_nothing_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = database_with(tmp_path / "db.sqlite", "before")
    assert _run(capsys, "--db", str(db), "backup")[0] == 0
    backup = _only_backup(db)
    with sqlite3.connect(backup) as conn:
        conn.execute("PRAGMA user_version = 9999")
    conn.close()
    before = sorted(os.listdir(tmp_path))
    code, doc = _run(capsys, "--db", str(db), "restore", str(backup))
    assert code == 2 and "newer" in str(doc["error"])
    assert sorted(os.listdir(tmp_path)) == before and pattern_texts(db) == ["before"]


@pytest.mark.parametrize("keep", [str(2**63 - 1), "1000000"])
def test_a_huge_keep_keeps_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keep: str
) -> None:
    db = database_with(tmp_path / "db.sqlite", "one")
    for _ in range(3):
        code, doc = _run(capsys, "--db", str(db), "backup", "--keep", keep)
        assert code == 0, doc
    assert len(list_backups(db)) == 3


def test_two_databases_of_one_name_in_other_folders_share_a_backup_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``a/curator.sqlite`` and ``b/curator.sqlite`` backed up into one ``--dir``: the
    names are the same, the ids decide; each keeps and restores only its own."""
    a = database_with(tmp_path / "a" / "curator.sqlite", "a")
    b = database_with(tmp_path / "b" / "curator.sqlite", "b")
    shared = tmp_path / "shared"
    for db in (a, b, a, b):
        assert _run(capsys, "--db", str(db), "backup", "--dir", str(shared), "--keep", "1")[0] == 0
    assert len(os.listdir(shared)) == 2
    _add(a, "a later")
    code, doc = _run(capsys, "--db", str(a), "restore", str(list_backups(a, shared)[-1]))
    assert code == 0, doc
    assert pattern_texts(a) == ["a"]
    code, doc = _run(capsys, "--db", str(b), "restore", str(list_backups(a, shared)[-1]))
    assert code == 2 and pattern_texts(b) == ["b"]
