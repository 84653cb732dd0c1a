"""A distillation date can neither pin a pattern to the top of the prompt nor raise its value.

The prompt's order (the store's reads, ``curator export``) and the shown effective
importance come from one rule (:func:`curator.core.scoring.decay_reference`): a date in
the future counts as now. Intake refuses such dates; rows an older database already
holds are ranked by the value they show.
"""

from __future__ import annotations

import itertools
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.core.scoring import (
    decay_reference,
    effective_importance,
    rank_key,
    standing_key,
    top_k,
)
from curator.pipeline import commit, review
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store
from curator.store.knowledge import active_patterns, export_json, top_k_patterns
from curator.store.models import Candidate, Pattern, utcnow

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
LOW = "A low pattern that claims a distillation date at the end of time itself."
REAL = "The operator reads the status updates first thing in the morning, before standup."


def _older_database_pattern(
    text: str, importance: float, when: datetime, rate: float = 0.95
) -> int:
    """A row as a database written before intake refused future dates holds it: the
    stored key is ``rank_key`` of the stored date, whatever that date is."""
    return int(
        Pattern.create(
            text=text,
            importance=importance,
            distilled_at=when,
            rank_key=rank_key(importance, when, rate),
        ).id
    )


def test_seed_with_a_date_at_the_end_of_time_is_refused_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: 0.01 dated 9999-12-31 was exported at rank 1 above a 0.28."""
    db = tmp_path / "c.sqlite"
    seed = [
        {"pattern": REAL, "importance": 0.9, "distilled": "2026-01-01T00:00:00Z"},
        {"pattern": LOW, "importance": 0.01, "distilled": "9999-12-31T00:00:00Z"},
    ]
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(seed, indent=1), encoding="utf-8")
    code = main(["--db", str(db), "import-knowledge", str(path), "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 1 and doc["staged"] == 1 and doc["rejected"] == 1
    assert doc["errors"][0]["line"] == 7
    assert "'distilled' '9999-12-31T00:00:00Z' is in the future" in doc["errors"][0]["reason"]
    assert f"{path}:7: 'distilled'" in err
    staged = Candidate.select().where(Candidate.run == doc["run_id"])
    with Store(db):
        assert [c.text for c in staged] == [REAL]


def test_read_knowledge_accepts_up_to_now(tmp_path: Path) -> None:
    from curator.store.knowledge_file import read_knowledge

    path = tmp_path / "k.json"
    items = [{"pattern": REAL, "distilled": "2026-06-01T12:00:00Z"}]
    path.write_text(json.dumps(items), encoding="utf-8")
    assert read_knowledge(path, now=NOW).items[0].distilled_at == NOW
    late = read_knowledge(path, now=NOW - timedelta(microseconds=1))
    assert late.items == [] and "in the future" in late.errors[0].reason


def test_older_database_future_row_ranks_by_the_value_it_shows(tmp_path: Path) -> None:
    """Before the fix the 0.01 row came first (its stored key is enormous)."""
    with Store(tmp_path / "c.sqlite") as store:
        real = _older_database_pattern(REAL, 0.28, utcnow() - timedelta(hours=1))
        low = _older_database_pattern(LOW, 0.01, datetime(9999, 12, 31, tzinfo=UTC))
        rows = top_k_patterns(store, k=50, rate=0.95)
        assert [r.id for r in rows] == [real, low]
        assert rows[1].effective == pytest.approx(0.01)
        assert export_json(rows)[0]["rank"] == 1 and export_json(rows)[0]["id"] == real
        assert [r.id for r in top_k_patterns(store, k=1, rate=0.95)] == [real]


def test_commit_never_stamps_a_date_after_its_own_time(tmp_path: Path) -> None:
    """A staged ADD whose date is ahead of the commit's clock (staged by an older version,
    or before the clock was set back) is committed at the commit's time."""
    with Store(tmp_path / "c.sqlite") as store:
        path = tmp_path / "k.json"
        path.write_text(json.dumps([{"pattern": LOW, "importance": 0.01}]), encoding="utf-8")
        report = import_knowledge(store, path)
        future = datetime(9999, 12, 31, tzinfo=UTC)
        Candidate.update(distilled_at=future).where(Candidate.run == report.run_id).execute()
        review.accept_all(store, report.run_id)
        commit.commit_run(store, report.run_id)
        added = Pattern.get(Pattern.text == LOW)
        assert added.distilled_at <= utcnow()
        assert added.rank_key == pytest.approx(rank_key(0.01, added.distilled_at))


def test_effective_never_exceeds_stored_and_key_follows_the_value() -> None:
    later = NOW + timedelta(days=400)
    assert decay_reference(later, NOW) == NOW
    assert effective_importance(0.3, later, NOW) == 0.3
    assert standing_key(0.3, later, NOW) == rank_key(0.3, NOW)
    assert standing_key(0.3, NOW - timedelta(days=2), NOW) == rank_key(0.3, NOW - timedelta(2))


_offsets = st.one_of(
    st.none(),  # no date in the file: the commit's time
    st.floats(min_value=-3000, max_value=-1e-6),  # past, in days
    st.floats(min_value=1e-6, max_value=2_900_000),  # future, up to the year 9966
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.tuples(st.floats(min_value=0.0, max_value=1.0), _offsets), min_size=1, max_size=12
    ),
    rate=st.sampled_from([0.95, 0.5, 0.999, 1.0]),
)
def test_export_order_is_the_order_of_the_shown_value(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[float, Any]], rate: float
) -> None:
    """For any importances and dates (past, future, missing), the export's order is the
    order of the effective importance it shows (ties: newer decay reference, then id;
    values equal in exact arithmetic may differ in their last bits), every shown value is
    at most the stored one, and the store agrees with the reference ``top_k``."""
    now = utcnow()
    with Store(tmp_path_factory.mktemp("dates") / "c.sqlite") as store:
        for index, (importance, offset) in enumerate(rows):
            when = now if offset is None else now + timedelta(days=offset)
            _older_database_pattern(f"pattern {index}", importance, when, rate)
        listed = active_patterns(store, now=now, k=len(rows), rate=rate)
        shown = [row.effective for row in listed]
        assert all(r.effective <= r.importance for r in listed)
        for earlier, later in itertools.pairwise(shown):
            assert earlier >= later or math.isclose(earlier, later, rel_tol=1e-9)
        reference = top_k(list(Pattern.select()), len(rows), now=now, rate=rate)
        ref_values = [
            effective_importance(p.importance, p.distilled_at, now, rate) for p in reference
        ]
        assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(shown, ref_values, strict=True))
        top = top_k_patterns(store, k=3, now=now, rate=rate)
        assert [r.id for r in top] == [r.id for r in listed[:3]]
