"""Export knowledge never destroys the database or a file it cannot finish writing."""

from __future__ import annotations

import resource
import signal
import sqlite3
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.gui.knowledge.knowledge_export import write_export
from curator.store.db import Store


def test_exporting_onto_the_database_itself_is_refused(store: Store) -> None:
    """The save dialog lets one type the database's own name (and Qt's "replace?" is
    easy to say yes to): the export would have truncated every memory to Markdown."""
    before = store.path.read_bytes()
    for target in (
        store.path,
        Path(f"{store.path}-wal"),
        store.path.parent / "." / store.path.name,
    ):
        with pytest.raises(CuratorError, match="the database"):
            write_export(store, target, database=store.path)
    assert store.path.read_bytes() == before
    with sqlite3.connect(store.path) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_folder_as_the_target_is_one_clear_error(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "chosen.md"
    folder.mkdir()
    with pytest.raises(CuratorError, match=f"cannot write {folder}"):
        write_export(store, folder, database=store.path)
    assert folder.is_dir() and not any(folder.iterdir())


def test_a_write_that_fails_half_way_keeps_the_file_that_was_there(
    store: Store, tmp_path: Path
) -> None:
    """A write that runs out of room half way (a real EFBIG: the process's file size
    limit, as a full disk or quota would) leaves the earlier export whole, not cut."""
    target = tmp_path / "knowledge.md"
    target.write_text("the earlier export\n", encoding="utf-8")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
    try:
        with pytest.raises(CuratorError, match=f"cannot write {target}"):
            write_export(store, target, database=store.path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert target.read_text(encoding="utf-8") == "the earlier export\n"
    assert [
        p.name for p in tmp_path.iterdir() if p.name != store.path.name and "sqlite" not in p.name
    ] == ["knowledge.md"]
    assert write_export(store, target, database=store.path).written > 0  # room again: it works
    assert target.read_text(encoding="utf-8").startswith("#")


@pytest.mark.parametrize(
    "name",
    [
        "k" * 251 + ".txt",  # 255 bytes: the longest name a file may have
        "知" * 80 + ".md",  # 243 bytes in UTF-8
        "k" * 244 + ".json",
    ],
)
def test_the_longest_file_name_a_disk_allows_is_written(
    store: Store, tmp_path: Path, name: str
) -> None:
    """The text goes first to a file beside the target whose name is built from it: a
    target of the longest allowed name must not fail as "File name too long"."""
    target = tmp_path / name
    for fmt in ("markdown", "letta-block"):
        made = write_export(store, target, database=store.path, fmt=fmt)
        assert target.read_text(encoding="utf-8") == made.text
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(store.path.name)) == [
        name
    ]


def test_a_symlink_loop_as_the_target_is_one_clear_error(store: Store, tmp_path: Path) -> None:
    loop = tmp_path / "loop.md"
    loop.symlink_to(tmp_path / "loop2.md")
    (tmp_path / "loop2.md").symlink_to(loop)
    with pytest.raises(CuratorError, match=f"cannot write {loop}"):
        write_export(store, loop, database=store.path)
    assert loop.is_symlink()
