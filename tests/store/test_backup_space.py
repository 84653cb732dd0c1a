"""Backups that cost disk only when they must: skipped when nothing changed, bounded by
total size; ``curator compact`` gives the space of deleted rows back."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.store.backup import backup_due, list_backups, prune_backups, take_backup
from curator.store.change_marker import bump, read_marker
from curator.store.compact import database_bytes
from curator.store.db import Store
from curator.store.settings import update_settings


def _fill(store: Store, rows: int, width: int = 300, tag: str = "x") -> None:
    """``rows`` patterns of about ``width`` bytes, in one write transaction."""
    with store.write():
        store.db.execute_sql(
            "INSERT INTO pattern (text, importance, distilled_at, rank_key, category, status,"
            " revision, created_at, updated_at) "
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)"
            " SELECT ? || printf(' %d ', i) || hex(randomblob(?)), 0.5, '2026-01-01', 0.5,"
            " 'x', 'active', 1, '2026-01-01', '2026-01-01' FROM seq",
            (rows, tag, width // 2),
        )


def _texts(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT text FROM pattern ORDER BY id")]
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "curator.sqlite")
    _fill(s, 20)
    yield s
    s.close()


# -- skipped when nothing changed ----------------------------------------------------------


def test_a_close_with_nothing_changed_makes_no_new_backup(store: Store) -> None:
    """Closing the last connection checkpoints the WAL into the file (a newer file time)
    without changing the content: that is no reason for another copy."""
    take_backup(store.path)
    store.close()  # the session ends: checkpoint, -wal removed, the file rewritten
    again = Store(store.path)  # another session that only reads
    again.execute("SELECT count(*) FROM pattern")
    again.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    again.close()
    assert not backup_due(store.path)


def test_a_change_makes_one_and_a_refused_write_does_not(store: Store) -> None:
    take_backup(store.path)
    with pytest.raises(RuntimeError), store.write():  # rolled back: nothing changed
        store.db.execute_sql("UPDATE pattern SET importance = 0.9")
        raise RuntimeError("refused")
    with store.write():  # a write transaction that changed no row
        store.db.execute_sql("UPDATE pattern SET importance = 0.9 WHERE id < 0")
    assert not backup_due(store.path)
    with store.write():
        store.db.execute_sql("UPDATE pattern SET importance = 0.9 WHERE id = 1")
    assert backup_due(store.path)
    take_backup(store.path)
    assert not backup_due(store.path)


def test_a_backup_carries_the_marker_of_the_content_it_copied(store: Store) -> None:
    result = take_backup(store.path)
    assert read_marker(result.path) == read_marker(store.path) is not None


def test_a_write_made_while_the_copy_runs_makes_the_next_backup_due(store: Store) -> None:
    done = []

    def write_once(_done: int, _total: int) -> None:
        if not done:
            with store.write():
                store.db.execute_sql("DELETE FROM pattern WHERE id = 1")
            done.append(1)

    take_backup(store.path, pages=1, progress=write_once)
    assert backup_due(store.path)


def test_a_backup_from_before_the_marker_falls_back_to_file_times(store: Store) -> None:
    """A backup without the counter row (taken by an older version) still counts."""
    result = take_backup(store.path)
    conn = sqlite3.connect(result.path)
    conn.execute("DELETE FROM setting WHERE key = 'change_counter'")
    conn.commit()
    conn.close()
    assert not backup_due(store.path)  # nothing written since its start
    with store.write():
        store.db.execute_sql("UPDATE pattern SET importance = 0.3")
    assert backup_due(store.path)


# -- bounded by total size -----------------------------------------------------------------


def _backups_with_changes(store: Store, count: int) -> list[Path]:
    made = []
    for i in range(count):
        with store.write():
            store.db.execute_sql("UPDATE pattern SET importance = ?", (i / 100,))
        made.append(take_backup(store.path).path)
    return made


def test_the_size_bound_prunes_the_oldest_first(store: Store) -> None:
    made = _backups_with_changes(store, 5)
    size = made[-1].stat().st_size
    deleted = prune_backups(store.path, max_total_bytes=2 * size + size // 2)
    assert deleted == made[:3] and list_backups(store.path) == made[3:]


def test_the_newest_backup_stays_even_when_it_alone_is_over_the_bound(store: Store) -> None:
    made = _backups_with_changes(store, 3)
    result = take_backup(store.path, max_total_bytes=1)
    assert list_backups(store.path) == [result.path] and not any(p.exists() for p in made)


def test_another_databases_backups_are_neither_counted_nor_pruned(store: Store) -> None:
    other = Store(store.path.with_name("curator.db"))
    _fill(other, 200)
    theirs = take_backup(other.path).path
    other.close()
    mine = take_backup(store.path, max_total_bytes=10**9).path
    assert theirs.exists() and list_backups(store.path) == [mine]
    take_backup(store.path, max_total_bytes=1)
    assert theirs.exists() and len(list_backups(store.path)) == 1


def test_curator_backup_applies_the_size_setting(store: Store, capsys) -> None:
    update_settings(store, {"backup_max_total_mb": 1})  # 1 MB: room for about 4 copies
    path = str(store.path)
    for i in range(8):
        with store.write():
            store.db.execute_sql("UPDATE pattern SET importance = ?", (i / 10,))
        assert main(["--db", path, "--json", "backup"]) == 0
    capsys.readouterr()
    sizes = [p.stat().st_size for p in list_backups(store.path)]
    assert 1 < len(sizes) < 8 and sum(sizes) <= 1_000_000


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("write"), st.integers(1, 40)),
            st.tuples(st.just("delete"), st.integers(1, 40)),
            st.tuples(st.just("backup"), st.just(0)),
            st.tuples(st.just("close"), st.just(0)),
        ),
        min_size=1,
        max_size=10,
    ),
    bound_kb=st.integers(1, 600),
)
def test_the_newest_backup_restores_the_latest_backed_up_content(
    ops: list[tuple[str, int]], bound_kb: int
) -> None:
    """Over any sequence of writes, backups and closes (a close backs up when due, like
    the window's): the newest backup holds exactly the content of the last backup taken,
    a backup skipped as "nothing changed" had nothing to add, and this database's backups
    stay within the size bound except the newest alone."""
    bound = bound_kb * 1000
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "curator.sqlite"
        store = Store(path)
        backed_up: list[str] | None = None
        try:
            for step, (op, n) in enumerate(ops):
                if op == "write":
                    _fill(store, n, tag=f"s{step}")
                elif op == "delete":
                    with store.write():
                        store.db.execute_sql(
                            "DELETE FROM pattern WHERE id IN "
                            "(SELECT id FROM pattern ORDER BY id LIMIT ?)",
                            (n,),
                        )
                elif op in ("backup", "close"):
                    if op == "close":
                        store.close()
                        store = Store(path)
                    current = _texts(path)
                    if backup_due(path):
                        take_backup(path, max_total_bytes=bound)
                        backed_up = current
                    else:
                        assert current == backed_up  # skipped: nothing to add
                backups = list_backups(path)
                if backed_up is not None:
                    assert _texts(backups[-1]) == backed_up
                    sizes = [p.stat().st_size for p in backups]
                    assert sum(sizes) <= bound or len(sizes) == 1
        finally:
            store.close()


# -- curator compact -----------------------------------------------------------------------


def test_compact_gives_the_space_of_a_big_delete_back(tmp_path: Path, capsys) -> None:
    store = Store(tmp_path / "curator.sqlite")
    _fill(store, 20_000, width=400)
    with store.write():
        store.db.execute_sql("DELETE FROM pattern WHERE id > 100")
    store.close()
    path = tmp_path / "curator.sqlite"
    before = database_bytes(path)
    assert main(["--db", str(path), "--json", "compact"]) == 0
    doc = json.loads(capsys.readouterr().out)
    after = database_bytes(path)
    assert doc["bytes_before"] == before and doc["bytes_after"] == after
    assert after < before / 4 and doc["bytes_freed"] == before - after
    assert len(_texts(path)) == 100
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def _not_ours(kind: str, path: Path) -> None:
    if kind == "text":
        path.write_bytes(b"hello, this is not a database\n" * 10)
    elif kind == "foreign-sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [("x" * 500,)] * 200)
        conn.execute("DELETE FROM notes WHERE id > 10")  # free pages a VACUUM would drop
        conn.commit()
        conn.close()
    else:
        full = path.with_name("full.sqlite")
        s = Store(full)
        _fill(s, 500)
        s.close()
        data = full.read_bytes()
        path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("kind", ["text", "foreign-sqlite", "truncated"])
def test_compact_refuses_a_file_that_is_not_a_curator_database(
    kind: str, tmp_path: Path, capsys
) -> None:
    path = tmp_path / "other.sqlite"
    _not_ours(kind, path)
    before = path.read_bytes()
    listing = sorted(p.name for p in tmp_path.iterdir())
    assert main(["--db", str(path), "compact"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("curator: error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == listing


@pytest.mark.parametrize("create", [[], ["--create"]])
def test_compact_of_a_missing_database_says_what_to_do(
    create: list[str], tmp_path: Path, capsys
) -> None:
    """With --create given, "pass --create" was the advice: compaction makes nothing."""
    path = tmp_path / "missing.sqlite"
    assert main(["--db", str(path), *create, "compact"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no database at {path}" in err
    assert ("pass --create" in err) != bool(create)
    assert not path.exists()


def test_compact_refuses_while_another_process_has_the_database_open(store: Store, capsys) -> None:
    with store.write():
        store.db.execute_sql("DELETE FROM pattern WHERE id > 5")
    store.close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM pattern').fetchone(); "
            "print('open', flush=True); sys.stdin.read()",
            str(store.path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        before = database_bytes(store.path)
        texts = _texts(store.path)
        assert main(["--db", str(store.path), "--json", "compact"]) == 1
        doc = json.loads(capsys.readouterr().out)
        assert doc["exit"] == 1 and doc["error"].startswith("busy:")
        assert "close it and run compact again; nothing changed" in doc["error"]
        assert database_bytes(store.path) == before and _texts(store.path) == texts
    finally:
        holder.communicate("")
    assert main(["--db", str(store.path), "compact"]) == 0  # closed: now it runs


@settings(max_examples=200, deadline=None)
@given(
    saved=st.one_of(
        st.integers(-(2**63), 2**63 - 1).map(str),
        st.sampled_from(["abc", "", "1e400", "-0", "NaN", '"7"', "18446744073709551616"]),
        st.text(max_size=30),
    )
)
def test_the_counter_moves_on_from_any_saved_value(saved: str) -> None:
    """Whatever the counter row holds (an old value, a hostile edit), a bump leaves a
    whole number that differs from it, so a change is never mistaken for none."""
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE TABLE setting ("key" TEXT PRIMARY KEY, "value" TEXT)')
    conn.execute("INSERT INTO setting VALUES ('change_counter', ?)", (saved,))
    bump(conn)
    (after,) = conn.execute("SELECT value FROM setting WHERE key = 'change_counter'").fetchone()
    assert isinstance(after, str) and after.isdigit() and after != saved
    assert 1 <= json.loads(after) <= 10**15
    bump(conn)
    (again,) = conn.execute("SELECT value FROM setting WHERE key = 'change_counter'").fetchone()
    assert again != after
