"""One failure is said once, and a document cut off by a Ctrl-C gets no second one.

A second Ctrl-C while the first was handled printed the error line and the error document
twice; a Ctrl-C while a slow reader took the result appended the error document to the
half of the result already out.
"""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from curator.cli.common import CommandContext


def _context() -> CommandContext:
    return CommandContext(argparse.Namespace(json=True, db=None, command="stats"))


def test_a_second_failure_is_not_said_again(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = _context()
    ctx.fail("interrupted", 130)
    ctx.fail("interrupted", 130)
    out, err = capsys.readouterr()
    assert err.count("curator: error:") == 1
    assert out.count('"error"') == 1


class _CutOff(io.StringIO):
    """A stdout whose reader stops after some bytes, as a Ctrl-C lands (a fault injection:
    no real pipe can time a signal into a given write)."""

    def write(self, text: str) -> int:
        super().write(text[:10])
        raise KeyboardInterrupt


def test_a_result_cut_off_gets_no_error_document_after_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx = _context()
    out = _CutOff()
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(KeyboardInterrupt):
        ctx.emit({"episodes": 3})
    ctx.fail("interrupted", 130)
    assert out.getvalue() == '{\n  "episo'  # the part written; nothing appended
    assert "curator: error: interrupted" in capsys.readouterr().err
