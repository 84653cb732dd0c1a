"""Which gold candidates are the same decision: every field the export writes, counted.

A gold file imported into the database it came from added every candidate again (only
candidates of earlier gold imports were looked at), and two different decisions on one
text (another edit, ratio or importance) were merged into one, so a round trip lost them.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.pipeline.gold import export_gold, import_gold
from curator.store.db import Store
from curator.store.models import MAX_PATTERN_CHARS

TEXT = "Release notes are read more when each change names who asked for it."
VARIANTS: list[dict[str, object]] = [
    {},
    {"importance": -0.0, "proposed_ratio": -0.0},  # stored, and read back, as 0.0
    {"final_text": "Release notes name who asked for each change."},
    {"proposed_ratio": 0.71},
    {"importance": 0.9},
    {"decision": "REJECT"},
]


def _line(variant: dict[str, object]) -> dict[str, object]:
    line: dict[str, object] = {
        "kind": "candidate",
        "text": TEXT,
        "category": "uncategorized",
        "importance": 0.5,
        "proposed_action": "ADD",
        "proposed_ratio": 0.2,
        "decision": "ADD",
        "episodes": [],
    }
    return {**line, **variant}


def _header(tmp: Path) -> str:
    store = Store(tmp / "empty.sqlite")
    buffer = io.StringIO()
    export_gold(store, buffer)
    store.close()
    return buffer.getvalue().splitlines()[0]


@contextlib.contextmanager
def _open(path: Path) -> Iterator[Store]:
    store = Store(path)
    try:
        yield store
    finally:
        store.close()


def _export(store: Store, path: Path) -> list[str]:
    buffer = io.StringIO()
    export_gold(store, buffer)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return sorted(line for line in buffer.getvalue().splitlines()[1:])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, len(VARIANTS) - 1), min_size=1, max_size=8))
@example([0, 0])  # the same decision taken twice
@example([0, 1, 2, 3, 4])  # one text, five different decisions
def test_a_gold_round_trip_adds_nothing_and_loses_nothing(
    tmp_path_factory: pytest.TempPathFactory, picks: list[int]
) -> None:
    tmp = tmp_path_factory.mktemp("gold")
    gold = tmp / "gold.jsonl"
    lines = [json.dumps(_line(VARIANTS[k])) for k in picks]
    gold.write_text("\n".join([_header(tmp), *lines]) + "\n", encoding="utf-8")

    # one database open at a time: a Store binds the models to itself
    with _open(tmp / "a.sqlite") as a:
        first = import_gold(a, gold)
        assert (first.candidates_added, first.candidates_present) == (len(picks), 0)
        again = import_gold(a, gold)  # into the database it is now in
        assert (again.candidates_added, again.candidates_present) == (0, len(picks))
        exported = _export(a, tmp / "a.jsonl")
    assert Counter(json.loads(x)["decision"] for x in exported) == Counter(
        json.loads(x)["decision"] for x in lines
    )
    with _open(tmp / "b.sqlite") as b:
        assert import_gold(b, tmp / "a.jsonl").candidates_added == len(picks)
        _export(b, tmp / "b.jsonl")
    with _open(tmp / "a.sqlite") as a:
        assert import_gold(a, tmp / "b.jsonl").candidates_added == 0  # A -> B -> A
        assert _export(a, tmp / "a2.jsonl") == exported


def test_a_candidate_text_over_a_patterns_limit_is_a_bad_line(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    long_line = _line({"text": "word " * (MAX_PATTERN_CHARS // 5 + 1)})
    edited = _line({"final_text": "x" * (MAX_PATTERN_CHARS + 1)})
    good = _line({})
    body = [json.dumps(x) for x in (long_line, edited, good)]
    gold.write_text("\n".join([_header(tmp_path), *body]) + "\n", encoding="utf-8")
    store = Store(tmp_path / "c.sqlite")
    try:
        report = import_gold(store, gold)
    finally:
        store.close()
    assert report.candidates_added == 1
    assert [e.split(": ", 1)[0].rsplit(":", 1)[1] for e in report.errors] == ["2", "3"]
    assert all("over the 4,000 a pattern may have" in e for e in report.errors)


def test_a_source_episode_this_database_lacks_is_counted_not_dropped_unseen(
    tmp_path: Path,
) -> None:
    gold = tmp_path / "gold.jsonl"
    line = _line({"episodes": ["0" * 64, "1" * 64]})
    gold.write_text(f"{_header(tmp_path)}\n{json.dumps(line)}\n", encoding="utf-8")
    with _open(tmp_path / "s.sqlite") as store:
        report = import_gold(store, gold)
    assert (report.candidates_added, report.sources_missing) == (1, 2)
    assert report.as_dict()["sources_missing"] == 2
