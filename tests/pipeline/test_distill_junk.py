"""Junk from a small model stops at the gate: a looping extract is cut to one copy and
traced, degenerate candidates are dropped and counted by kind, and a setting keeps them.

The loop is a real output of the demo model (tests/data/demo_junk), replayed through a
real :class:`LoopWatch` (fault injection: the demo model loops at repeat penalty 1.0, the
extract step runs at 1.15, where no short real batch was found to loop); the rest of the
run (refine of real text, importance, both gates, staging) is the real pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.core.degenerate import LoopWatch
from curator.llm.backend import Completion
from curator.pipeline.distill import distill
from curator.pipeline.progress import TaskState
from curator.store.db import Store
from curator.store.models import Candidate, Run, TraceStep
from curator.store.settings import set_setting
from tests.pipeline.test_distill import FaultInjectingBackend

pytestmark = pytest.mark.llm

DATA = json.loads(
    (Path(__file__).parent.parent / "data" / "demo_junk" / "extract_outputs.json").read_text(
        "utf-8"
    )
)
LOOP = DATA["loops"][3]  # "- 2026-08-10 23:17:36 ERROR http: GET ... (attempt 2/3)" again and again
REPEATED = DATA["refined"][1][0]  # a log line written twice and a half by refine
STAMPS = "2026-08-07 11:59:38, 2026-08-07 11:59:39, 2026-08-07 11:59:41, 2026-08-07 12:00:02"
"""A list of timestamps, as the demo model writes them (its own are one "word" long:
"2026-08-10 23:17:36.12.12.12...", dropped for length already)."""
GOOD = "Ines from operations pings the bot after every restart to check the replies."


@pytest.fixture
def classified_store(classified_demo, tmp_path: Path):
    store = Store(classified_demo.copy_to(tmp_path))
    yield store
    store.close()


class LoopingExtract(FaultInjectingBackend):
    """Fault injection: the extract call "writes" the recorded loop piece by piece into a
    real :class:`LoopWatch` and stops where it fires, as both backends do; the refine
    call answers the given candidates. Every item the calls got is kept."""

    def __init__(self, real: Any, refined: list[str]) -> None:
        super().__init__(real, {"refine": [json.dumps(refined)]})
        self.items: list[str] = []

    def complete(self, prefix: str, item: str = "", **kwargs: Any) -> Completion:
        self.items.append(item)
        step = next((n for n, m in self.markers.items() if m in prefix), "extract")
        if step != "extract":
            return super().complete(prefix, item, **kwargs)
        self.calls.append(step)
        watch = LoopWatch()
        pieces = [LOOP[i : i + 3] for i in range(0, len(LOOP), 3)]
        for n, piece in enumerate(pieces, 1):
            if watch.feed(piece):
                text = "".join(pieces[:n])
                return Completion(text, 100, n, 0, 0.01, "loop", loop=watch.loop)
        raise AssertionError("the recorded loop was not caught")


def _steps(run_id: int, step: str) -> list[TraceStep]:
    query = TraceStep.select().where((TraceStep.run == run_id) & (TraceStep.step == step))
    return list(query.order_by(TraceStep.id))


def test_a_loop_is_cut_and_traced_and_junk_is_dropped_by_kind(
    classified_store: Store, demo_backend: Any
) -> None:
    backend = LoopingExtract(demo_backend, [REPEATED, GOOD, STAMPS])
    result = distill(classified_store, backend, TaskState(), limit=2)  # type: ignore[arg-type]
    assert result.status == "staged", result.message
    counts = result.counts
    assert counts["loops_stopped"] == 1
    assert (counts["dropped_quality"], counts["dropped_repeated"], counts["dropped_digits"]) == (
        2,
        1,
        1,
    )
    assert "2 dropped by the quality gate: 1 repeated phrase, 1 mostly digits or symbols" in (
        result.message
    )
    assert "1 generation stopped in a loop" in result.message
    assert [c.text for c in Candidate.select().where(Candidate.run == result.run_id)] == [GOOD]
    # the trace says where and why the extract call stopped
    (extract,) = _steps(result.run_id, "extract")
    assert extract.parsed["stop_reason"] == "loop"
    assert extract.parsed["loop"].startswith(f"stopped after {extract.tokens_out} tokens: ")
    assert "repeated '- 2026-08-10 23:17:36 ERROR http" in extract.parsed["loop"]
    # refine got one copy of the looping line, not the copies
    notes = backend.items[1]
    assert notes.count("23:17:36 ERROR http") == 1 and notes.startswith("- 2026-08-10")
    (quality,) = _steps(result.run_id, "quality")
    reasons = [d["reasons"][0] for d in quality.parsed["dropped"]]
    assert reasons[0].startswith("repeated phrase: '2026-08-04 03:45:14 INFO selftest")
    assert reasons[1].startswith("mostly digits or symbols")
    assert Run.get_by_id(result.run_id).stats["dropped_repeated"] == 1


def test_the_setting_turned_off_keeps_degenerate_candidates(
    classified_store: Store, demo_backend: Any
) -> None:
    set_setting(classified_store, "drop_degenerate", False)
    backend = LoopingExtract(demo_backend, [REPEATED, GOOD, STAMPS])
    result = distill(classified_store, backend, TaskState(), limit=2)  # type: ignore[arg-type]
    assert result.counts["dropped_quality"] == 0 and result.counts["dropped_repeated"] == 0
    staged = {c.text for c in Candidate.select().where(Candidate.run == result.run_id)}
    assert staged == {REPEATED, GOOD, STAMPS}
