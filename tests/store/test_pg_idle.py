"""A connection handed back by one job's thread serves the next, and carries nothing over.

Against the session's real PostgreSQL server: each job runs on a thread of its own, as
the window's do (:mod:`curator.gui.runtime.operations`), and the server says which of
its sessions answered (``pg_backend_pid``) and which are open (``pg_stat_activity``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator.store import pg_driver, pg_idle
from curator.store.db import Store
from curator.store.pg_connection import ConnectionLost


def in_a_thread(call: Callable[[], Any]) -> Any:
    """``call()`` on a thread of its own (a job's): its result, or its exception raised."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    if "error" in box:
        raise box["error"]
    return box.get("value")


# pg_terminate_backend(pid, 20000) returns once the session has ended (not when it was
# merely asked to): what follows meets the ended session, never one still ending.


def pid(store: Store) -> int:
    return int(store.execute("SELECT pg_backend_pid()")[0][0])


def job(store: Store, body: Callable[[Store], Any] = pid, *, hand_back: bool = True) -> Any:
    """``body(store)`` on a thread of its own, which then hands back (or closes) its
    connection, as a background job of the window does."""

    def run() -> Any:
        try:
            return body(store)
        finally:
            store.hand_back() if hand_back else store.close()

    return in_a_thread(run)


def idle(store: Store) -> bool:
    """Whether this thread's connection is outside any transaction (as libpq last heard
    from the server), looked at before it runs anything."""
    psycopg = pg_driver.load()
    return bool(store.db.connection().info.transaction_status == psycopg.pq.TransactionStatus.IDLE)


def sessions(server: PostgresServer, url: str) -> int:
    """The open sessions on ``url``'s database, the asking one left out."""
    name = url.rsplit("/", 1)[1].split("?")[0]
    psycopg = pg_driver.load()
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    opened = Store(pg_url)
    opened.close()  # the opening thread's own: only the jobs' sessions are counted
    yield opened
    opened.dispose()


def test_jobs_one_after_another_are_answered_by_one_session(
    store: Store, pg_server: PostgresServer, pg_url: str
) -> None:
    pids = {job(store) for _ in range(20)}
    assert len(pids) == 1  # twenty new connections before
    assert sessions(pg_server, pg_url) == 1  # the one kept, idle
    store.dispose()
    assert sessions(pg_server, pg_url) == 0


def test_a_plain_close_keeps_nothing(store: Store, pg_server: PostgresServer, pg_url: str) -> None:
    pids = {job(store, hand_back=False) for _ in range(3)}
    assert len(pids) == 3
    assert sessions(pg_server, pg_url) == 0


def test_a_session_setting_or_an_unfinished_answer_is_not_handed_on(store: Store) -> None:
    first = job(store, lambda s: (s.execute("SET work_mem = '8MB'"), pid(s))[1])
    assert job(store) != first  # the setting would have reached the next job
    second = job(store)
    assert job(store) == second

    def waiting_at_most(s: Store) -> int:
        with s.waiting_at_most(0.5):
            return pid(s)

    third = job(store, waiting_at_most)  # its lock wait set and set back: not kept either
    assert job(store) != third
    fresh = job(store, lambda s: s.execute("SHOW lock_timeout")[0][0], hand_back=False)
    assert job(store, lambda s: s.execute("SHOW lock_timeout")[0][0]) == fresh


def test_a_failed_transaction_is_rolled_back_before_the_next_job_sees_it(store: Store) -> None:
    def fails(s: Store) -> None:
        with s.write():
            s.execute("INSERT INTO setting (key, value) VALUES ('half', '\"x\"')")
            s.execute("SELECT 1/0")

    with pytest.raises(Exception, match="division by zero"):
        job(store, fails)
    state = job(
        store,
        lambda s: (idle(s), s.execute("SELECT count(*) FROM setting WHERE key = 'half'")[0][0]),
    )
    assert state == (True, 0)  # not inside the old transaction, and nothing of it kept


def test_a_kept_session_the_server_ended_is_not_handed_out(
    store: Store, pg_server: PostgresServer, pg_url: str
) -> None:
    kept = job(store)
    pg_server.admin(f"SELECT pg_terminate_backend({kept}, 20000)")
    assert job(store) != kept  # a new session answered, no error
    assert sessions(pg_server, pg_url) == 1
    # a write as its first statement (not sent again after a lost session: it may have
    # run) meets no ended session either
    kept = job(store)
    pg_server.admin(f"SELECT pg_terminate_backend({kept}, 20000)")
    job(store, lambda s: s.execute("INSERT INTO setting (key, value) VALUES ('after', '1')"))
    assert job(store, lambda s: s.execute("SELECT value FROM setting WHERE key = 'after'")) == [
        ("1",)
    ]


def test_a_session_cut_while_in_use_fails_its_job_and_is_not_kept(
    store: Store, pg_server: PostgresServer
) -> None:
    def cut_inside_a_write(s: Store) -> None:
        with s.write():
            pg_server.admin(f"SELECT pg_terminate_backend({pid(s)}, 20000)")
            s.execute("INSERT INTO setting (key, value) VALUES ('lost', '\"x\"')")

    with pytest.raises(ConnectionLost):
        job(store, cut_inside_a_write)
    assert job(store, lambda s: s.execute("SELECT count(*) FROM setting WHERE key = 'lost'"))[
        0
    ] == (0,)


def test_at_most_a_few_are_kept_and_none_past_its_idle_time(
    store: Store, pg_server: PostgresServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Barrier(pg_idle.KEPT + 3), threading.Event()

    def together(s: Store) -> int:
        started.wait(30)
        release.wait(30)
        return pid(s)

    threads = [
        threading.Thread(target=lambda: job(store, together)) for _ in range(pg_idle.KEPT + 2)
    ]
    for thread in threads:
        thread.start()
    started.wait(30)
    release.set()
    for thread in threads:
        thread.join(60)
    assert sessions(pg_server, pg_url) == pg_idle.KEPT
    monkeypatch.setattr(pg_idle, "IDLE_FOR_S", 0.0)  # every kept one is now too old
    fresh = job(store)
    assert sessions(pg_server, pg_url) == 1  # the old ones closed as they were passed over
    assert job(store) != fresh


# -- any mix of jobs: what one job did never shows in the next ----------------------------

STEPS = st.lists(
    st.sampled_from(["read", "write", "failed write", "set", "cut", "close", "ended"]),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_any_mix_of_jobs_leaves_each_job_a_clean_session(
    steps: list[str], pg_server: PostgresServer, pg_url: str
) -> None:
    """Reads, writes, failed writes, session settings, sessions cut in use or while kept,
    plain closes: every job starts outside a transaction, with the store's own settings,
    and after ``dispose()`` no session is left."""
    store = Store(pg_url)
    store.close()  # the opening thread's own: only the jobs' sessions are counted
    wait, memory = (
        job(store, lambda s: s.execute("SHOW lock_timeout")[0][0], hand_back=False),
        job(store, lambda s: s.execute("SHOW work_mem")[0][0], hand_back=False),
    )
    try:
        for step in steps:
            state = job(
                store,
                lambda s: (
                    idle(s),
                    *s.execute(
                        "SELECT current_setting('lock_timeout'), current_setting('work_mem'), "
                        "pg_backend_pid()"
                    )[0],
                ),
            )
            assert state[:3] == (True, wait, memory)
            if step == "read":
                job(store, lambda s: s.execute("SELECT count(*) FROM episode"))
            elif step == "write":
                job(store, lambda s: _write(s, fail=False))
            elif step == "failed write":
                with pytest.raises(ZeroDivisionError):
                    job(store, lambda s: _write(s, fail=True))
            elif step == "set":
                job(store, lambda s: s.execute("SET work_mem = '9321kB'"))
            elif step == "cut":
                with pytest.raises(ConnectionLost):
                    job(store, lambda s: _write(s, fail=False, cut=pg_server))
            elif step == "close":
                job(store, hand_back=False)
            elif step == "ended":
                pg_server.admin(f"SELECT pg_terminate_backend({state[3]}, 20000)")
            assert sessions(pg_server, pg_url) <= pg_idle.KEPT
    finally:
        store.dispose()
    assert sessions(pg_server, pg_url) == 0


def _write(store: Store, *, fail: bool, cut: PostgresServer | None = None) -> None:
    with store.write():
        store.execute(
            "INSERT INTO setting (key, value) VALUES ('mixed', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = '2'"
        )
        if cut is not None:
            cut.admin(f"SELECT pg_terminate_backend({pid(store)}, 20000)")
            store.execute("SELECT 1")
        if fail:
            raise ZeroDivisionError("the job's own failure")
