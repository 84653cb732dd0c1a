"""A database file deleted, moved or replaced under an open store is never written.

A long-lived process (the MCP server, the window, the Python API) keeps its connection.
After a deletion it went on acknowledging episodes into an unlinked file; after a
replacement its writes reached the new file through the ``-wal`` that SQLite names by
path, and damaged it.
"""

from __future__ import annotations

import ast
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from curator import Curator
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.opening import FileReplacedError


def _episodes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(conn.execute("SELECT count(*) FROM episode").fetchone()[0])


def _deleted(path: Path, other: Path) -> None:
    path.unlink()


def _moved(path: Path, other: Path) -> None:
    path.rename(path.with_name("moved.sqlite"))


def _replaced(path: Path, other: Path) -> None:
    os.replace(other, path)


@pytest.mark.parametrize("change", [_deleted, _moved, _replaced], ids=lambda f: f.__name__)
def test_a_write_after_the_file_changed_is_refused_and_writes_nothing(
    tmp_path: Path, change: Callable[[Path, Path], None]
) -> None:
    path, other = tmp_path / "memory.sqlite", tmp_path / "other.sqlite"
    with Curator(db=other, create=True) as fresh:
        fresh.record(text="the other database's only episode")
    memory = Curator(db=path, create=True)
    for i in range(20):  # enough to leave pages in the -wal
        memory.record(text=f"before the change {i} " + "z" * 2000)

    change(path, other)

    with pytest.raises(CuratorError, match="deleted, moved or replaced") as refused:
        memory.record(text="after the change")
    assert isinstance(refused.value, FileReplacedError)
    assert str(path) in str(refused.value) and "nothing was written" in str(refused.value)
    memory.close()
    if change is _replaced:  # the file now at the path is whole, with its own episode only
        assert _episodes(path) == 1
    else:  # nothing left at the path that a database created there later would read
        assert not path.exists()
        wal = Path(f"{path}-wal")
        assert not wal.exists() or wal.stat().st_size == 0


def test_the_same_file_written_through_another_path_is_still_written(tmp_path: Path) -> None:
    """A hard link or a second name for the same file is the same database."""
    path = tmp_path / "memory.sqlite"
    store = Store(path)
    os.link(path, tmp_path / "alias.sqlite")
    with store.write():
        store.execute("UPDATE setting SET value = value WHERE 0")
    store.close()


def test_a_process_that_changes_its_folder_still_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store opened by a relative path names the file it opened, not the path's
    meaning in whatever folder the process is in now."""
    monkeypatch.chdir(tmp_path)
    store = Store("memory.sqlite")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with store.write():
        store.execute("UPDATE setting SET value = value WHERE 0")
    store.close()


def _fill_then_replace(path: Path, other: Path) -> Curator:
    with Curator(db=other, create=True) as fresh:
        fresh.record(text="the other database's only episode")
    memory = Curator(db=path, create=True)
    for i in range(20):
        memory.record(text=f"before the change {i} " + "z" * 2000)
    os.replace(other, path)
    return memory


def test_a_store_closed_after_its_file_was_replaced_leaves_the_new_file_its_own(
    tmp_path: Path,
) -> None:
    """No write needed: SQLite leaves a moved file's -wal at the path when it closes."""
    path = tmp_path / "memory.sqlite"
    memory = _fill_then_replace(path, tmp_path / "other.sqlite")
    memory.close()
    assert _episodes(path) == 1


def test_a_process_that_exits_without_closing_leaves_the_new_file_its_own(tmp_path: Path) -> None:
    path, other = tmp_path / "memory.sqlite", tmp_path / "other.sqlite"
    script = (
        "import sys; from pathlib import Path\n"
        "from tests.store.test_file_replaced import _fill_then_replace\n"
        "memory = _fill_then_replace(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "raise SystemExit(0)  # no close: a server stopped by its user\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), str(other)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _episodes(path) == 1


@pytest.mark.parametrize("change", [_deleted, _moved, _replaced], ids=lambda f: f.__name__)
def test_a_file_changed_while_a_write_runs_takes_nothing_with_it(
    tmp_path: Path, change: Callable[[Path, Path], None]
) -> None:
    """The check before the commit too: a long write (a 20,000-episode relabel) whose
    file was deleted half way was reported done, and its work went with the file."""
    path, other = tmp_path / "memory.sqlite", tmp_path / "other.sqlite"
    with Curator(db=other, create=True) as fresh:
        fresh.record(text="the other database's only episode")
    memory = Curator(db=path, create=True)
    memory.record(text="before the change")
    store = memory.store
    with pytest.raises(FileReplacedError), store.write():
        store.execute("UPDATE episode SET source = 'changed in the write'")
        change(path, other)
    if path.exists():  # replaced: the new file is untouched and still its own
        assert _episodes(path) == 1
    memory.close()


def test_no_connection_of_an_open_store_makes_a_file_where_it_was_deleted(
    tmp_path: Path,
) -> None:
    """Each thread opens its own connection: one opened after the file was deleted made
    a new empty file at the path, and a backup copied that empty file as a good one."""
    from curator.store.backup import take_backup

    path = tmp_path / "memory.sqlite"
    with Curator(db=path, create=True) as memory:
        memory.record(text="an episode")
        store = memory.store
        path.unlink()
        raised: list[BaseException] = []

        def read() -> None:
            try:
                store.execute("SELECT count(*) FROM episode")
            except BaseException as exc:
                raised.append(exc)
            finally:
                store.close()

        reader = threading.Thread(target=read)
        reader.start()
        reader.join()
        assert len(raised) == 1 and "unable to open database file" in str(raised[0])
        with pytest.raises(CuratorError, match="unable to open database file"):
            take_backup(path)
        assert not path.exists() and not list((tmp_path / "backups").glob("*.sqlite"))


CREATES_ON_PURPOSE = {
    "curator/store/backup.py": "the backup's partial copy, a file of its own",
    "curator/store/restore.py": "the restore's partial copy, a file of its own",
}
"""Modules whose plain ``sqlite3.connect`` makes a new file on purpose."""


def test_every_connection_to_a_database_that_exists_never_creates_one() -> None:
    """Each ``sqlite3.connect`` in the package opens a URI (``mode=rw`` or ``mode=ro``:
    :func:`curator.store.opening.connect_existing`, ``read_only_uri``), unless its module
    makes a new file on purpose; the store's own connections are held by the test above."""
    root = Path(__file__).resolve().parents[2]
    plain: dict[str, int] = {}
    for path in sorted((root / "curator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "sqlite3.connect"):
                continue
            uri = any(
                k.arg == "uri" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords
            )
            if not uri:
                module = path.relative_to(root).as_posix()
                plain[module] = plain.get(module, 0) + 1
    assert plain == dict.fromkeys(CREATES_ON_PURPOSE, 1)


@pytest.mark.parametrize("reopened", [False, True], ids=["created", "reopened"])
def test_a_file_emptied_under_an_open_store_takes_no_more_writes(
    tmp_path: Path, reopened: bool
) -> None:
    """Truncated to nothing (the same file: its device and inode unchanged), it took
    writes that were acknowledged and then lost with the ``-wal`` SQLite deleted."""
    path = tmp_path / "memory.sqlite"
    memory = Curator(db=path, create=True)
    memory.record(text="before the file was emptied")
    if reopened:
        memory.close()
        memory = Curator(db=path)
    os.truncate(path, 0)
    try:
        with pytest.raises(FileReplacedError):
            memory.record(text="after the file was emptied")
    finally:
        memory.close()
