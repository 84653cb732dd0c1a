"""Another process's episodes, decisions and commits reach an open window by themselves.

On both engines: a real second process opens the same database and writes; the window's
change listener (SQLite: ``data_version`` polled off the GUI thread; PostgreSQL: LISTEN
on a connection of its own) must hear it and the visible pane must show it, with no
reload asked for. How soon is measured by ``benchmarks/bench_engines.py`` (a test awaits
the signal; it asserts no wall-clock time).
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from PySide6.QtCore import Qt

from curator.gui.review.review_pane import ReviewPane
from curator.gui.window.change_listener import ChangeListener
from curator.gui.window.main_window import MainWindow
from curator.store.changes import Change
from curator.store.db import Store
from curator.store.models import Episode
from tests.gui.test_review_pane import build_staged_run
from tests.review.conftest import REPO_ROOT, python_env

BOTH_ENGINES = True

WRITER = """
import sys
from curator.pipeline import commit, review
from curator.store.db import Store
from curator.store.models import Episode, utcnow

location, what = sys.argv[1], sys.argv[2]
store = Store(location)
if what == "episode":
    with store.write():
        Episode.create(content_hash="outside-1", text="user: elsewhere", timestamp=utcnow())
elif what == "decide":
    review.decide(store, int(sys.argv[3]), "ADD", actor="ana")
elif what == "commit":  # the rest rejected, then the whole run committed
    run = int(sys.argv[3])
    for c in review.list_candidates(store, run):
        if c.action is None:
            review.decide(store, c.id, "REJECT", actor="ana")
    commit.commit_run(store, run, actor="ana")
store.close()
"""


def outside(store: Store, *args: str) -> None:
    """Another process writes (``store.location`` names the database for either engine)."""
    another_process(WRITER, store.location, *args)


def another_process(script: str, *args: str) -> None:
    """Run ``script`` in a process of its own, from the checkout, and expect it to succeed."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=python_env(),
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr


def heard(changes: list[Change], table: str) -> bool:
    return any(change.touches(table) for change in changes)


def test_an_episode_written_by_another_process_shows(
    qtbot, main_window: MainWindow, store: Store
) -> None:
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    with store.read():
        before = Episode.select().count()
    qtbot.waitUntil(lambda: pane.model.rowCount() == before, timeout=10_000)
    changes: list[Change] = []
    main_window.change_listener.changed.connect(changes.append)
    outside(store, "episode")
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 1, timeout=10_000)
    assert heard(changes, "episode")


def test_a_decision_and_a_commit_by_another_process_show(
    qtbot, main_window: MainWindow, store: Store
) -> None:
    ids = build_staged_run(store)
    pane = main_window.pane("reviewPane")
    assert isinstance(pane, ReviewPane)
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.settled and pane.current_run_id() == ids["run"], timeout=30_000)
    first = pane.candidates()[0]
    assert first.action is None
    changes: list[Change] = []
    main_window.change_listener.changed.connect(changes.append)

    outside(store, "decide", str(first.id))
    qtbot.waitUntil(
        lambda: pane.settled and bool(pane.candidates()) and pane.candidates()[0].action == "ADD",
        timeout=10_000,
    )
    # The pane may show the decision by a reload of its own before the listener's
    # change arrives (a loaded machine): the change must still be heard, in time.
    qtbot.waitUntil(lambda: heard(changes, "candidate"), timeout=10_000)

    outside(store, "commit", str(ids["run"]))
    qtbot.waitUntil(lambda: pane.settled and pane.current_run_id() is None, timeout=10_000)
    qtbot.waitUntil(lambda: heard(changes, "changeset"), timeout=10_000)


def test_the_listener_stops_with_the_window(qtbot, main_window: MainWindow) -> None:
    listener = main_window.change_listener
    assert listener.running
    main_window.close()
    # at once on a file; on a server within a wait, or a connect on a slow machine
    qtbot.waitUntil(lambda: not listener.running, timeout=20_000)


DEADLOCKED: list[ChangeListener] = []


def test_a_slot_the_listener_runs_itself_may_stop_it(qtbot, store: Store) -> None:
    """A slot connected directly runs on the listener's thread, inside its hand-over:
    stopping the listener there neither waits for its own lock nor joins its own thread."""
    listener = ChangeListener(store.changes())
    stopped = threading.Event()

    def stop(_change: Change) -> None:
        listener.shutdown()
        stopped.set()

    listener.changed.connect(stop, Qt.ConnectionType.DirectConnection)
    listener.start()
    outside(store, "episode")
    if not stopped.wait(30):
        DEADLOCKED.append(listener)  # never deleted: its stop would wait for the lock too
        pytest.fail("a slot run by the listener could not stop it")
    qtbot.waitUntil(lambda: not listener.running, timeout=20_000)
    listener.deleteLater()


def test_the_status_bar_and_title_name_the_database_without_a_password(
    main_window: MainWindow, store: Store
) -> None:
    tip = main_window.db_label.toolTip()
    assert tip.endswith(store.location)
    kind = "Database file" if store.dialect.is_file else "PostgreSQL database"
    assert tip.startswith(kind)
    name = store.location.rsplit("/", 1)[1]  # the file's name, or the server's database
    assert main_window.db_label.text() == name
    assert main_window.windowTitle().startswith(f"{name} — ")


def test_a_change_heard_during_our_own_write_is_shown_once_it_ends(
    qtbot, main_window: MainWindow, store: Store
) -> None:
    """The listener's news is not dropped while the window cannot reload: it is looked at
    again after the write, with nothing else happening to prompt it."""
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    with store.read():
        before = Episode.select().count()
    qtbot.waitUntil(lambda: pane.model.rowCount() == before, timeout=10_000)
    ops = main_window.services.ops
    release = threading.Event()
    assert ops.write("Holding", lambda ctx: release.wait(60))
    try:
        with qtbot.waitSignal(main_window.change_listener.changed, timeout=30_000):
            outside(store, "episode")
        assert pane.model.rowCount() == before  # not reloaded under our own write
    finally:
        release.set()
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 1, timeout=10_000)
