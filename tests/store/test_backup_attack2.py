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

from curator.cli import main
from curator.store.backup import list_backups
from curator.store.db import Store
from curator.store.models import Pattern, utcnow


def _database(path: Path, text: str) -> Path:
    with Store(path) as store, store.write():
        Pattern.create(text=text, importance=0.5, distilled_at=utcnow(), rank_key=0.5)
    return path


def _patterns(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM pattern ORDER BY id")]


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
    real = _database(tmp_path / "real.sqlite", "before")
    link = tmp_path / "link.sqlite"
    link.symlink_to(real.name)
    assert _run(capsys, "--db", str(link), "backup")[0] == 0
    _add(real, "after the backup")
    code, doc = _run(capsys, "--db", str(link), "restore")
    assert code == 0, doc
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert _patterns(real) == ["before"]


def test_a_link_and_its_target_share_their_backups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _database(tmp_path / "real.sqlite", "one")
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
    original = _database(tmp_path / "original.sqlite", "original")
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
    assert _patterns(copy) == ["original", "only in the copy"]  # its own, not the original's


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
        real = _database(folder / f"{name}.sqlite", "before")
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
        assert _patterns(real) == ["before"]
        assert sorted(os.listdir(folder / "backups")) == [p.name for p in list_backups(real)]
