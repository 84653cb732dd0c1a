"""Esc cancels a run at once, and the bar and the text agree afterwards.

The first classify run of a model measures the model's label bias (content-free inputs,
each a full prompt) before the first episode; that measurement did not look at the cancel
flag, so an Esc pressed then waited for it and for the first episode (7.5 s on a laptop)
and the run ended "after 1 of 5". After the run the bar read 0 % while the text said
"after 1 of 5". The window and the demo model are real (marker ``llm``).
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtCore import QSettings, Qt

from curator.gui.runs.run_progress import BAR_STEPS
from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from curator.pipeline.eta import stopped_share
from curator.pipeline.progress import Progress
from curator.pipeline.runlog import RunResult
from curator.store.models import LabelBias

RUN_TIMEOUT_MS = 240_000


@pytest.mark.llm
def test_esc_during_the_bias_measurement_stops_the_run_there(
    qtbot, llm_services: AppServices, qsettings: QSettings
) -> None:
    window = MainWindow(llm_services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitActive(window)
    pane = window.runs_pane
    pane.limit_spin.setValue(5)
    worker = llm_services.worker
    assert worker is not None
    started: list[Progress] = []
    worker.progress.connect(started.append)
    assert pane.start_classify()
    # the run's first report (0 of 5) comes before the bias is measured
    qtbot.waitUntil(lambda: bool(started), timeout=RUN_TIMEOUT_MS)
    assert started[0].done == 0
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
        pressed = time.perf_counter()
        qtbot.keyClick(window, Qt.Key.Key_Escape)
    print(f"Esc to cancelled: {time.perf_counter() - pressed:.2f} s")
    result = finished.args[0]
    assert result.status == "cancelled"
    assert result.message == "cancelled after 0 of 5 episodes"  # no episode after the Esc
    assert LabelBias.select().count() == 0  # no half-measured bias was kept
    assert pane.progress_bar.value() == 0 and "after 0 of 5" in pane.progress_label.text()


@given(
    total=st.integers(min_value=1, max_value=10_000),
    data=st.data(),
)
def test_a_cancelled_run_s_bar_shows_what_its_text_says(total: int, data) -> None:
    """Without figures in the text, the bar after a cancel is the share of the last
    report, without the part of the item the cancel interrupted."""
    done = data.draw(st.integers(min_value=0, max_value=total))
    within = data.draw(st.floats(min_value=0.0, max_value=0.99))
    last = Progress("classify", done, total, within=within)
    assert round(stopped_share("cancelled", last) * BAR_STEPS) == round(done / total * BAR_STEPS)
    assert stopped_share("cancelled", None) == 0


def test_the_pane_keeps_the_bar_of_the_last_report_after_a_cancel(
    qtbot, services: AppServices
) -> None:
    pane = RunsPane(services)
    qtbot.addWidget(pane)
    pane._on_progress(Progress("classify", 1, 5, message="episode 7: noise (80%)"))
    pane._on_finished(RunResult(3, "cancelled", {}, "cancelled after 1 of 5 episodes"))
    assert pane.progress_label.text() == "Run #3 cancelled: after 1 of 5 episodes"
    assert pane.progress_bar.value() / pane.progress_bar.maximum() == pytest.approx(1 / 5)


def test_the_bar_names_the_batches_the_text_names_when_the_last_report_is_behind(
    qtbot, services: AppServices
) -> None:
    """Distill's last report was the importance call of batch 1 (0 of 5 done, 90 % into
    it); the batch then finished and the run stopped "after 1 of 5 batches": 20 %."""
    pane = RunsPane(services)
    qtbot.addWidget(pane)
    pane._on_progress(Progress("importance", 0, 5, within=0.9, message="batch 1/5"))
    pane._on_finished(RunResult(4, "cancelled", {}, "cancelled after 1 of 5 batches (2 kept)"))
    assert "after 1 of 5 batches" in pane.progress_label.text()
    assert pane.progress_bar.value() / pane.progress_bar.maximum() == pytest.approx(1 / 5)


def test_the_bar_counts_what_the_text_counts_when_episodes_were_skipped(
    qtbot, services: AppServices
) -> None:
    """Classify's reports count every episode it went through; its text counts the ones it
    labelled (an episode labelled by a person meanwhile is skipped): the bar follows the
    text."""
    pane = RunsPane(services)
    qtbot.addWidget(pane)
    pane._on_progress(Progress("classify", 3, 5, message="episode 9: noise (80%)"))
    pane._on_finished(RunResult(5, "cancelled", {}, "cancelled after 2 of 5 episodes"))
    assert pane.progress_bar.value() / pane.progress_bar.maximum() == pytest.approx(2 / 5)


def test_the_finished_line_names_the_status_once(qtbot, services: AppServices) -> None:
    """A run's message starts with its status ("staged 0 candidates…"); the line reads
    "Run #2 staged: 0 candidates…", not "staged: staged"."""
    pane = RunsPane(services)
    qtbot.addWidget(pane)
    message = "staged 1 candidate from 12 episodes in 2 batches (ADD 1, UPDATE 0, SKIP 0)"
    pane._on_finished(RunResult(2, "staged", {}, message))
    assert pane.progress_label.text() == (
        "Run #2 staged: 1 candidate from 12 episodes in 2 batches (ADD 1, UPDATE 0, SKIP 0)"
    )
