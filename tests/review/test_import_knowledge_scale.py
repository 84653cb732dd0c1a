"""A large knowledge file: the gate in batches (same decisions), progress, cancel, CLI lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.core.dedup import gate
from curator.pipeline import import_knowledge as module
from curator.pipeline.import_knowledge import gate_file, import_knowledge
from curator.store.db import Store
from curator.store.importer import ImportCancelled
from curator.store.models import Candidate, Run, TraceStep
from review.conftest import make_pattern

LINES = [
    "The operator reads status updates first thing in the morning before standup.",
    "Retry failed calls to the billing API with an exponential backoff and jitter.",
    "Weekly reports go out on Friday afternoon, summarised in five bullet points.",
    "Never delete user files without an explicit confirmation from the operator.",
]


def _repeated_file(tmp_path: Path, count: int) -> Path:
    """``count`` lines cycling through a few patterns (with a running number on some)."""
    lines = [
        LINES[i % 4] if i % 3 else f"{LINES[i % 4]} Seen again on day {i % 50}."
        for i in range(count)
    ]
    path = tmp_path / "big.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


_texts = st.lists(
    st.one_of(
        st.sampled_from(["abc abd", "abc abd x", "a" * 250, "ab" * 130, "xyz", ""]),
        st.text(alphabet="abcd ", min_size=0, max_size=12),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    new=_texts,
    existing=_texts,
    batch=st.integers(min_value=1, max_value=7),
    thresholds=st.sampled_from([(0.95, 0.7), (1.0, 0.5), (0.6, 0.3), (1.5, 0.9)]),
)
def test_batched_gate_with_exact_copies_equals_one_gate_call(
    new: list[str], existing: list[str], batch: int, thresholds: tuple[float, float]
) -> None:
    """Any texts (repeats, repeats inside a batch, autojunk texts whose ratio with
    themselves is below 1.0, empty ones), any batch size and thresholds: the same
    actions, targets and ratios as one ``gate`` call over the whole file."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "GATE_BATCH", batch)
        got = gate_file(new, existing, skip=thresholds[0], update=thresholds[1])
    assert got == gate(new, existing, skip=thresholds[0], update=thresholds[1])


def test_progress_is_reported_in_batches_and_ends_at_the_total(
    store: Store, tmp_path: Path
) -> None:
    make_pattern(store, LINES[0], 0.5)
    reports: list[tuple[int, int]] = []
    report = import_knowledge(
        store, _repeated_file(tmp_path, 1300), progress=lambda d, t: reports.append((d, t))
    )
    assert report.staged == 1300 and report.errors == []
    assert reports[-1] == (1300, 1300) and len(reports) >= 3
    assert all(t == 1300 for _, t in reports)
    assert [d for d, _ in reports] == sorted(d for d, _ in reports)
    assert report.by_action["SKIP"] > 700  # the repeats: one dictionary lookup each


@pytest.mark.parametrize("checks_before_cancel", [0, 1, 3])
def test_cancel_stages_nothing(store: Store, tmp_path: Path, checks_before_cancel: int) -> None:
    asked = 0

    def cancelled() -> bool:
        nonlocal asked
        asked += 1
        return asked > checks_before_cancel

    path = _repeated_file(tmp_path, 1300)
    with pytest.raises(ImportCancelled, match="nothing of it was staged"):
        import_knowledge(store, path, cancelled=cancelled)
    assert Run.select().count() == 0 and Candidate.select().count() == 0
    assert TraceStep.select().count() == 0


def test_cli_shows_progress_on_stderr_for_a_large_file(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store.close()
    path = _repeated_file(tmp_path, 1100)
    assert main(["--db", str(store.path), "import-knowledge", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["staged"] == 1100
    lines = err.splitlines()
    assert lines == [
        "dedup 500/1100 patterns through the dedup gate",
        "dedup 1000/1100 patterns through the dedup gate",
        "dedup 1100/1100 patterns through the dedup gate",
    ]
