"""The status bar when its texts are odd or its left side needs room.

A one-line part given a text with a line break (a database file may be named so)
painted two lines into one line's height and made the bar taller; at 800 pixels a
temporary message ("Undid the last commit…") had no room at all (the eliding parts took
the whole width), and a running write's label, bar and Cancel squeezed every part below
its minimum, clipping "model not lo" mid-letter. The eliding parts now read line breaks
as spaces, and give way (follow state, then the demo notice, the model, the database)
while a message or a running write needs the room; they come back when it is gone.
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest
import shiboken6
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QEvent
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QLabel, QToolTip, QWidget

from curator.gui.widgets.eliding import (
    MESSAGE_CAP,
    ElidingButton,
    ElidingLabel,
    ElidingStatusBar,
)
from curator.gui.window.main_window import MainWindow

PARTS = ("follow_label", "demo_button", "db_label", "model_label", "offload_label", "run_label")


def permanent(window: MainWindow) -> list[QWidget]:
    return [getattr(window, n) for n in PARTS if getattr(window, n).isVisible()]


def message_room(window: MainWindow) -> int:
    """The width QStatusBar draws a temporary message in: up to its first permanent part."""
    return min(p.x() for p in permanent(window)) - 8


def follow_five_lines(qtbot, window: MainWindow, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_text("".join(json.dumps({"text": f"line {i}"}) + "\n" for i in range(5)))
    window.follow_logs([str(log)])
    qtbot.waitUntil(lambda: "5 lines" in window.follow_label.text(), timeout=10_000)
    qtbot.waitUntil(lambda: not window.status_loading, timeout=10_000)


@pytest.mark.parametrize("cls", [ElidingLabel, ElidingButton])
def test_a_line_break_reads_as_a_space_on_one_line(qapp, cls: type[QWidget]) -> None:
    one, two = cls("my database.sqlite3"), cls("my\ndatabase.sqlite3")
    assert two.text() == "my database.sqlite3"  # whole, on one line
    assert two.sizeHint().height() == one.sizeHint().height()
    two.resize(60, one.sizeHint().height())
    assert "\n" not in two.shown_text()


BIDI_MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@settings(deadline=None, max_examples=60)
@given(
    text=st.text(
        alphabet=st.sampled_from(
            list("ab é\u0301שלום🙂👩‍👩‍👧&…") + list(LINE_BREAKS) + ["\u202e", "\u200d"]
        ),
        max_size=40,
    ),
    width=st.integers(min_value=0, max_value=400),
)
@example(text="a\nb", width=5)
@example(text="", width=0)
@example(text="a", width=0)
@example(text="aa\u202e", width=12)
@example(text=" \u202e", width=4)
def test_an_eliding_label_shows_one_line_that_fits_or_its_whole_text(
    qapp, text: str, width: int
) -> None:
    label = ElidingLabel(text)
    label.resize(width, 20)
    shown = label.shown_text()
    assert not any(c in shown for c in LINE_BREAKS)
    assert not any(c in label.text() for c in LINE_BREAKS)
    text = label.text()
    # The whole text, or a start of it and "…" that fits (Qt cuts nothing from a text
    # of a single letter, and may leave only "…" or nothing where that is all that fits).
    # (Qt keeps directional marks such as U+202E after the "…"; they draw nothing.)
    marks = dict.fromkeys(map(ord, BIDI_MARKS))
    shown, text = shown.translate(marks), text.translate(marks)
    if shown != text and shown not in ("", "…"):
        assert shown.endswith("…") and text.startswith(shown[:-1].rstrip())
        assert label.fontMetrics().horizontalAdvance(shown) <= width


@pytest.mark.parametrize("width", [800, 1024])
def test_a_temporary_message_has_room_and_the_parts_come_back(
    qtbot, main_window: MainWindow, tmp_path: Path, width: int
) -> None:
    follow_five_lines(qtbot, main_window, tmp_path)
    main_window.resize(width, 700)
    QApplication.processEvents()
    before = {p.objectName(): p.width() for p in permanent(main_window)}
    text = "Undid the last commit: 3 patterns restored, 2 removed."
    main_window.show_message(text)
    QApplication.processEvents()
    need = main_window.statusBar().fontMetrics().horizontalAdvance(text)
    assert message_room(main_window) >= need
    main_window.statusBar().clearMessage()
    QApplication.processEvents()
    assert {p.objectName(): p.width() for p in permanent(main_window)} == before


def test_a_running_write_s_label_bar_and_cancel_clip_no_part(
    qtbot, main_window: MainWindow, tmp_path: Path
) -> None:
    follow_five_lines(qtbot, main_window, tmp_path)
    main_window.resize(800, 700)
    QApplication.processEvents()
    before = {p.objectName(): p.width() for p in permanent(main_window)}
    gate = threading.Event()
    ops = main_window.services.ops
    assert ops.write("Relabelling episodes", lambda ctx: gate.wait(10))
    try:
        qtbot.waitUntil(main_window.busy_cancel.isVisible, timeout=5000)
        main_window._ops_progress("Relabelling episodes", 150_000, 300_000)
        label = main_window.busy_label  # the caps take a layout pass or two to settle
        qtbot.waitUntil(lambda: label.width() >= label.sizeHint().width(), timeout=5000)
        busy = (main_window.busy_label, main_window.busy_bar, main_window.busy_cancel)
        for part in [*busy, *permanent(main_window)]:
            if isinstance(part, ElidingLabel | ElidingButton) and part not in busy:
                continue  # an eliding part may give way entirely
            assert part.width() >= part.minimumSizeHint().width(), part.objectName()
        assert main_window.busy_label.width() >= main_window.busy_label.sizeHint().width()
        shown = [p.geometry() for p in sorted([*busy, *permanent(main_window)], key=QWidget.x)]
        assert all(a.right() < b.left() for a, b in itertools.pairwise(shown))
        assert all(
            p.width() >= p.sizeHint().width() for p in permanent(main_window) if type(p) is QLabel
        )
    finally:
        gate.set()
    qtbot.waitUntil(lambda: not ops.busy, timeout=5000)
    qtbot.waitUntil(
        lambda: {p.objectName(): p.width() for p in permanent(main_window)} == before,
        timeout=5000,
    )


LONG = (
    "Labelled 1 episode noise. Learning: not enough human labels to learn yet: 1 given "
    "(0 constitutional, 1 noise, 0 uncategorized), 0 usable (0 constitutional, 0 noise, "
    "0 uncategorized); 3 per label needed"
)


@pytest.mark.qt_log_ignore("This plugin does not support (raise|propagateSizeHints)")
@pytest.mark.parametrize("width", [800, 1400])
def test_a_message_longer_than_the_room_ends_in_an_ellipsis_with_the_whole_as_tooltip(
    qtbot, main_window: MainWindow, width: int
) -> None:
    """QStatusBar clipped it mid-letter ("3 per label neede"); the bar keeps it whole."""
    main_window.resize(width, 700)
    main_window.show_message(LONG)
    QApplication.processEvents()
    bar = main_window.statusBar()
    assert isinstance(bar, ElidingStatusBar)
    assert bar.currentMessage() == LONG
    room = bar.message_rect()
    assert room.right() < min(p.x() for p in permanent(main_window))
    shown = bar.shown_message()
    assert shown.endswith("…") and LONG.startswith(shown[:-1].rstrip())
    assert bar.fontMetrics().horizontalAdvance(shown) <= room.width()
    assert not bar.grab().isNull()  # painted, elided
    inside = room.center()
    tip = QHelpEvent(QEvent.Type.ToolTip, inside, bar.mapToGlobal(inside))
    QApplication.sendEvent(bar, tip)
    assert QToolTip.text() == LONG
    QToolTip.hideText()

    short = "Undid the last relabel."
    main_window.show_message(short)
    QApplication.processEvents()
    assert bar.shown_message() == short  # QStatusBar's own paint


@pytest.mark.qt_log_ignore("This plugin does not support (raise|propagateSizeHints)")
def test_the_tooltip_goes_with_its_message_and_a_huge_one_is_cut(
    qtbot, main_window: MainWindow
) -> None:
    bar = main_window.statusBar()
    assert isinstance(bar, ElidingStatusBar)

    def hover() -> None:
        inside = bar.message_rect().center()
        QApplication.sendEvent(
            bar, QHelpEvent(QEvent.Type.ToolTip, inside, bar.mapToGlobal(inside))
        )

    main_window.show_message(LONG)
    hover()
    assert QToolTip.isVisible() and QToolTip.text() == LONG
    bar.clearMessage()
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=2000)  # Qt's own fade

    huge = "x" * 1_000_000
    main_window.show_message(huge)
    shown = bar.shown_message()
    assert shown.endswith("…") and len(shown) <= MESSAGE_CAP
    hover()
    assert QToolTip.text() == "x" * MESSAGE_CAP + "…"
    main_window.show_message("Undid the last relabel.")
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=2000)


def test_a_part_deleted_or_moved_off_the_bar_is_forgotten(qtbot, main_window: MainWindow) -> None:
    bar = main_window.statusBar()
    assert isinstance(bar, ElidingStatusBar)
    gone, moved = QLabel("gone"), QLabel("moved")
    bar.addPermanentWidget(gone)
    bar.addPermanentWidget(moved)
    QApplication.processEvents()
    shiboken6.delete(gone)
    elsewhere = QWidget()
    qtbot.addWidget(elsewhere)
    moved.setParent(elsewhere)
    main_window.show_message(LONG)
    QApplication.processEvents()
    assert not bar.grab().isNull()
    assert bar.message_rect().right() < min(p.x() for p in permanent(main_window))
