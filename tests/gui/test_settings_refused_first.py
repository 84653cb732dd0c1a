"""Apply refused by the saved values saves nothing, and says so before it tries a model.

The form is checked at once against the values the pane last read (no round trip on the
GUI thread); the saved values as they are now are checked again in the background before
anything is saved: the reviewer's name, the database chosen, an API key, the model file's
trial load. A broken saved value of a key the page does not show (written by a script, or
by another version) refuses the change with the CLI's own sentence, as
``curator settings`` does, on both engines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.cli import main
from curator.gui.runtime.services import AppServices
from curator.gui.settings.settings_pane import SettingsPane
from curator.store.db import Store
from curator.store.profile import saved_reviewer
from curator.store.settings import load_settings

BOTH_ENGINES = True
BROKEN = """INSERT INTO "setting" ("key", "value") VALUES ('seed', '"abc"')"""


def break_seed(store: Store) -> None:
    """Fault injection: a saved value of the wrong type for a key the page does not show."""
    with store.write():
        store.execute(BROKEN)


def shown(qtbot, services: AppServices) -> SettingsPane:
    pane = SettingsPane(services)
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    return pane


def settled(qtbot, pane: SettingsPane, services: AppServices) -> None:
    qtbot.waitUntil(
        lambda: not pane.saving and not pane.validating and services.ops.pending == 0,
        timeout=60_000,
    )


def cli_refusal(store: Store, capsys: pytest.CaptureFixture[str], *changes: str) -> str:
    code = main(["--db", store.location, "settings", *changes])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    return line.removeprefix("curator: error: ")


@pytest.mark.parametrize("when", ["before the pane read", "after the pane read"])
def test_a_broken_saved_value_refuses_apply_before_anything_is_saved(
    qtbot, services: AppServices, store: Store, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    if when == "before the pane read":
        break_seed(store)  # the pane's first read fails: the form holds the defaults
    pane = shown(qtbot, services)
    if when == "after the pane read":
        break_seed(store)  # another process, after the pane read the values
    pane.reviewer_box.name_edit.setText("Zed Reviewer")
    pane.top_k.setValue(12)
    pane.apply()
    settled(qtbot, pane, services)
    said = services.dialogs.shown[-1].text()
    assert said.startswith("Not saved: ")
    assert cli_refusal(store, capsys, "top_k=12") in said  # the CLI's own sentence
    assert saved_reviewer() is None  # nothing else saved either
    with store.read():
        (top_k,) = store.execute("""SELECT count(*) FROM "setting" WHERE "key" = 'top_k'""")
    assert top_k[0] == 0


def test_a_new_model_is_not_tried_when_the_saved_values_refuse_the_change(
    qtbot, services: AppServices, store: Store, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The CLI refuses a broken saved value before it looks at a model file; so does the
    window (it said the model could not be used, or loaded it for nothing)."""
    model = tmp_path / "broken.gguf"
    model.write_bytes(b"not a model at all\n" * 10)
    pane = shown(qtbot, services)
    break_seed(store)
    pane.model_edit.setText(str(model))
    pane.apply()
    settled(qtbot, pane, services)
    said = services.dialogs.shown[-1].text()
    assert cli_refusal(store, capsys, f"model_path={model}") in said
    assert "broken.gguf cannot be used" not in said
    with store.read():
        (rows,) = store.execute("""SELECT count(*) FROM "setting" WHERE "key" = 'model_path'""")
    assert rows[0] == 0


def test_apply_saves_once_the_broken_value_is_repaired(
    qtbot, services: AppServices, store: Store
) -> None:
    break_seed(store)
    pane = shown(qtbot, services)
    with store.write():
        store.execute("""DELETE FROM "setting" WHERE "key" = 'seed'""")
    pane.reviewer_box.name_edit.setText("Zed Reviewer")
    pane.top_k.setValue(12)
    pane.apply()
    settled(qtbot, pane, services)
    assert saved_reviewer() == "Zed Reviewer"
    assert load_settings(store).top_k == 12
