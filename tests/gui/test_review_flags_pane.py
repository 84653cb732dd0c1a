"""Review pane and flags: highlighted spans with reasons, the list mark, the filter, accept-all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.gui.widgets.flag_view import highlight_html
from curator.store.db import Store
from curator.store.models import Candidate, CandidateEpisode, Episode, Run, utcnow

CLEAN = "Write the incident summary within one hour of resolving it."
PHISHING = "Your account has been flagged; verify it within 24h at verify-acc0unt.example/login."
HIDDEN = "Short jokes get more likes\u200b\u200b than long ones in the replies."


def build(store: Store) -> int:
    with store.write():
        run = Run.create(kind="distill", status="staged", finished_at=utcnow())
        for ordinal, (text, source) in enumerate(
            ((CLEAN, "chat"), (PHISHING, "dm"), (HIDDEN, "chat")), 1
        ):
            episode = Episode.create(
                content_hash=f"h{ordinal}",
                text=f"episode {ordinal}",
                timestamp=utcnow(),
                source=source,
            )
            c = Candidate.create(
                run=run, ordinal=ordinal, text=text, importance=1.0, proposed_action="ADD"
            )
            CandidateEpisode.create(candidate=c, episode=episode)
    return int(run.id)


@pytest.fixture
def pane(qtbot, tmp_path: Path, show_pane) -> Iterator[ReviewPane]:
    store = Store(tmp_path / "flags.sqlite")
    build(store)
    widget = ReviewPane(AppServices(store=store, db_path=store.path, dialogs=Dialogs()))
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)  # read in the background
    yield widget
    store.close()


def select(pane: ReviewPane, text: str) -> None:
    row = pane.model.find_row(lambda c: c.text == text)
    pane.list_view.selectRow(row)


def test_flagged_candidate_is_highlighted_with_its_reasons(pane: ReviewPane) -> None:
    select(pane, PHISHING)
    html = pane.detail.toHtml()
    plain = pane.detail.toPlainText()
    assert "Flagged" in plain and "a domain name" in plain and "untrusted" in plain
    assert "every source episode is from an untrusted source (dm)" in plain
    # the matched span is highlighted (and only it): the link's own text sits in a span
    assert "background-color:#ffd27f" in html
    assert "verify-acc0unt.example/login</span>" in html
    select(pane, CLEAN)
    assert "Flagged" not in pane.detail.toPlainText()
    assert "background-color:#ffd27f" not in pane.detail.toHtml()


def test_hidden_characters_are_made_visible(pane: ReviewPane) -> None:
    select(pane, HIDDEN)
    assert "likes··" in pane.detail.toPlainText()
    assert "invisible zero-width characters" in pane.detail.toPlainText()


def test_list_marks_flagged_rows_and_filters_them(pane: ReviewPane) -> None:
    column = pane.model.column_index("⚑")
    marks = [pane.model.data(pane.model.index(r, column)) for r in range(pane.model.rowCount())]
    assert marks == ["", "⚑ 2", "⚑ 1"]
    tip = pane.model.data(pane.model.index(1, column), 3)  # ToolTipRole
    assert "link: a domain name" in tip
    pane.flagged_only.setChecked(True)
    assert [c.text for c in pane.shown_candidates()] == [PHISHING, HIDDEN]
    assert pane.current_candidate() is not None and pane.current_candidate().flags
    pane.flagged_only.setChecked(False)
    assert len(pane.shown_candidates()) == 3


def test_accept_all_asks_before_taking_flagged_candidates(qtbot, pane: ReviewPane) -> None:
    said: list[str] = []
    pane.status_message.connect(said.append)
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        assert pane.accept_all()  # in the background
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    assert said[-1] == "Accepted 1 proposal; 2 flagged candidates left undecided."
    dialog = pane.flagged_dialog
    assert dialog is not None
    listed = dialog.view.toPlainText()
    assert "a domain name" in listed and "invisible zero-width" in listed
    by_text = {c.text: c for c in pane.candidates()}
    assert by_text[CLEAN].action == "ADD"
    assert by_text[PHISHING].action is None and by_text[HIDDEN].action is None
    dialog.reject()  # "Leave them undecided"
    assert all(c.action is None for c in pane.candidates() if c.flags)

    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        assert pane.accept_all()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert said[-1].startswith("Accepted 0 proposals")
    dialog = pane.flagged_dialog
    assert dialog is not None
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    decided = {c.text: c for c in pane.candidates()}
    assert decided[PHISHING].action == "ADD" and decided[PHISHING].flags_seen
    assert decided[PHISHING].decided_via == "window accept-all"


def test_highlight_html_escapes_and_marks_spans() -> None:
    from curator.core.flag_type import Flag

    text = "a <b> link x.example/y end"
    flag = Flag("link", "a domain name", 11, 22, "x.example/y")
    html = highlight_html(text, [flag])
    assert html.startswith("a &lt;b&gt; link <span") and "x.example/y</span> end" in html


def test_accept_all_says_how_many_it_left_whose_proposal_no_longer_holds(
    qtbot, tmp_path: Path, show_pane
) -> None:
    """The clean ADD's text was committed by another run since staging: accept-all leaves
    it with the flagged ones, and the status line counts it apart from them."""
    from curator.core.scoring import rank_key
    from curator.store.models import Pattern

    store = Store(tmp_path / "stale.sqlite")
    build(store)
    now = utcnow()
    Pattern.create(text=CLEAN, importance=0.5, distilled_at=now, rank_key=rank_key(0.5, now))
    widget = ReviewPane(AppServices(store=store, db_path=store.path, dialogs=Dialogs()))
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    said: list[str] = []
    widget.status_message.connect(said.append)
    with qtbot.waitSignal(widget.data_changed, timeout=30_000):
        assert widget.accept_all()
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    assert said[-1] == (
        "Accepted 0 proposals; 2 flagged candidates left undecided; 1 candidate left "
        "undecided whose proposal no longer holds (deciding one says why)."
    )
    assert all(c.action is None for c in widget.candidates())
    if widget.flagged_dialog is not None:
        widget.flagged_dialog.reject()
    store.close()
