"""The Classify buttons name the number of episodes a click classifies.

The Episodes pane's "Classify N pending episodes" and the Runs pane's "Classify pending"
start the same run, which takes the Runs pane's limit: with a limit below the pending
count the buttons say so ("Classify 5 of 194 pending episodes"), not the whole count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtCore import QSettings

from curator.gui.runs.run_start import classify_button_text
from curator.gui.runs.runs_pane import LIMIT_KEY
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow


def _loaded(qtbot, window: MainWindow) -> int:
    pane = window.episodes_pane
    qtbot.waitUntil(lambda: window.services.ops.pending == 0, timeout=30_000)
    qtbot.waitUntil(lambda: pane.model.pending_classification > 0, timeout=30_000)
    return int(pane.model.pending_classification)


def test_the_buttons_follow_the_run_limit(qtbot, main_window: MainWindow) -> None:
    pending = _loaded(qtbot, main_window)
    assert pending > 3
    button = main_window.episodes_pane.classify_button
    runs = main_window.runs_pane
    runs.limit_spin.setValue(3)
    assert button.text() == f"Classify 3 of {pending:,} pending episodes"
    assert runs.classify_button.text() == "Classify up to 3 pending"
    runs.limit_spin.setValue(0)  # no limit
    assert button.text() == f"Classify {pending:,} pending episodes"
    assert runs.classify_button.text() == "Classify pending"
    runs.limit_spin.setValue(pending + 10)  # a limit above the count changes nothing
    assert button.text() == f"Classify {pending:,} pending episodes"


@pytest.fixture
def limited_window(qtbot, services: AppServices, qsettings: QSettings) -> Iterator[MainWindow]:
    qsettings.setValue(LIMIT_KEY, 2)
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    yield window
    window.close()


def test_a_remembered_limit_is_named_from_the_start(qtbot, limited_window: MainWindow) -> None:
    pending = _loaded(qtbot, limited_window)
    text = limited_window.episodes_pane.classify_button.text()
    assert text == f"Classify 2 of {pending:,} pending episodes"


@given(
    pending=st.integers(min_value=0, max_value=10**7),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=10**7)),
)
def test_the_number_named_is_the_number_a_run_takes(pending: int, limit: int | None) -> None:
    """The first number in the text is what a run with this limit classifies; the
    pending count is named too whenever the limit cuts it."""
    text = classify_button_text(pending, limit)
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]
    will_do = pending if limit is None else min(pending, limit)
    assert numbers[0] == will_do
    assert (numbers == [will_do, pending]) if will_do < pending else (numbers == [pending])
    assert text.endswith("episode" if pending == 1 else "episodes")
