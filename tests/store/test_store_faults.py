"""Opening and writing the database when the file, the disk or another process misbehaves.

Every fault here is a real SQLite condition: foreign and newer files built with sqlite3,
a full disk from ``PRAGMA max_page_count``, a read-only open from SQLite's ``mode=ro`` /
``immutable`` URIs (the tests run as root, which ignores permission bits; the CLI suite
checks real permission bits with an unprivileged child), and a busy database from a
second connection that holds a write transaction.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import peewee
import pytest

from curator.errors import CuratorError
from curator.store.backup_listing import backup_problem
from curator.store.db import MissingDatabaseError, ReadOnlyError, Store, StoreBusyError
from curator.store.demo import create_demo
from curator.store.importer import import_file
from curator.store.migrations import LATEST_VERSION, MIGRATIONS
from curator.store.models import Episode, Pattern
from curator.store.opening import ForeignDatabaseError, SchemaTooNewError


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _siblings_absent(path: Path) -> bool:
    return not any(path.with_name(path.name + s).exists() for s in ("-wal", "-shm", "-journal"))


def _sqlite_file(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    path = tmp_path / "curator.sqlite"
    store = Store(path)
    create_demo(store)
    store.close()
    return path


# -- item 4: a database that is not ours is never modified --------------------------------


@pytest.mark.parametrize(
    "statements",
    [
        pytest.param(("CREATE TABLE contacts (name TEXT)",), id="foreign-tables"),
        pytest.param(("CREATE TABLE episode (x)",), id="clashing-table"),
        pytest.param(("CREATE TABLE contacts (x)", "PRAGMA user_version = 1"), id="other-app-v1"),
        pytest.param(("CREATE VIEW answer AS SELECT 42",), id="view-only"),
    ],
)
def test_a_database_of_another_program_is_refused_byte_identical(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    path = _sqlite_file(tmp_path / "other.db", *statements)
    before = _digest(path)
    with pytest.raises(ForeignDatabaseError, match="not a Memory Curator database"):
        Store(path)
    assert _digest(path) == before
    assert _siblings_absent(path)


def test_a_newer_schema_is_refused_before_any_write(tmp_path: Path) -> None:
    path = _sqlite_file(
        tmp_path / "newer.db",
        "CREATE TABLE future (x)",
        f"PRAGMA user_version = {LATEST_VERSION + 1}",
    )
    before = _digest(path)
    with pytest.raises(SchemaTooNewError, match="newer"):
        Store(path)
    assert _digest(path) == before and _siblings_absent(path)


def test_an_empty_sqlite_file_is_ours_to_initialise(tmp_path: Path) -> None:
    _sqlite_file(tmp_path / "empty.db", "PRAGMA user_version = 0")
    (tmp_path / "zero.db").write_bytes(b"")
    for name in ("empty.db", "zero.db"):
        with Store(tmp_path / name) as store:
            assert store.schema_version == LATEST_VERSION


def test_an_empty_file_is_not_filled_where_no_database_may_be_created(tmp_path: Path) -> None:
    """`touch notes.txt; curator --db notes.txt export` once filled notes.txt with a schema
    and printed an empty memory, exit 0: an empty file is nobody's database yet."""
    _sqlite_file(tmp_path / "empty.db", "PRAGMA user_version = 0")
    (tmp_path / "zero.db").write_bytes(b"")
    for name in ("empty.db", "zero.db"):
        path = tmp_path / name
        before = _digest(path)
        with pytest.raises(MissingDatabaseError, match=r"^the caller's way on$"):
            Store(path, create=False, empty_message="the caller's way on")
        # opened for reading, no database can be started in it: no way on offered
        with pytest.raises(
            MissingDatabaseError, match=r"is empty \(no database in it\); nothing was written$"
        ):
            Store(path, create=False, read_only=True, empty_message="the caller's way on")
        assert _digest(path) == before and _siblings_absent(path)


def test_an_empty_sqlite_file_is_no_backup_to_restore(tmp_path: Path) -> None:
    """Restoring it once replaced a real database with an empty memory (exit 0)."""
    empty = _sqlite_file(tmp_path / "empty.db", "CREATE TABLE t (x)", "DROP TABLE t")
    assert backup_problem(empty) == f"{empty} is an empty database (no tables)"


# -- item 8: a full disk reports the real cause, nothing half-written ---------------------


def _episodes_file(path: Path, n: int) -> Path:
    lines = [json.dumps({"content": f"episode {i} " + "filler text " * 80}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_disk_full_during_import_raises_the_real_cause(demo_db: Path, tmp_path: Path) -> None:
    store = Store(demo_db)
    store.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    episodes = Episode.select().count()
    pages = store.execute("PRAGMA page_count")[0][0]
    store.execute(f"PRAGMA max_page_count = {int(pages) + 2}")
    with pytest.raises((peewee.DatabaseError, sqlite3.DatabaseError)) as info:
        import_file(store, _episodes_file(tmp_path / "big.jsonl", 400))
    text = str(info.value)
    assert "full" in text and "no transaction is active" not in text
    # peewee's error, as every other statement of the store raises (the import's one
    # multi-row INSERT is sent through execute_sql, not a bare cursor)
    assert isinstance(info.value, peewee.OperationalError)
    assert not store.db.connection().in_transaction
    assert Episode.select().count() == episodes
    assert store.integrity_check() == "ok"
    full = "database or disk is full: the import was not applied"
    with pytest.raises(CuratorError, match=full), store.explained_write("import"):
        Episode.insert_many(
            [
                {
                    "content_hash": f"h{i}",
                    "text": "x" * 2000,
                    "timestamp": "2024-01-01T00:00:00Z",
                    "source": "t",
                    "metadata": "{}",
                    "imported_at": "2024-01-01T00:00:00Z",
                    "classify_truncated": False,
                }
                for i in range(200)
            ]
        ).execute()
    store.close()


# -- item 9: read-only ---------------------------------------------------------------------


def test_read_only_store_reads_refuses_writes_and_leaves_no_files(demo_db: Path) -> None:
    before = _digest(demo_db)
    with Store(demo_db, read_only=True) as store:
        assert store.read_only
        assert Episode.select().count() > 0 and Pattern.select().count() > 0
        with pytest.raises(ReadOnlyError, match=r"^read-only: ") as info, store.write():
            Pattern.update(importance=0.5).execute()
        assert info.value.exit_code == 2
    assert _digest(demo_db) == before and _siblings_absent(demo_db)


def test_read_only_store_after_a_crash_reads_the_committed_wal(demo_db: Path) -> None:
    """A -wal left by a crash holds committed rows: a read-only open must see them."""
    writer = sqlite3.connect(demo_db)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE pattern SET importance = 0.123")
    writer.commit()
    copy = demo_db.with_name("copy.sqlite")
    for suffix in ("", "-wal"):  # a copy as a crash would leave it (no -shm)
        copy.with_name(copy.name + suffix).write_bytes(
            demo_db.with_name(demo_db.name + suffix).read_bytes()
        )
    writer.close()
    with Store(copy, read_only=True):
        assert {p.importance for p in Pattern.select()} == {0.123}


def test_read_only_store_refuses_a_database_that_needs_an_upgrade(tmp_path: Path) -> None:
    path = _sqlite_file(tmp_path / "v1.db", *MIGRATIONS[0], "PRAGMA user_version = 1")
    before = _digest(path)
    with pytest.raises(ReadOnlyError, match="needs an upgrade"):
        Store(path, read_only=True)
    assert _digest(path) == before


# -- item 10: reads never wait for writers --------------------------------------------------


@pytest.fixture
def held_write_lock(demo_db: Path) -> Iterator[sqlite3.Connection]:
    other = sqlite3.connect(demo_db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE pattern SET importance = 0.5")
    yield other
    other.execute("ROLLBACK")
    other.close()


def test_opening_and_reading_do_not_wait_for_a_writer(
    demo_db: Path, held_write_lock: sqlite3.Connection
) -> None:
    with Store(demo_db, busy_timeout_s=0.2):
        assert Pattern.select().count() > 0
        assert 0.5 not in {p.importance for p in Pattern.select()}  # committed state only


def test_a_write_behind_a_writer_says_busy(
    demo_db: Path, held_write_lock: sqlite3.Connection
) -> None:
    with Store(demo_db, busy_timeout_s=0.2) as store:
        busy = r"^busy: another curator process is writing"
        with pytest.raises(StoreBusyError, match=busy), store.write():
            Pattern.update(importance=0.9).execute()
        assert not store.db.connection().in_transaction
        with pytest.raises(StoreBusyError) as info, store.explained_write("relabel"):
            pass
        assert info.value.exit_code == 1


def test_a_transaction_sqlite_rolled_back_itself_reports_the_original_error(
    demo_db: Path,
) -> None:
    """SQLite may end the transaction itself (a full disk while spilling the cache does);
    ``RAISE(ROLLBACK)`` in a connection-local TEMP trigger is SQLite's own way to do that
    on demand. The error raised must be the original one, not "cannot rollback - no
    transaction is active" from a second ROLLBACK."""
    with Store(demo_db) as store:
        patterns = Pattern.select().count()
        store.execute(
            "CREATE TEMP TRIGGER fail_insert BEFORE INSERT ON main.pattern "
            "BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END"
        )
        errors = (peewee.DatabaseError, sqlite3.DatabaseError)
        with pytest.raises(errors) as info, store.write():
            Pattern.update(importance=0.25).execute()
            store.execute("INSERT INTO pattern SELECT * FROM pattern LIMIT 1")
        assert "database or disk is full" in str(info.value)
        assert "no transaction is active" not in str(info.value)
        assert not store.db.connection().in_transaction and store.db.transaction_depth() == 0
        assert Pattern.select().count() == patterns
        assert 0.25 not in {p.importance for p in Pattern.select()}  # nothing half-written
        with store.write():  # the connection is usable again
            Pattern.update(importance=0.5).execute()


def test_a_lock_held_at_open_is_waited_for_as_long_as_the_busy_timeout_says(
    demo_db: Path,
) -> None:
    """The open's read-only check waited a fixed 5 s for an exclusive lock whatever the
    busy timeout, and its message did not say it had waited."""
    holder = sqlite3.connect(demo_db, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreBusyError, match=r"busy: .* \(waited 0\.2 s for it\)"):
            Store(demo_db, busy_timeout_s=0.2)
    finally:
        holder.close()
    with Store(demo_db, busy_timeout_s=0.2) as store:
        assert store.schema_version == LATEST_VERSION
