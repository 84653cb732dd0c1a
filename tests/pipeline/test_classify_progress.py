"""TaskState and Progress (pure Python), and the CLI's progress printer."""

from __future__ import annotations

import io
import threading

import pytest

from curator.cli.pipeline import ProgressPrinter
from curator.pipeline.progress import Cancelled, Progress, TaskState


def test_cancel_from_another_thread_is_seen() -> None:
    state = TaskState()
    assert not state.cancelled
    state.check()  # no-op while not cancelled
    thread = threading.Thread(target=state.cancel)
    thread.start()
    thread.join()
    assert state.cancelled
    with pytest.raises(Cancelled):
        state.check()


def test_callbacks_receive_reports_and_tokens() -> None:
    reports: list[Progress] = []
    tokens: list[str] = []
    state = TaskState(on_progress=reports.append, on_token=tokens.append)
    state.report(Progress("classify", 1, 4, 12.5, "episode 3"))
    state.token("Hel")
    state.token("")  # nothing to show
    state.token("lo")
    assert reports == [Progress("classify", 1, 4, 12.5, "episode 3")]
    assert state.last == reports[0]
    assert tokens == ["Hel", "lo"]
    TaskState().report(Progress("x", 0, 0))  # no callbacks: fine


def test_fraction() -> None:
    assert Progress("s", 1, 4).fraction == 0.25
    assert Progress("s", 0, 0).fraction == 1.0
    assert Progress("s", 9, 4).fraction == 1.0


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal (the printer then redraws one line)."""

    def isatty(self) -> bool:
        return True


def test_printer_draws_a_bar_on_a_terminal() -> None:
    stream = FakeTerminal()
    printer = ProgressPrinter(stream)
    printer(Progress("classify", 1, 4, 30.0, "episode 1: noise"))
    printer(Progress("classify", 2, 4, 31.0, "episode 2: noise"))
    printer.close()
    text = stream.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n")
    assert "[############------------] 2/4" in text and "31.0 tokens/s" in text


def test_printer_writes_one_line_per_step_elsewhere() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer(Progress("extract", 0, 2, 0.0, "batch 1/2"))
    printer(Progress("extract", 0, 2, 15.0, "batch 1/2"))  # a speed update: not repeated
    printer(Progress("refine", 0, 2, 0.0, "batch 1/2"))
    printer.close()
    assert stream.getvalue().splitlines() == ["extract 0/2 batch 1/2", "refine 0/2 batch 1/2"]
    assert "\r" not in stream.getvalue()
