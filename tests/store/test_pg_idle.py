"""A connection handed back by one job's thread serves the next, and carries nothing over.

Against the session's real PostgreSQL server: each job runs on a thread of its own, as
the window's do (:mod:`curator.gui.runtime.operations`), and the server says which of
its sessions answered (``pg_backend_pid``) and which are open (``pg_stat_activity``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator.store import pg_connection, pg_driver, pg_idle
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


def pid(store: Store) -> int:
    """The server process answering this thread. (Ended below with
    ``pg_terminate_backend(pid, 20000)``, which returns once the session has ended, not
    when it was merely asked to: what follows meets the ended session.)"""
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


def sessions(server: PostgresServer, url: str, until: Callable[[int], bool]) -> int:
    """The open sessions on ``url``'s database (the asking one left out), once ``until``
    holds of their count or after 10 s: a server process lives on for a moment after its
    client closed the connection, longer on a busy machine."""
    name = url.rsplit("/", 1)[1].split("?")[0]
    psycopg = pg_driver.load()
    deadline = time.monotonic() + 10
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchone()
            assert row is not None
            if until(int(row[0])) or time.monotonic() > deadline:
                return int(row[0])
            time.sleep(0.02)


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
    assert sessions(pg_server, pg_url, lambda n: n == 1) == 1  # the one kept, idle
    store.dispose()
    assert sessions(pg_server, pg_url, lambda n: n == 0) == 0


def test_a_plain_close_keeps_nothing(store: Store, pg_server: PostgresServer, pg_url: str) -> None:
    pids = {job(store, hand_back=False) for _ in range(3)}
    assert len(pids) == 3
    assert sessions(pg_server, pg_url, lambda n: n == 0) == 0


#: What a job may leave in its session, each undone before the next job gets it: the
#: statement, and what the next job asks to see that it is gone.
LEFT_IN_A_SESSION = {
    "setting": ("SET work_mem = '8321kB'", "SELECT current_setting('work_mem') <> '8321kB'"),
    "setting in a write": (
        "write: SET work_mem = '8321kB'",
        "SELECT current_setting('work_mem') <> '8321kB'",
    ),
    "set_config": (
        "SELECT set_config('statement_timeout', '1234', false)",
        "SELECT current_setting('statement_timeout') <> '1234ms'",
    ),
    "lock wait": ("SET lock_timeout = 0", "SELECT current_setting('lock_timeout') <> '0'"),
    "temporary table": (
        "CREATE TEMP TABLE scratch (n int)",
        "SELECT to_regclass('pg_temp.scratch') IS NULL",
    ),
    "session lock": (
        "SELECT pg_advisory_lock(4242)",
        "SELECT NOT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = "
        "l.database WHERE d.datname = current_database() AND l.locktype = 'advisory' "
        "AND l.objid = 4242 AND l.granted)",
    ),
    "listen": ("LISTEN scratch", "SELECT NOT EXISTS (SELECT pg_listening_channels())"),
}


def leave(s: Store, statement: str) -> int:
    if statement.startswith("write: "):
        with s.write():
            s.execute(statement.removeprefix("write: "))
    else:
        s.execute(statement)
    return pid(s)


@pytest.mark.parametrize("what", sorted(LEFT_IN_A_SESSION))
def test_what_a_job_leaves_in_its_session_never_reaches_the_next(store: Store, what: str) -> None:
    statement, gone = LEFT_IN_A_SESSION[what]
    first = job(store, lambda s: leave(s, statement))
    seen = job(store, lambda s: (pid(s), s.execute(gone)[0][0]))
    assert seen == (first, True)  # the same session, emptied


def test_the_store_s_own_settings_stay_with_a_kept_session(store: Store) -> None:
    def waiting_at_most(s: Store) -> int:
        with s.waiting_at_most(0.5):
            return pid(s)

    fresh = job(store, lambda s: s.execute("SHOW lock_timeout")[0][0], hand_back=False)
    kept = job(store, waiting_at_most)
    assert job(store, lambda s: (pid(s), s.execute("SHOW lock_timeout")[0][0])) == (kept, fresh)


def test_a_statement_prepared_before_a_column_changed_type_does_not_fail_later_jobs(
    store: Store, pg_server: PostgresServer, pg_url: str
) -> None:
    """psycopg prepares a statement run five times; another session then changes the type
    of a column it reads: the prepared plan would fail on every later use."""
    read = "SELECT key, value FROM setting ORDER BY key"

    def often(s: Store) -> list[tuple[Any, ...]]:
        return [s.execute(read) for _ in range(8)][-1]

    job(store, often)
    name = pg_url.rsplit("/", 1)[1]
    pg_server.admin_in(name, "ALTER TABLE setting ALTER COLUMN value TYPE varchar(9000)")
    for _ in range(3):
        job(store, often)


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
    assert sessions(pg_server, pg_url, lambda n: n == 1) == 1
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
        # connected before the barrier: all of them open at once, however the threads are
        # scheduled (connecting after it, a slow one took a connection handed back by
        # another that had ended, and two sessions served the six jobs)
        answer = pid(s)
        started.wait(30)
        release.wait(30)
        return answer

    pids: list[int] = []
    threads = [
        threading.Thread(target=lambda: pids.append(job(store, together)))
        for _ in range(pg_idle.KEPT + 2)
    ]
    for thread in threads:
        thread.start()
    started.wait(30)
    release.set()
    for thread in threads:
        thread.join(60)
    assert len(set(pids)) == pg_idle.KEPT + 2
    assert sessions(pg_server, pg_url, lambda n: n == pg_idle.KEPT) == pg_idle.KEPT
    monkeypatch.setattr(pg_idle, "IDLE_FOR_S", 0.0)  # every kept one is now too old
    fresh = job(store)
    assert (
        sessions(pg_server, pg_url, lambda n: n == 1) == 1
    )  # the old ones closed as they were passed over
    assert job(store) != fresh


def test_a_kept_session_past_its_idle_time_is_closed_without_another_job(
    store: Store, pg_server: PostgresServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window left idle holds no server session for long: the kept one is closed by
    its timer, not only when a later job passes it over."""
    monkeypatch.setattr(pg_idle, "IDLE_FOR_S", 0.3)
    monkeypatch.setattr(pg_idle, "SWEEP_AFTER_S", 0.05)
    first = job(store)
    assert sessions(pg_server, pg_url, lambda n: n == 0) == 0
    assert job(store) != first  # a new session serves the next job
    store.dispose()  # the timer of the one kept since goes with the store
    assert pg_idle.SWEEPER_NAME not in {t.name for t in threading.enumerate()}


def test_a_timer_that_cannot_start_costs_no_session(
    store: Store, pg_server: PostgresServer, pg_url: str
) -> None:
    """No thread to be had for the timer (a stack no memory can hold, as a process out of
    threads or an interpreter shutting down refuses one): the job's hand-back still
    succeeds, and dispose() still closes the kept session."""
    default = threading.stack_size()

    def hand_back_without_threads() -> None:
        try:
            pid(store)
        finally:
            threading.stack_size(1 << 42)
            try:
                store.hand_back()
            finally:
                threading.stack_size(default)

    in_a_thread(hand_back_without_threads)
    assert pg_idle.SWEEPER_NAME not in {t.name for t in threading.enumerate()}
    assert sessions(pg_server, pg_url, lambda n: n == 1) == 1  # kept all the same
    store.dispose()
    assert sessions(pg_server, pg_url, lambda n: n == 0) == 0


@pytest.mark.parametrize("idle_for", [1e12, float("inf")])
def test_a_time_longer_than_any_wait_keeps_the_timer_alive(
    store: Store, idle_for: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_idle, "IDLE_FOR_S", idle_for)
    job(store)
    time.sleep(0.2)  # a timer given a wait past the platform's limit died at once
    (timer,) = [t for t in threading.enumerate() if t.name == pg_idle.SWEEPER_NAME]
    assert timer.is_alive()
    store.dispose()
    assert not timer.is_alive()


def test_the_timer_closes_only_the_sessions_past_their_time(
    store: Store, pg_server: PostgresServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two kept two seconds apart: the first one's timer closes it alone; the second
    serves the next job, and one taken before its time is up is never closed under it."""
    monkeypatch.setattr(pg_idle, "IDLE_FOR_S", 3.0)
    monkeypatch.setattr(pg_idle, "SWEEP_AFTER_S", 0.0)
    release, later = threading.Event(), []

    def hold(s: Store) -> int:
        answer = pid(s)
        release.wait(30)
        return answer

    holder = threading.Thread(target=lambda: later.append(job(store, hold)))
    holder.start()
    first = job(store)  # its own session (the other is in use): kept first
    time.sleep(2.0)  # time passing is the case
    release.set()
    holder.join(60)
    assert later and later[0] != first
    assert sessions(pg_server, pg_url, lambda n: n == 1) == 1  # the first one's timer

    def past_the_timer(s: Store) -> tuple[int, int]:
        before = pid(s)  # taken within its time
        time.sleep(1.5)  # its own time is up meanwhile, and its timer fires
        return before, pid(s)

    assert job(store, past_the_timer) == (later[0], later[0])


def test_a_server_that_does_not_answer_the_emptying_does_not_hold_the_job_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's server process stops (SIGSTOP) after the job's last statement: its
    thread gives the emptying up and closes the connection, instead of waiting the
    statements' deadline (90 s) before the job's result is delivered."""
    monkeypatch.setattr(pg_connection, "EMPTIED_WITHIN_S", 0.5)
    stopped: list[int] = []

    def then_stop(s: Store) -> int:
        answer = pid(s)
        try:
            os.kill(answer, signal.SIGSTOP)
        except PermissionError:
            pytest.skip("the server runs as another user this process may not signal")
        stopped.append(answer)
        return answer

    try:
        first = job(store, then_stop)  # a job that waited 90 s fails in_a_thread's join
    finally:
        for process in stopped:
            os.kill(process, signal.SIGCONT)
    assert job(store) != first


def test_a_job_that_ends_after_the_store_was_disposed_of_keeps_nothing(
    store: Store, pg_server: PostgresServer, pg_url: str
) -> None:
    running, release = threading.Event(), threading.Event()

    def slow(s: Store) -> int:
        answer = pid(s)
        running.set()
        release.wait(30)
        return answer

    worker = threading.Thread(target=lambda: job(store, slow))
    worker.start()
    assert running.wait(30)
    store.dispose()
    release.set()
    worker.join(60)
    assert sessions(pg_server, pg_url, lambda n: n == 0) == 0


# -- any mix of jobs: what one job did never shows in the next ----------------------------

STEPS = st.lists(
    st.sampled_from(
        ["read", "write", "failed write", "cut", "close", "ended", *sorted(LEFT_IN_A_SESSION)]
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS, idle_for=st.sampled_from([pg_idle.IDLE_FOR_S, 0.0, 0.02]))
def test_any_mix_of_jobs_leaves_each_job_a_clean_session(
    steps: list[str], idle_for: float, pg_server: PostgresServer, pg_url: str
) -> None:
    """Reads, writes, failed writes, whatever a job may leave in its session, sessions
    cut in use or while kept, plain closes, kept sessions closed by their timer while the
    next job takes one: every job starts outside a transaction, with the store's own
    settings and nothing of the job before, and after ``dispose()`` no session is left."""
    sweep_after = 0.0 if idle_for < 1 else pg_idle.SWEEP_AFTER_S
    with (
        mock.patch.object(pg_idle, "IDLE_FOR_S", idle_for),
        mock.patch.object(pg_idle, "SWEEP_AFTER_S", sweep_after),
    ):
        _mix_of_jobs(steps, pg_server, pg_url)


def _mix_of_jobs(steps: list[str], pg_server: PostgresServer, pg_url: str) -> None:
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
            elif step in LEFT_IN_A_SESSION:
                statement, gone = LEFT_IN_A_SESSION[step]
                job(store, lambda s, statement=statement: leave(s, statement))
                assert job(store, lambda s, gone=gone: s.execute(gone)[0][0]) is True
            elif step == "cut":
                with pytest.raises(ConnectionLost):
                    job(store, lambda s: _write(s, fail=False, cut=pg_server))
            elif step == "close":
                job(store, hand_back=False)
            elif step == "ended":
                pg_server.admin(f"SELECT pg_terminate_backend({state[3]}, 20000)")
            assert sessions(pg_server, pg_url, lambda n: n <= pg_idle.KEPT) <= pg_idle.KEPT
    finally:
        store.dispose()
    assert sessions(pg_server, pg_url, lambda n: n == 0) == 0


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
