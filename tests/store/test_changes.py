"""Changes made by other connections reach a watcher: the same interface on both engines.

A watcher (:mod:`curator.store.changes`) is what the window waits on in a background
thread; here a second :class:`Store` (another connection, as another process would have)
writes, and the first store's watcher must report it within a second, and nothing when
nothing was committed. On PostgreSQL the notification also names the tables written.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.store.changes import Change, ChangeWatcher
from curator.store.db import Store
from curator.store.engine import CHANGE_COUNTER_KEY
from curator.store.models import ALL_MODELS, Episode, IdentityVersion, Setting, utcnow

WITHIN_S = 1.0
"""A change must be seen within this; it is a bound on the wait, never a sleep."""


@pytest.fixture
def stores(db_url: str) -> Iterator[tuple[Store, Store]]:
    """The watching store and a second connection that writes, on one database."""
    first = Store(db_url)
    second = Store(db_url)
    yield first, second
    second.close()
    first.close()


_serial = iter(range(10**9))


def add_episode(store: Store) -> None:
    n = next(_serial)
    with store.db.bind_ctx(ALL_MODELS), store.write():  # the models follow the last open
        Episode.create(content_hash=f"change-{n}", text=f"episode {n}", timestamp=utcnow())


def test_a_write_by_another_connection_is_seen(stores: tuple[Store, Store]) -> None:
    first, second = stores
    with first.changes() as watcher:
        watcher.wait(0.0)  # the watcher knows where it starts
        assert watcher.wait(0.05) is None  # nothing committed since
        thread = threading.Thread(target=add_episode, args=(second,))
        thread.start()
        change = watcher.wait(WITHIN_S)
        thread.join()
        assert change is not None
        assert change.touches("episode")
        assert watcher.wait(0.05) is None  # one commit, one change


def test_an_interrupt_ends_a_sqlite_wait_at_once(tmp_path: Path) -> None:
    """A closing window interrupts its watcher rather than waiting out the poll: a wait of
    a minute ends as soon as another thread interrupts it, and later waits return at once."""
    store = Store(tmp_path / "curator.sqlite")
    try:
        with store.changes() as watcher:
            started = threading.Event()
            results: list[Change | None] = []

            def wait_long() -> None:
                started.set()
                results.append(watcher.wait(60.0))

            thread = threading.Thread(target=wait_long, daemon=True)
            thread.start()
            started.wait()
            watcher.interrupt()
            thread.join(timeout=10.0)
            assert not thread.is_alive(), "the interrupted wait went on"
            assert results == [None]
            results.clear()
            wait_long()  # interrupted for good: no minute's wait here either
            assert results == [None]
    finally:
        store.close()


def test_a_read_only_watch_of_a_file_without_a_wal_sees_another_process_write(
    tmp_path: Path,
) -> None:
    """With no -wal beside the file a read-only watch is ``immutable`` (nothing is made
    beside a file this user may not write), and its counter never moved: a read-only
    window never showed what another process wrote. The file's size, time or new -wal
    say it; so does a write by a writer still open (its -wal beside the file)."""
    path = tmp_path / "curator.sqlite"
    Store(path).close()
    assert not path.with_name(path.name + "-wal").exists()
    reader = Store(path, read_only=True)
    try:
        with reader.changes() as watcher:
            assert watcher.wait(0.05) is None
            writer = Store(path)
            try:
                add_episode(writer)
                assert watcher.wait(WITHIN_S) is not None  # its -wal appeared
                assert watcher.wait(0.05) is None
                add_episode(writer)
                assert watcher.wait(WITHIN_S) is not None  # a plain read-only one now
            finally:
                writer.close()
            assert watcher.wait(0.05) is None  # a close commits nothing
            other = Store(path)
            add_episode(other)
            other.close()
            assert watcher.wait(WITHIN_S) is not None
    finally:
        reader.close()


def test_a_rolled_back_write_is_no_change(stores: tuple[Store, Store]) -> None:
    first, second = stores
    with first.changes() as watcher:
        watcher.wait(0.0)  # the watcher knows where it starts
        with pytest.raises(RuntimeError), second.db.bind_ctx(ALL_MODELS), second.write():
            Episode.create(content_hash="gone", text="never committed", timestamp=utcnow())
            raise RuntimeError("abandon the write")
        assert watcher.wait(0.3) is None
        add_episode(second)
        assert watcher.wait(WITHIN_S) is not None  # and the watcher still works


def test_a_burst_of_commits_is_seen_and_then_quiet(stores: tuple[Store, Store]) -> None:
    first, second = stores
    with first.changes() as watcher:
        watcher.wait(0.0)
        for _ in range(20):
            add_episode(second)
        assert watcher.wait(WITHIN_S) is not None
        while watcher.wait(0.2) is not None:  # SQLite may split a burst in two polls
            pass
        assert watcher.wait(0.1) is None


def test_the_watcher_owners_own_writes_are_changes_too(stores: tuple[Store, Store]) -> None:
    """The window tells its own writes apart by data_version; the watcher reports all."""
    first, _ = stores
    with first.changes() as watcher:
        watcher.wait(0.0)
        add_episode(first)
        assert watcher.wait(WITHIN_S) is not None


# -- PostgreSQL: the tables named -----------------------------------------------------------

TABLES = {
    "episode": Episode,
    "setting": Setting,
    "identity": IdentityVersion,
}


def write_rows(store: Store, kinds: frozenset[str]) -> None:
    n = next(_serial)
    with store.db.bind_ctx(ALL_MODELS), store.write():
        if "episode" in kinds:
            Episode.create(content_hash=f"prop-{n}", text=f"property {n}", timestamp=utcnow())
        if "setting" in kinds:
            Setting.insert(key=f"property-{n}", value="1").execute()
        if "identity" in kinds:
            IdentityVersion.create(version=n + 1000, identity_text="me", axioms=[])


def drain(watcher: ChangeWatcher) -> None:
    while watcher.wait(0.05) is not None:
        pass


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(writes=st.lists(st.frozensets(st.sampled_from(sorted(TABLES))), min_size=1, max_size=4))
@example(writes=[frozenset()])
@example(writes=[frozenset(), frozenset()])  # an empty write's own counter bump is no change
@example(writes=[frozenset(TABLES)])
# one connection writing one table, then another: the second names only its own (the
# server's pending counts still held the first's until they were flushed)
@example(writes=[frozenset({"episode"}), frozenset({"identity"}), frozenset({"episode"})])
def test_postgresql_names_exactly_the_tables_each_transaction_wrote(
    pg_url: str, writes: list[frozenset[str]]
) -> None:
    with Store(pg_url) as first, Store(pg_url) as second, first.changes() as watcher:
        watcher.wait(0.0)
        drain(watcher)
        for kinds in writes:
            write_rows(second, kinds)
            change = watcher.wait(WITHIN_S if kinds else 0.2)
            if not kinds:
                assert change is None  # a transaction that wrote no row announces nothing
                continue
            assert change is not None
            expected = {TABLES[k]._meta.table_name for k in kinds}  # type: ignore[attr-defined]
            assert change.tables == expected
            # the counter after the change, read on the watcher's own connection
            assert change.counter == second.change_counter() == first.change_counter()


def test_postgresql_watcher_comes_back_after_its_connection_is_cut(
    pg_url: str, pg_server: object
) -> None:
    """The server ends the watcher's connection (as a restart would): the next waits
    connect again and report a change of unknown tables, since notifications were lost."""
    from pg_server import PostgresServer

    assert isinstance(pg_server, PostgresServer)
    database = pg_url.rsplit("/", 1)[1]
    with Store(pg_url) as writer, writer.changes() as watcher:
        # the first wait says where it starts: nothing was heard before it listened
        assert watcher.wait(0.05) == Change(counter=writer.change_counter())
        assert watcher.wait(0.05) is None
        pg_server.admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE application_name = 'curator-watch' AND datname = '{database}'"
        )
        add_episode(writer)  # sent while the watcher's connection is gone
        seen: list[Change] = []
        for _ in range(10):
            change = watcher.wait(0.2)
            if change is not None:
                seen.append(change)
                break
        # unknown tables: look again; the counter already counts the lost write
        assert seen == [Change(counter=writer.change_counter())]
        add_episode(writer)
        change = watcher.wait(WITHIN_S)
        assert change is not None and change.tables == {"episode"}
        assert change.counter == writer.change_counter()


def test_postgresql_watcher_whose_server_stops_answering_is_given_up_and_made_again(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's backend is frozen (SIGSTOP: its TCP connection stays open, as behind
    a proxy that forwards nothing). Before, the watcher heard nothing for ever and said
    nothing: a window stopped refreshing. Now a quiet connection is asked the counter, an
    unanswered question gives it up, and the next wait listens on a new connection and
    reports the write made meanwhile."""
    import os
    import signal

    from curator.store import changes

    monkeypatch.setattr(changes, "QUIET_CHECK_S", 0.3)
    monkeypatch.setattr(changes, "WATCH_ANSWER_S", 1.0)
    with Store(pg_url) as writer, writer.changes() as watcher:
        assert watcher.wait(0.05) == Change(counter=writer.change_counter())
        frozen = int(watcher._conn.info.backend_pid)  # type: ignore[attr-defined]
        os.kill(frozen, signal.SIGSTOP)
        try:
            add_episode(writer)  # its notification goes to the frozen backend
            seen: list[Change] = []
            for _ in range(100):
                change = watcher.wait(0.1)
                if change is not None:
                    seen.append(change)
                    break
        finally:
            os.kill(frozen, signal.SIGCONT)
        assert seen == [Change(counter=writer.change_counter())]
        assert int(watcher._conn.info.backend_pid) != frozen  # type: ignore[attr-defined]
        add_episode(writer)
        change = watcher.wait(WITHIN_S)
        assert change is not None and change.tables == {"episode"}


def test_postgresql_watcher_reports_a_counter_that_moved_unheard(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit whose notification never came (a server that lost it, a proxy that
    dropped it) is found by the quiet round trip. Fault injection: the notification is
    sent on a channel nobody listens to, so the counter moves unheard."""
    import psycopg

    from curator.store import changes

    monkeypatch.setattr(changes, "QUIET_CHECK_S", 0.3)
    with Store(pg_url) as writer, writer.changes() as watcher:
        assert watcher.wait(0.05) == Change(counter=writer.change_counter())
        assert watcher.wait(0.5) is None  # quiet, and the counter has not moved
        with psycopg.connect(pg_url, autocommit=True) as unannounced:  # no NOTIFY
            unannounced.execute(
                "UPDATE setting SET value = %s WHERE key = %s",
                (str(writer.change_counter() + 1), CHANGE_COUNTER_KEY),
            )
        seen = [c for c in (watcher.wait(0.2) for _ in range(10)) if c is not None]
        assert seen[:1] == [Change(counter=writer.change_counter())]
