"""Modules split along their seams keep their public names where callers import them.

``curator.pipeline.review`` is the one review API of the command line, the window and
scripts; its read side lives in ``review_views`` and is re-exported on purpose. A split
part never imports the module it was split from (no import circle).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from curator.pipeline import review, review_views

ROOT = Path(__file__).resolve().parent.parent / "curator"

SPLIT_PARTS = {
    "curator/pipeline/review_views.py": "curator.pipeline.review",
    "curator/pipeline/distill_plan.py": "curator.pipeline.distill",
    "curator/gui/window/window_status.py": "curator.gui.window.main_window",
    "curator/gui/window/window_files.py": "curator.gui.window.main_window",
    "curator/gui/episodes/episode_detail.py": "curator.gui.episodes.episodes_pane",
}


@pytest.mark.parametrize("name", review.__all__)
def test_every_review_name_is_importable_from_review(name: str) -> None:
    value = getattr(review, name)
    if hasattr(review_views, name):
        assert value is getattr(review_views, name)  # one object, not a copy


def test_the_reads_the_command_line_uses_are_the_review_views() -> None:
    for name in ("list_candidates", "get_candidate", "review_progress", "check_text"):
        assert getattr(review, name).__module__ == "curator.pipeline.review_views"


@pytest.mark.parametrize("part", sorted(SPLIT_PARTS))
def test_a_split_part_does_not_import_the_module_it_came_from(part: str) -> None:
    tree = ast.parse((ROOT.parent / part).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert SPLIT_PARTS[part] not in imported
    importlib.import_module(part.removesuffix(".py").replace("/", "."))
