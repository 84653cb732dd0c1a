"""The first call after the server dropped a connection: sent again, or one sentence.

The connections are ended for real: by ``pg_terminate_backend`` from an administrator's
connection, and by restarting the session's server.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator.store.db import Store
from curator.store.importer import import_file
from curator.store.pg_connection import ConnectionLost


def cut(server: PostgresServer, store: Store) -> None:
    pid = int(store.execute("SELECT pg_backend_pid()")[0][0])
    server.admin(f"SELECT pg_terminate_backend({pid})")


def restart(server: PostgresServer) -> None:
    """Restart the server (its options are kept in postmaster.opts). Its output goes to
    the null device: a pipe it inherited would hold this call until the session ends."""
    command = [*server.as_user, str(server.bin_dir / "pg_ctl"), "-D", str(server.folder / "data")]
    subprocess.run(
        [*command, "restart", "-m", "fast", "-w"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
        check=True,
    )


def insert(store: Store, text: str) -> None:
    store.db.execute_sql("INSERT INTO setting (key, value) VALUES (?, ?)", (text, '"x"'))


def keys(store: Store) -> list[str]:
    rows = store.execute("SELECT key FROM setting WHERE key LIKE 'k%' ORDER BY key")
    return [str(r[0]) for r in rows]


def test_reads_and_transactions_after_a_drop_connect_again(
    pg_server: PostgresServer, pg_url: str
) -> None:
    store = Store(pg_url)
    try:
        cut(pg_server, store)
        assert store.execute("SELECT count(*) FROM episode") == [(0,)]
        cut(pg_server, store)
        with store.read():
            assert store.execute("SELECT count(*) FROM setting")
        cut(pg_server, store)
        with store.write():  # nothing had begun: BEGIN is sent again on a new connection
            insert(store, "k1")
        assert keys(store) == ["k1"]
    finally:
        store.close()


def insert_many(store: Store, text: str) -> None:
    """The bulk writes' way (a commit's change rows, an undo, a copy): a bare cursor."""
    rows = [(f"{text}-{i}", '"x"') for i in range(3)]
    store.db.cursor().executemany("INSERT INTO setting (key, value) VALUES (?, ?)", rows)


@pytest.mark.parametrize("write", [insert, insert_many], ids=["execute_sql", "executemany"])
def test_a_drop_inside_a_transaction_is_one_sentence_and_applies_nothing(
    pg_server: PostgresServer, pg_url: str, write: object
) -> None:
    assert callable(write)
    store = Store(pg_url)
    try:
        with pytest.raises(ConnectionLost) as lost, store.write():
            insert(store, "k1")
            cut(pg_server, store)
            write(store, "k2")
        message = str(lost.value)
        assert "\n" not in message and "was not applied" in message
        assert keys(store) == []  # and the next call works
    finally:
        store.close()


def test_a_drop_under_an_import_is_one_sentence_and_imports_nothing(
    pg_server: PostgresServer, pg_url: str, tmp_path: Path
) -> None:
    """The import's multi-row INSERT meets the cut as any statement does: ConnectionLost,
    not psycopg's bare error, and the file's transaction applies nothing."""
    store = Store(pg_url)
    path = tmp_path / "episodes.jsonl"
    path.write_text("".join(f'{{"text": "episode {i}"}}\n' for i in range(3)), "utf-8")

    def cut_before_the_insert() -> bool:  # asked before every chunk is written
        cut(pg_server, store)
        return False

    try:
        with pytest.raises(ConnectionLost, match="was not applied") as lost:
            import_file(store, path, cancelled=cut_before_the_insert)
        assert "\n" not in str(lost.value)
        assert store.execute("SELECT count(*) FROM episode") == [(0,)]
        assert import_file(store, path).imported == 3  # and the next import works
    finally:
        store.close()


def test_a_write_outside_a_transaction_is_not_sent_twice(
    pg_server: PostgresServer, pg_url: str
) -> None:
    """A write may have run before the cut: it is not repeated, the caller is told."""
    store = Store(pg_url)
    try:
        cut(pg_server, store)
        with pytest.raises(ConnectionLost, match="may not have run"):
            insert(store, "k1")
        insert(store, "k2")
        assert keys(store) == ["k2"]
    finally:
        store.close()


def test_a_server_restart_is_survived(pg_server: PostgresServer, pg_url: str) -> None:
    store = Store(pg_url)
    try:
        with store.write():
            insert(store, "k1")
        restart(pg_server)
        assert keys(store) == ["k1"]
        with store.write():
            insert(store, "k2")
        assert keys(store) == ["k1", "k2"]
    finally:
        store.close()


def hang_up_seen_first(store: Store) -> None:
    """Fault injection: the next statement meets psycopg's "connection socket closed".

    psycopg's wait raises it when its poll sees the hang-up before libpq has read it, so
    the connection's status still says it is fine. With a real cut that happens only
    when the statement is sent just as the ended backend goes (the property test below
    met it once in many runs); this stand-in for the wait makes it happen once, now."""
    conn: Any = store.db.connection()
    real = conn.wait

    def wait(gen: Any, *args: Any, **kwargs: Any) -> Any:
        conn.wait = real
        gen.close()
        raise psycopg.OperationalError("connection socket closed")

    conn.wait = wait


def _read(store: Store) -> object:
    return keys(store)


def _snapshot(store: Store) -> object:
    with store.read():
        return keys(store)


@pytest.mark.parametrize("call", [_read, _snapshot], ids=["read", "snapshot"])
def test_a_hang_up_seen_before_libpq_is_a_lost_connection_too(
    pg_url: str, call: Callable[[Store], object]
) -> None:
    """A read or a snapshot is sent again on a new connection; a write is one sentence."""
    store = Store(pg_url)
    try:
        with store.write():
            insert(store, "k1")
        hang_up_seen_first(store)
        assert call(store) == ["k1"]
        hang_up_seen_first(store)
        with pytest.raises(ConnectionLost, match="may not have run"):
            insert(store, "k2")
        with pytest.raises(ConnectionLost, match="was not applied"), store.write():
            insert(store, "k3")
            hang_up_seen_first(store)
            insert(store, "k4")
        assert keys(store) == ["k1"]
    finally:
        store.close()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["read", "write", "snapshot"]), st.booleans()), max_size=8
    )
)
@example(steps=[("write", True), ("write", True), ("read", True)])
def test_property_every_call_after_a_drop_succeeds_or_says_so_once(
    pg_server: PostgresServer, pg_url: str, steps: list[tuple[str, bool]]
) -> None:
    """Whatever runs after a drop: reads and whole transactions succeed, and what a call
    reports as written is exactly what the database holds."""
    store = Store(pg_url)
    try:
        with store.write():
            store.db.execute_sql("DELETE FROM setting WHERE key LIKE 'k%'")
        written: list[str] = []
        for number, (kind, drop) in enumerate(steps):
            if drop:
                cut(pg_server, store)
            if kind == "read":
                assert keys(store) == sorted(written)
            elif kind == "snapshot":
                with store.read():
                    assert keys(store) == sorted(written)
            else:
                with store.write():
                    insert(store, f"k{number:02d}")
                written.append(f"k{number:02d}")
        assert keys(store) == sorted(written)
    finally:
        store.close()
