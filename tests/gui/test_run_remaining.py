"""The Runs pane says how long the running run has left, and the figure follows the run.

Before, the pane quoted an estimate once, in the status bar ("about 50 s"), and the run
took 6 min 13 s with no word on the way. The run and the model are real (the demo model,
marker ``llm``); the pane is the real one, offscreen.
"""

from __future__ import annotations

import re

import pytest

from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.pipeline.eta import UNMEASURED
from curator.pipeline.progress import Progress

RUN_TIMEOUT_MS = 600_000
LEFT = re.compile(r"^about \d+(\.\d+)? (s|min|h|days) left$")


@pytest.mark.llm
def test_the_time_left_shows_and_follows_a_real_run(
    qtbot, show_pane, llm_services: AppServices
) -> None:
    pane = RunsPane(llm_services)
    show_pane(pane)
    pane.limit_spin.setValue(2)
    worker = llm_services.worker
    assert worker is not None
    seen: list[tuple[Progress, str, str]] = []
    label = pane.remaining_label
    # connected after the pane: each report is recorded with what the pane made of it
    worker.progress.connect(lambda p: seen.append((p, label.text(), label.toolTip())))
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
        assert pane.start_classify()
    assert finished.args[0].status == "done"
    classify = [(p.done, text) for p, text, _ in seen if p.step == "classify"]
    # the first report: the estimate made before the run, and what it rests on
    assert classify[0][0] == 0 and LEFT.match(classify[0][1]), classify[0]
    assert UNMEASURED in seen[0][2].lower()
    after_one = [text for done, text in classify if done == 1]
    assert after_one and all(LEFT.match(text) for text in after_one)
    # Both episodes done: what is left is the features phase's share of the estimate,
    # and once that phase has finished too, nothing.
    at_end = [text for done, text in classify if done == 2]
    assert len(at_end) == 1 and LEFT.match(at_end[0]), at_end
    features = [(p.done, p.total, text) for p, text, _ in seen if p.step == "features"]
    assert features and features[-1][0] == features[-1][1] and features[-1][2] == "finishing"
    assert label.text() == "" and label.toolTip() == ""  # the run is over: nothing to count
