"""Two reviewers on one run: the window never overwrites another reviewer's decision unseen.

The other reviewer is a second process on the same database file (a colleague's
``curator decide``); the pane's rows were loaded before they decided.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.store.models import Candidate
from tests.gui.review_runs import shown_pane, stage_texts
from tests.review.conftest import python_env


@pytest.fixture
def pane(qtbot, services: AppServices, tmp_path: Path) -> ReviewPane:
    stage_texts(services, tmp_path)
    return shown_pane(qtbot, services, settled=True)


def _decide_as_bob(services: AppServices, candidate_id: int, action: str) -> None:
    """Bob decides from a shell: a real second process (one Store per process)."""
    run_id = Candidate.get_by_id(candidate_id).run_id
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "curator",
            "--db",
            str(services.store.path),
            "decide",
            str(run_id),
            str(candidate_id),
            action,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**python_env(), "CURATOR_REVIEWER": "bob"},
    )
    assert done.returncode == 0, done.stderr


def test_a_decision_made_by_another_reviewer_since_loading_is_named_and_shown(
    qtbot, pane: ReviewPane, services: AppServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATOR_REVIEWER", "ana")
    shown: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: shown.append((title, text))
    first = pane.current_candidate()
    assert first is not None and first.action is None
    _decide_as_bob(services, first.id, "ADD")  # after the pane loaded the row
    assert pane.decide_current("REJECT")
    qtbot.waitUntil(lambda: bool(shown), timeout=30_000)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    (_title, text), *_ = shown
    assert f"candidate {first.id} was decided ADD by bob at " in text
    assert "nothing was changed" in text
    stored = Candidate.get_by_id(first.id)
    assert (stored.action, stored.decided_by) == ("ADD", "bob")  # bob's decision stands
    row = next(c for c in pane.candidates() if c.id == first.id)
    assert (row.action, row.decided_by) == ("ADD", "bob")  # and the row shows it again
    # Now that ana has seen it, her decision replaces bob's.
    pane._select_row(pane.model.find_row(lambda c: c.id == first.id))
    assert pane.decide_current("REJECT")
    qtbot.waitUntil(lambda: pane.settled and pane.decisions.pending == 0, timeout=30_000)
    stored = Candidate.get_by_id(first.id)
    assert (stored.action, stored.decided_by, stored.decided_via) == ("REJECT", "ana", "human")
    assert len(shown) == 1


def test_own_keys_queued_on_one_row_are_no_conflict(
    qtbot, pane: ReviewPane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys pressed faster than the writes land all carry the row's loaded revision;
    the later ones replace the reviewer's own earlier decision, which is no conflict."""
    monkeypatch.setenv("CURATOR_REVIEWER", "ana")
    shown: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: shown.append((title, text))
    first = pane.current_candidate()
    assert first is not None
    for action in ("ADD", "REJECT", "ADD"):
        pane._select_row(pane.model.find_row(lambda c: c.id == first.id))
        assert pane.decide_current(action)
    qtbot.waitUntil(lambda: pane.settled and pane.decisions.pending == 0, timeout=30_000)
    assert not shown
    stored = Candidate.get_by_id(first.id)
    assert (stored.action, stored.decided_by) == ("ADD", "ana")


def test_the_reviewer_name_is_a_settings_field_kept_in_the_profile(
    qtbot, main_window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curator.store.profile import profile_path, reviewer_name, saved_reviewer

    monkeypatch.setenv("CURATOR_CONFIG_DIR", str(tmp_path / "profile"))
    from curator.gui.settings.settings_pane import SettingsPane

    pane = main_window.pane("settingsPane")
    assert isinstance(pane, SettingsPane)
    pane.refresh()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    box = pane.reviewer_box
    assert box.name_edit.text() == "" and box.name_edit.placeholderText()
    box.name_edit.setText("  Ana Lima ")
    pane.apply()
    qtbot.waitUntil(lambda: not pane.saving, timeout=30_000)
    assert saved_reviewer() == "Ana Lima" and reviewer_name() == "Ana Lima"
    assert profile_path().parent == tmp_path / "profile"
    # nothing of it in the shared database: each reviewer has their own name
    assert not list(
        main_window.services.store.execute("SELECT 1 FROM setting WHERE value LIKE '%Ana%'")
    )
    warnings: list[str] = []
    main_window.services.dialogs.warning = lambda _parent, _title, text: warnings.append(text)  # type: ignore[method-assign]
    box.name_edit.setText("Ana\x1b[8mLima")
    pane.apply()
    assert warnings and "control character" in warnings[0]
    assert saved_reviewer() == "Ana Lima"  # refused: the saved name is kept
