"""The harness itself fails when a promise is broken (a check that cannot fail is no check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reliability.harness import Expect, run_case


def test_harness_catches_a_wrong_exit_code(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        run_case(["--db", str(tmp_path / "x.sqlite"), "no-such-command"], Expect(code=0))


def test_harness_catches_a_modified_file(tmp_path: Path) -> None:
    db = tmp_path / "fresh.sqlite"
    # a fresh database is created by `stats --create`: the "untouched" promise must then fail
    with pytest.raises(AssertionError, match=r"modified|left behind"):
        run_case(["--db", str(db), "--create", "stats"], Expect(code=0, untouched=[db]))
