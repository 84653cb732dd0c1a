"""A PostgreSQL server that stops answering in the middle of a statement is given up.

The server really stops: its backend process for the store's connection is frozen with
SIGSTOP (its TCP connection stays open, and the kernel still answers keepalive probes), as
a hung server or a proxy that keeps the connection but forwards nothing would. The answer
margin is shortened for the test (it is a minute in use).
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator

import pytest

from curator.store import pg_connection
from curator.store.db import Store
from curator.store.pg_connection import ConnectionLost


@pytest.fixture
def store(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setattr(pg_connection, "ANSWER_MARGIN_S", 1.0)
    opened = Store(pg_url, busy_timeout_s=0.5)  # answered within 1.5 s, or given up
    yield opened
    opened.close()


def _frozen(store: Store, call: Callable[[Callable[[], None]], object]) -> object:
    """``call(freeze)`` on a thread of its own; ``freeze()`` stops the backend of that
    thread's connection (peewee keeps one per thread) and returns once it is stopped.
    What ``call`` returned or raised; the thread must end: a hang is a failure."""
    backend: queue.Queue[int] = queue.Queue()
    stopped = threading.Event()
    outcome: list[object] = []

    def freeze() -> None:
        backend.put(int(store.execute("SELECT pg_backend_pid()")[0][0]))
        assert stopped.wait(30)

    def run() -> None:
        try:
            outcome.append(call(freeze))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    pid = backend.get(timeout=30)
    os.kill(pid, signal.SIGSTOP)
    try:
        stopped.set()
        worker.join(60)
        assert not worker.is_alive(), "the statement was never given up"
    finally:
        os.kill(pid, signal.SIGCONT)
    return outcome[0]


def test_a_read_in_a_snapshot_is_given_up_in_one_sentence(store: Store) -> None:
    def read(freeze: Callable[[], None]) -> object:
        with store.read():
            freeze()
            return store.execute("SELECT count(*) FROM episode")

    raised = _frozen(store, read)
    assert isinstance(raised, ConnectionLost)
    assert "sent no answer for 1.5 s" in str(raised) and "\n" not in str(raised)
    assert store.execute("SELECT 1") == [(1,)]  # the store goes on, connected again


@pytest.mark.parametrize("where", ["a read on its own", "the start of a write"])
def test_a_statement_given_up_is_not_sent_again(store: Store, where: str) -> None:
    """A read outside a transaction, or the lock a write takes first, would be sent
    again on a new connection after a cut; not after the server stopped answering (it
    would most likely not answer again: the caller would wait a second deadline). The
    next call connects anew."""

    def call(freeze: Callable[[], None]) -> object:
        freeze()
        if where == "a read on its own":
            return store.execute("SELECT count(*) FROM episode")
        with store.write():
            return store.execute("SELECT 1")

    raised = _frozen(store, call)
    assert isinstance(raised, ConnectionLost) and "sent no answer" in str(raised)
    assert store.execute("SELECT 1") == [(1,)]


def test_a_bulk_write_in_a_transaction_is_given_up_and_not_applied(store: Store) -> None:
    def write(freeze: Callable[[], None]) -> object:
        with store.write():
            store.execute("INSERT INTO setting (key, value) VALUES ('k0', '\"w\"')")
            freeze()
            store.db.cursor().executemany(
                "INSERT INTO setting (key, value) VALUES (?, ?)", [("k1", '"x"'), ("k2", '"y"')]
            )
        return None

    raised = _frozen(store, write)
    assert isinstance(raised, ConnectionLost)
    assert "sent no answer" in str(raised) and "was not applied" in str(raised)
    assert store.execute("SELECT count(*) FROM setting WHERE key LIKE 'k_'") == [(0,)]


def test_a_long_bulk_write_answered_steadily_is_not_given_up(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is for an answer, not for the work: 60,000 rows take longer than it
    in all, and are answered a chunk at a time."""
    monkeypatch.setattr(pg_connection, "ANSWER_MARGIN_S", 0.5)
    store = Store(pg_url, busy_timeout_s=0.1)  # a chunk is answered within 0.6 s
    try:
        rows = [(f"bulk{i}", '"x"') for i in range(60_000)]
        with store.write():
            store.db.cursor().executemany("INSERT INTO setting (key, value) VALUES (?, ?)", rows)
        assert store.execute("SELECT count(*) FROM setting WHERE key LIKE 'bulk%'") == [(60_000,)]
    finally:
        store.close()


def test_a_change_of_the_schema_has_a_deadline_of_its_own(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema change had none: a frozen server held ``--create``, a migration or a
    copy's schema for ever. It waits longer than a statement (an index over every
    episode takes minutes), and is given up after that, saying which wait it was."""
    monkeypatch.setattr(pg_connection, "SCHEMA_ANSWER_S", 2.5)

    def change(freeze: Callable[[], None]) -> object:
        with store.write():
            freeze()
            store.execute("CREATE TABLE frozen_out (x integer)")
        return None

    raised = _frozen(store, change)
    assert isinstance(raised, ConnectionLost)
    said = str(raised)
    assert "sent no answer for 2.5 s (the most a change of the schema may take)" in said
    assert "was not applied" in said
    assert store.execute("SELECT to_regclass('frozen_out') IS NULL") == [(True,)]
