"""File ▸ Follow a log…: the window follows an agent's log through ``curator watch``'s code.

The real window on a real database, real log files in tmp_path: the lines are imported
off the GUI thread, the status bar counts them, bad lines are listed with FILE:LINE and
the follow goes on, the followed logs are remembered in the database and resumed by the
next window, and Stop following forgets them.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QSettings, Qt

from curator.gui.runtime.services import AppServices
from curator.gui.window.follow_runner import FollowRunner, FollowState, describe
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.follow_state import followed_paths, positions
from curator.store.models import Episode

ENGINES = ["sqlite", "postgresql"]
"""The follow and what it remembers, on both engines (the window's list of followed logs
was saved with SQLite's INSERT OR REPLACE, which PostgreSQL refuses)."""


def line(text: str) -> bytes:
    return (json.dumps({"text": text, "source": "agent"}) + "\n").encode()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def count_texts(store: Store, prefix: str) -> int:
    with store.read():
        return Episode.select().where(Episode.text.startswith(prefix)).count()


@pytest.mark.parametrize("engine", ENGINES)
def test_following_a_log_imports_off_the_gui_thread_and_counts_in_the_status_bar(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("follow one") + b"[1]\n" + line("follow two"))
    writers: set[str] = set()
    main_window.follow_runner.reported.connect(
        lambda _t: writers.add(threading.current_thread().name),
        Qt.ConnectionType.DirectConnection,  # runs where the follow reports from
    )
    main_window.follow_logs([str(log)])
    label = main_window.follow_label
    qtbot.waitUntil(lambda: "3 lines" in label.text(), timeout=10_000)
    assert label.text().startswith("following 1 log: 3 lines, last ")
    assert label.text().endswith(", 1 bad line") and label.isVisible()
    assert f"{log}:2: expected a JSON object" in label.toolTip()  # the bad line, FILE:LINE
    assert writers == {"follow-logs"}  # reported from the follow's own thread
    # The follow goes on after the bad line.
    append(log, line("follow three"))
    qtbot.waitUntil(lambda: "4 lines" in label.text(), timeout=10_000)
    assert count_texts(store, "follow ") == 3
    # The Episodes pane shows them through the window's watch for outside changes.
    pane = main_window.episodes_pane
    with store.read():
        total = Episode.select().count()
    qtbot.waitUntil(lambda: pane.model.rowCount() == total, timeout=10_000)
    assert main_window.stop_follow_action.isEnabled()


@pytest.mark.parametrize("engine", ENGINES)
def test_the_followed_logs_are_resumed_by_the_next_window_and_stop_forgets_them(
    qtbot, store: Store, qsettings: QSettings, tmp_path: Path
) -> None:
    def services() -> AppServices:  # each window its own, as each start of the app
        return AppServices(store=store, db_path=store.path)

    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("before close"))
    first = MainWindow(services(), qsettings)
    qtbot.addWidget(first)
    first.follow_logs([str(log)])
    qtbot.waitUntil(lambda: "1 line" in first.follow_label.text(), timeout=10_000)
    first.close()
    assert followed_paths(store) == [str(log)]
    append(log, line("while closed"))

    second = MainWindow(services(), qsettings)
    qtbot.addWidget(second)
    qtbot.waitUntil(lambda: "1 line" in second.follow_label.text(), timeout=10_000)
    assert count_texts(store, "while closed") == 1
    assert [(p, n) for p, _o, n in positions(store)] == [(str(log), 2)]  # nothing twice
    second.stop_follow_action.trigger()
    qtbot.waitUntil(lambda: not second.follow_label.isVisible(), timeout=10_000)
    qtbot.waitUntil(lambda: followed_paths(store) == [], timeout=10_000)
    assert not second.stop_follow_action.isEnabled()
    append(log, line("after stop"))
    second.close()

    third = MainWindow(services(), qsettings)
    qtbot.addWidget(third)
    # its start reads the (empty) list and follows nothing
    qtbot.waitUntil(lambda: third.services.ops.pending == 0, timeout=10_000)
    assert not third.follow_runner.running and not third.follow_label.isVisible()
    assert count_texts(store, "after stop") == 0
    third.close()


def test_a_follow_that_cannot_write_stops_and_says_why(
    qtbot, tmp_path: Path, qsettings: QSettings
) -> None:
    """A read-only database: the follow thread stops by itself, and the status bar says so
    in one line (the window goes on)."""
    path = tmp_path / "ro.sqlite"
    Store(path).close()
    store = Store(path, read_only=True)
    services = AppServices(store=store, db_path=path)
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("x"))
    window.follow_logs([str(log)])
    qtbot.waitUntil(
        lambda: window.follow_label.text().startswith("follow stopped: "), timeout=10_000
    )
    assert "read-only" in window.follow_label.text()
    assert "\n" not in window.follow_label.text()
    assert not window.stop_follow_action.isEnabled()
    window.close()
    store.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(steps=["follow a", "stop", "follow b"])
@example(steps=["follow b", "stop", "follow b"])  # closed before the new follow's first poll
@example(steps=["follow a", "follow a", "stop", "stop", "follow b", "follow a"])
@given(steps=st.lists(st.sampled_from(["follow a", "follow b", "stop"]), max_size=8))
def test_any_follow_and_stop_sequence_leaves_the_list_the_window_shows(
    qtbot, tmp_path: Path, steps: list[str]
) -> None:
    """Starts and stops in any order, each one right after the other (a stopping thread
    still ending when the next follow starts): what is saved is the logs followed since
    the last stop, never a stale list from a thread that was ending."""
    folder = tmp_path / "logs"
    folder.mkdir(exist_ok=True)
    db = tmp_path / f"db-{len(list(tmp_path.glob('db-*.sqlite')))}.sqlite"
    store = Store(db)
    runner = FollowRunner(store, interval_s=0.01)
    expected: list[str] = []
    try:
        for step in steps:
            if step == "stop":
                runner.stop()
                expected = []
            else:
                path = str(folder / f"{step[-1]}.jsonl")
                runner.follow([path])
                expected = list(dict.fromkeys([*expected, path]))
            assert list(runner.paths) == expected
        if expected:
            qtbot.waitUntil(lambda: list(runner.state.paths) == expected, timeout=10_000)
    finally:
        runner.shutdown()
    assert followed_paths(store) == expected
    store.close()


@given(
    logs=st.integers(1, 30),
    lines=st.integers(0, 10**7),
    bad=st.integers(0, 10**4),
    ago=st.floats(0, 10**6, allow_nan=False),
)
@example(logs=2, lines=1204, bad=0, ago=3.4)
def test_the_status_text_is_one_short_line(logs: int, lines: int, bad: int, ago: float) -> None:
    state = FollowState(
        paths=tuple(f"/l{n}" for n in range(logs)),
        lines=lines,
        bad_lines=bad,
        last_line_at=100.0,
        running=True,
    )
    text = describe(state, 100.0 + ago)
    assert "\n" not in text and len(text) < 80
    assert text.startswith(f"following {logs} log")
    assert f"{lines:,} line" in text and " ago" in text
    assert ("bad line" in text) == (bad > 0)
    assert describe(FollowState(), 0.0) == ""


def test_a_log_named_like_markup_with_a_newline_is_shown_as_its_name_on_one_line(
    qtbot, main_window: MainWindow, tmp_path: Path
) -> None:
    """A file name is the agent's to choose: ``<b>`` in it is text, not bold, and a
    newline in it does not break the status bar's one line."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a\n<b>x.jsonl").write_bytes(line("ok") + b"[1]\n")
    messages: list[str] = []
    main_window.statusBar().messageChanged.connect(messages.append)
    main_window.follow_logs([str(folder)])
    qtbot.waitUntil(lambda: "1 bad line" in main_window.follow_label.text(), timeout=10_000)
    tip = main_window.follow_label.toolTip()
    assert "a\\n&lt;b&gt;x.jsonl:2: expected a JSON object" in tip
    assert "<b>x" not in tip
    assert messages and all("\n" not in m for m in messages)


def test_a_log_not_there_yet_is_said_and_followed_once_it_appears(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "later.jsonl"
    messages: list[str] = []
    main_window.statusBar().messageChanged.connect(messages.append)
    main_window.follow_logs([str(log)])
    qtbot.waitUntil(lambda: any("not there (yet)" in m for m in messages), timeout=10_000)
    assert main_window.follow_label.text().startswith("following 1 log: 0 lines")
    log.write_bytes(line("arrived later"))
    qtbot.waitUntil(lambda: "1 line," in main_window.follow_label.text(), timeout=10_000)
    assert count_texts(store, "arrived later") == 1


def test_a_follow_closed_before_its_first_poll_is_resumed_next_time(qtbot, tmp_path: Path) -> None:
    """Follow, Stop, Follow again and close at once: the new follow's thread was still
    waiting for the stopped one when the window closed, never polled, and the list it
    should have saved was lost (the stopped one had just forgotten it)."""
    store = Store(tmp_path / "db.sqlite")
    log = str(tmp_path / "b.jsonl")
    runner = FollowRunner(store, interval_s=0.01)
    runner.follow([log])
    runner.stop()
    runner.follow([log])
    runner.shutdown()  # the window closes before the new thread's first poll
    assert followed_paths(store) == [log]
    store.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_log_whose_name_is_not_utf8_is_followed_and_remembered(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    """A POSIX file name is bytes: one that is not UTF-8 stopped the follow at once
    (the list of followed logs could not hold it)."""
    log = os.fsdecode(os.fsencode(tmp_path) + b"/agent-\xff.jsonl")
    with open(log, "wb") as handle:
        handle.write(line("odd name one"))
    main_window.follow_logs([log])
    qtbot.waitUntil(lambda: "1 line" in main_window.follow_label.text(), timeout=10_000)
    assert count_texts(store, "odd name") == 1
    qtbot.waitUntil(lambda: followed_paths(store) == [log], timeout=10_000)
