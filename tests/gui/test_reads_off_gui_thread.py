"""The reads the window makes after writes run off the GUI thread, with a busy state.

The status line's settings read after every pane write, Review's candidate list,
Knowledge's Provenance, and the Episodes pane's source list, date range and detail panel
each read the database; on the GUI thread such a read waits on
a writer (the command line, a backup) like any other and freezes the window. Each test
wraps the real store function in a *thread probe*: a fault injection that records the
thread each call ran on and then calls the real function, so what is read and shown is
unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QTextDocument

from curator.gui.episodes.episode_detail import render_detail
from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.episodes.label_source import label_decision_rows as real_label_decision_rows
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from curator.store.episode_queries import fetch_detail as real_fetch_detail
from curator.store.models import Episode, Pattern, PatternEpisode, Run
from curator.store.settings import update_settings
from tests.gui.review_runs import TEXTS, shown_pane, stage_texts


class ThreadProbe:
    """Fault injection: wraps a real read, recording the thread of every call."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.threads: list[threading.Thread] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.threads.append(threading.current_thread())
        return self.real(*args, **kwargs)

    def on_gui_thread(self) -> int:
        return sum(t is threading.main_thread() for t in self.threads)


def probe(monkeypatch: pytest.MonkeyPatch, target: str) -> ThreadProbe:
    module, _, name = target.rpartition(".")
    import importlib

    spy = ThreadProbe(getattr(importlib.import_module(module), name))
    monkeypatch.setattr(target, spy)
    return spy


def test_status_line_reads_the_settings_off_the_gui_thread_after_a_real_write(
    qtbot, main_window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    spy = probe(monkeypatch, "curator.gui.window.window_status.load_settings")
    pane = main_window.episodes_pane
    busy_when_written: list[bool] = []
    # connected after the window's own slot: it sees the state the window left
    pane.data_changed.connect(lambda: busy_when_written.append(main_window.status_loading))
    episode_id = int(Episode.select(Episode.id).order_by(Episode.id).first().id)
    assert pane.start_relabel([episode_id], "noise")
    qtbot.waitUntil(lambda: bool(busy_when_written), timeout=30_000)
    assert busy_when_written[0]  # the write's reload is pending: the busy state shows
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    assert spy.threads, "the status line did not read the settings after the write"
    assert spy.on_gui_thread() == 0
    assert "demo model" in main_window.model_label.text()


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    writes=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=6),
            st.text(
                alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                min_size=1,
                max_size=30,
            ).filter(lambda s: s.strip() != ""),
        ),
        min_size=1,
        max_size=4,
    )
)
@example(writes=[(0, "qwen2.5-7b")])
@example(writes=[(6, "m"), (1, "ünïcödé model"), (1, " spaced id ")])
def test_any_sequence_of_pane_writes_reads_the_status_off_the_gui_thread(
    qtbot, main_window: MainWindow, monkeypatch: pytest.MonkeyPatch, writes
) -> None:
    """Whichever panes write, in whatever order, the settings are read in the background
    and the status line ends naming the model saved last (by another process here)."""
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    spy = probe(monkeypatch, "curator.gui.window.window_status.load_settings")
    store = main_window.services.store
    for index, model in writes:
        update_settings(
            store,
            {"backend": "server", "server_url": "http://127.0.0.1:9/v1", "server_model": model},
        )
        main_window.panes[index].data_changed.emit()  # the signal a pane sends after a write
        assert main_window.status_loading
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=30_000)
    assert len(spy.threads) >= 1 and spy.on_gui_thread() == 0
    last = writes[-1][1]  # saved as given: the model id is the server's own name
    assert main_window.model_label.text() == f"Model: {last} on http://127.0.0.1:9/v1"
    monkeypatch.undo()


def test_review_lists_its_candidates_off_the_gui_thread(
    qtbot, services: AppServices, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = stage_texts(services, tmp_path)
    spy = probe(monkeypatch, "curator.pipeline.review.list_candidates")
    pane = shown_pane(qtbot, services, settled=False)
    pane.refresh()
    assert pane.loading and pane.progress_label.text() == "Loading the candidates…"
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    assert [c.text for c in pane.candidates()] == list(TEXTS)
    assert pane.current_run_id() == staged
    assert spy.threads and spy.on_gui_thread() == 0


def test_knowledge_reads_a_patterns_provenance_off_the_gui_thread(
    qtbot, services: AppServices, show_pane, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = services.store
    with store.write():
        run = Run.create(kind="distill", status="committed")
        episode = Episode.select().order_by(Episode.id).first()
        pattern = Pattern.select().where(Pattern.status == "active").order_by(Pattern.id).first()
        PatternEpisode.create(pattern=pattern, episode=episode, run=run)
    spy = probe(monkeypatch, "curator.gui.knowledge.knowledge_sources.pattern_sources")
    pane = KnowledgePane(services)
    show_pane(pane)
    qtbot.waitUntil(lambda: pane.ops.pending == 0 and not pane.loading, timeout=30_000)
    pane.select_patterns([int(pattern.id)])
    assert pane.provenance.loading
    assert "Reading its source episodes" in pane.source_title.text()
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)
    assert pane.sources.rowCount() >= 1
    assert spy.threads and spy.on_gui_thread() == 0


def test_episodes_reads_its_sources_and_dates_off_the_gui_thread(
    qtbot, services: AppServices, show_pane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even on a small database: a read on the GUI thread waits on any writer."""
    sources = probe(monkeypatch, "curator.gui.episodes.episode_filters.distinct_sources")
    dates = probe(monkeypatch, "curator.gui.episodes.episode_filters.date_range")
    pane = EpisodesPane(services)
    assert not pane.facts_loading  # nothing read until the pane is shown
    show_pane(pane)
    assert pane.facts_loading
    qtbot.waitUntil(lambda: not pane.facts_loading, timeout=30_000)
    expected = services.store.execute("SELECT DISTINCT source FROM episode ORDER BY source")
    shown = [pane.source_combo.itemData(i) for i in range(1, pane.source_combo.count())]
    assert sorted(shown) == sorted(r[0] for r in expected if r[0])
    assert sources.threads and sources.on_gui_thread() == 0
    assert dates.threads and dates.on_gui_thread() == 0


def _expected(pane: EpisodesPane, episode_id: int) -> str:
    """The panel's text for an episode, rendered here from the same reads."""
    store = pane.services.store
    detail = real_fetch_detail(store, episode_id)
    assert detail is not None
    rows = real_label_decision_rows(store, episode_id)
    document = QTextDocument()
    document.setHtml(render_detail(detail, pane.detail.palette(), "", rows))
    return document.toPlainText()


@pytest.fixture
def episodes(qtbot, services: AppServices, show_pane) -> EpisodesPane:
    pane = EpisodesPane(services)
    show_pane(pane)
    qtbot.waitUntil(lambda: pane.ops.pending == 0 and not pane.detail_loading, timeout=30_000)
    return pane


def test_episodes_reads_the_selected_episode_off_the_gui_thread(
    qtbot, services: AppServices, episodes: EpisodesPane, monkeypatch: pytest.MonkeyPatch
) -> None:
    detail = probe(monkeypatch, "curator.gui.episodes.episode_detail.fetch_detail")
    decided = probe(monkeypatch, "curator.gui.episodes.episode_detail.label_decision_rows")
    episode_id = episodes.model.episode_id(3)
    episodes.select_ids([episode_id])
    assert episodes.detail_loading
    assert episodes.detail.toPlainText().strip() == "Reading…"
    qtbot.waitUntil(lambda: not episodes.detail_loading, timeout=30_000)
    assert episodes.detail.toPlainText() == _expected(episodes, episode_id)
    assert detail.threads and detail.on_gui_thread() == 0
    assert decided.threads and decided.on_gui_thread() == 0


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    choices=st.lists(
        st.lists(st.integers(min_value=0, max_value=30), max_size=3, unique=True),
        min_size=1,
        max_size=5,
    )
)
@example(choices=[[2], [5]])  # a newer episode before the first one's answer
@example(choices=[[2], []])  # nothing selected before the answer
@example(choices=[[2], [3, 4]])  # several selected before the answer
@example(choices=[[2], [5], [2]])  # back to the first one
def test_the_detail_panel_shows_the_last_selection_whatever_came_before(
    qtbot, services: AppServices, episodes: EpisodesPane, choices: list[list[int]]
) -> None:
    """Selections faster than the reads: an answer for a selection that has changed
    meanwhile is dropped, and the panel ends showing what is selected last."""
    for rows in choices:
        episodes.select_ids([episodes.model.episode_id(r) for r in rows])
    qtbot.waitUntil(
        lambda: episodes.ops.pending == 0 and not episodes.detail_loading, timeout=30_000
    )
    shown = episodes.detail.toPlainText()
    last = choices[-1]
    if not last:
        assert shown.strip() == ""
    elif len(last) > 1:
        assert shown.strip() == f"{len(last)} episodes selected."
    else:
        assert shown == _expected(episodes, episodes.model.episode_id(last[0]))
