"""A cancel that arrives while the copy is checked: nothing is kept, however small the copy.

The check (``quick_check``) is interrupted by SQLite's progress handler, which runs only
every few thousand steps: on a small database the check ends before it ever runs, so a
cancel pressed while the progress dialog said "checking the copy" kept the backup."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.store.backup import BackupCancelled, list_backups, take_backup
from curator.store.db import Store


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_cancel_during_the_check_of_a_small_copy_keeps_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "curator.sqlite")
    store.close()
    flag: list[bool] = []
    dest = tmp_path / "backups"
    with pytest.raises(BackupCancelled):
        take_backup(
            store.path,
            dest_dir=dest,
            cancelled=lambda: bool(flag),
            checking=lambda: flag.append(True),  # the person cancels as the check begins
        )
    assert _left(dest) == []
    assert list_backups(store.path, dest) == []


@settings(max_examples=8, deadline=None)
@given(at=st.integers(0, 40))
def test_a_cancel_at_any_moment_keeps_nothing_or_a_whole_backup(
    tmp_path_factory: pytest.TempPathFactory, at: int
) -> None:
    """Cancel at the ``at``-th question (copy steps, then the check): either the
    backup finished before it, or nothing at all is left."""
    folder = tmp_path_factory.mktemp("db")
    store = Store(folder / "curator.sqlite")
    try:
        asked = 0

        def cancelled() -> bool:
            nonlocal asked
            asked += 1
            return asked > at

        dest = folder / "backups"
        try:
            take_backup(store.path, dest_dir=dest, pages=1, cancelled=cancelled)
        except BackupCancelled:
            assert _left(dest) == []
        else:
            assert asked <= at and len(list_backups(store.path, dest)) == 1
    finally:
        store.close()
