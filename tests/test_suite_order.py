"""The suite's own scheduling list names files that exist (a renamed file drops out of it
silently, and runs last again)."""

from __future__ import annotations

from pathlib import Path

from tests.suite_order import SLOWEST_FILES

ROOT = Path(__file__).resolve().parent.parent


def test_every_file_scheduled_first_exists() -> None:
    assert [p for p in SLOWEST_FILES if not (ROOT / p).is_file()] == []
    assert len(set(SLOWEST_FILES)) == len(SLOWEST_FILES)
