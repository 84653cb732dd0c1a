"""StoreOps: store work runs off the GUI thread and its result comes back on it."""

from __future__ import annotations

import threading
from pathlib import Path

from curator.gui.runtime.operations import OpContext, StoreOps
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.models import Episode


def count_episodes(ctx: OpContext) -> int:
    return Episode.select().count()


def test_a_write_runs_on_its_own_thread_and_delivers_on_the_gui_thread(qtbot, store: Store):
    ops = StoreOps(store)
    gui_thread = threading.get_ident()
    delivered: list[tuple[int, int]] = []
    ops.write("Count", count_episodes, lambda n: delivered.append((n, threading.get_ident())))
    assert ops.busy
    qtbot.waitUntil(lambda: bool(delivered))
    assert delivered == [(Episode.select().count(), gui_thread)]
    assert ops.job_thread_ids and gui_thread not in ops.job_thread_ids
    assert not ops.busy


def test_a_second_write_is_refused_while_one_runs(qtbot, store: Store):
    ops = StoreOps(store)
    release = threading.Event()
    done: list[str] = []
    assert ops.write("Slow", lambda ctx: release.wait(10), lambda _: done.append("slow"))
    with qtbot.waitSignal(ops.refused) as refusal:
        assert not ops.write("Second", count_episodes, lambda _: done.append("second"))
    assert refusal.args == ["Second", "Slow"]  # announced once, by the mechanism
    assert ops.busy_label == "Slow"
    release.set()
    qtbot.waitUntil(lambda: done == ["slow"])
    assert ops.write("Second", count_episodes, lambda _: done.append("second"))
    qtbot.waitUntil(lambda: done == ["slow", "second"])


def test_only_the_newest_query_per_key_is_delivered(qtbot, store: Store):
    ops = StoreOps(store)
    gates = [threading.Event() for _ in range(3)]
    shown: list[int] = []
    for i, gate in enumerate(gates):
        ops.query("search", lambda ctx, g=gate, n=i: (g.wait(10), n)[1], shown.append)
    for gate in reversed(gates):  # the oldest finishes last
        gate.set()
    qtbot.waitUntil(lambda: ops.pending == 0)
    assert shown == [2]


def test_a_failure_arrives_as_one_line_and_a_callback_bug_as_a_signal(qtbot, store: Store):
    ops = StoreOps(store)
    errors: list[str] = []

    def broken(ctx: OpContext) -> None:
        raise ValueError("bad row 7\nsecond line")

    ops.write("Broken", broken, on_failed=errors.append)
    qtbot.waitUntil(lambda: bool(errors))
    assert errors == ["ValueError: bad row 7"]

    with qtbot.waitSignal(ops.failed) as blocker:
        ops.write("Count", count_episodes, lambda _: 1 / 0)
    assert blocker.args[0] == "Count"
    assert "ZeroDivisionError" in blocker.args[1]


def test_progress_and_cancel_reach_the_job(qtbot, store: Store):
    ops = StoreOps(store)
    seen: list[tuple[str, int, int]] = []
    ops.progressed.connect(lambda *args: seen.append(args))
    started = threading.Event()

    def long_job(ctx: OpContext) -> int:
        started.set()
        steps = 0
        while not ctx.cancelled and steps < 10_000:
            ctx.progress(steps, 10_000)
            steps += 1
            threading.Event().wait(0.001)
        return steps

    result: list[int] = []
    ops.write("Long", long_job, result.append)
    assert started.wait(5)
    ops.cancel()
    qtbot.waitUntil(lambda: bool(result))
    assert result[0] < 10_000
    qtbot.waitUntil(lambda: bool(seen))
    assert seen[0][0] == "Long" and seen[0][2] == 10_000


def test_the_window_shows_a_slow_write_in_the_status_bar(qtbot, main_window: MainWindow):
    services: AppServices = main_window.services
    release = threading.Event()

    def slow(ctx: OpContext) -> None:
        ctx.progress(3, 10)
        release.wait(10)

    services.ops.write("Relabelling", slow)
    assert not main_window.import_action.isEnabled()
    qtbot.waitUntil(lambda: main_window.busy_bar.isVisible())
    qtbot.waitUntil(lambda: "3/10" in main_window.busy_label.text())
    release.set()
    qtbot.waitUntil(lambda: not main_window.busy_bar.isVisible())
    assert main_window.import_action.isEnabled()


def test_closing_hides_the_window_before_waiting_for_a_held_up_write(
    qtbot, services: AppServices, qsettings
) -> None:
    """A write waiting on another writer's lock delays the close: the window must not sit
    on screen, frozen, meanwhile."""
    import sqlite3

    from PySide6.QtCore import QEvent, QObject

    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    running_at_hide: list[bool] = []

    class HideWatch(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Hide:
                running_at_hide.append(not services.ops.wait(0))  # a job thread alive
            return False

    watch = HideWatch()
    window.installEventFilter(watch)
    outside = sqlite3.connect(str(services.store.path), check_same_thread=False)  # a lock
    outside.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.0, outside.rollback)
    try:
        ids = [e.id for e in Episode.select(Episode.id).limit(3)]
        assert window.episodes_pane.start_relabel(ids, "noise")
        release.start()
        window.close()  # waits for the relabel, which waits for the lock
    finally:
        release.join()
        outside.close()
    assert running_at_hide and running_at_hide[0]  # before: hidden only after the wait
    assert not window.isVisible()


def test_the_window_says_which_write_waits_for_which(qtbot, main_window: MainWindow):
    release = threading.Event()
    main_window.services.ops.write("Relabelling", lambda ctx: release.wait(10))
    assert not main_window.import_episodes(Path("episodes.jsonl"))
    text = main_window.statusBar().currentMessage()
    assert text == "Importing episodes.jsonl: wait until “Relabelling” has finished."
    release.set()
    qtbot.waitUntil(lambda: not main_window.services.ops.busy)


def test_a_job_after_the_file_was_deleted_says_so(qtbot, tmp_path: Path) -> None:
    """SQLite says "unable to open database file" (or, before, "no such table" from the
    empty file a read made): the message names the cause, and the path stays empty."""
    path = tmp_path / "gone.sqlite"
    store = Store(path)
    try:
        ops = StoreOps(store)
        path.unlink()
        errors: list[str] = []
        ops.query("count", count_episodes, lambda _n: errors.append("delivered"), errors.append)
        assert ops.write("Backup", lambda ctx: ctx.store.execute("SELECT 1"), None, errors.append)
        qtbot.waitUntil(lambda: len(errors) == 2)
        for message in errors:
            assert message.startswith(f"{path} was deleted, moved or replaced"), message
        assert not path.exists()
    finally:
        store.close()


def test_the_jobs_of_a_window_on_a_server_are_answered_by_one_session(qtbot, pg_url: str):
    """Reads and writes one after another on PostgreSQL, each on a thread of its own: one
    session answers them all (each job connected anew before: a connection a page)."""
    store = Store(pg_url)
    store.close()  # the opening thread's own
    ops = StoreOps(store)
    pids: list[int] = []

    def backend(ctx: OpContext) -> int:
        return int(ctx.store.execute("SELECT pg_backend_pid()")[0][0])

    try:
        for n in range(8):
            if n % 2:
                assert ops.write("Which", backend, pids.append)
            else:
                ops.query("which", backend, pids.append)
            qtbot.waitUntil(lambda: ops.pending == 0)
    finally:
        ops.shutdown()
        store.dispose()
    assert len(pids) == 8 and len(set(pids)) == 1
