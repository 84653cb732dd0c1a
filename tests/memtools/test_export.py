"""export --format mem0 | letta-block: the ranking of ``top_k_patterns``, other tools' shapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from review.conftest import make_pattern

from curator.cli import main
from curator.pipeline import review
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store
from curator.store.knowledge import top_k_patterns
from curator.store.memtool_export import export_letta_block
from curator.store.models import Episode, PatternEpisode, utcnow

TEXTS = [
    "Retry network calls to the billing API with exponential backoff and jitter.",
    "The operator reads status updates first thing in the morning 🌅 before standup.",
    "Отчёты уходят в пятницу днём, кратко, в пяти пунктах для всей команды.",
    "Never delete user files without an explicit confirmation from the operator.",
]


def fill(store: Store) -> list[int]:
    now = utcnow()
    ids = [
        make_pattern(store, t, 0.9 - 0.2 * i, distilled_at=now - timedelta(days=2 + i))
        for i, t in enumerate(TEXTS)
    ]
    episode = Episode.create(content_hash="h1", text="the agent retried", timestamp=now)
    PatternEpisode.create(pattern=ids[0], episode=episode.id)
    return ids


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_mem0_export_carries_scores_dates_and_provenance(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = fill(store)
    code, out, err = run_cli(capsys, "--db", str(store.path), "export", "--format", "mem0")
    assert code == 0 and err == ""
    doc = json.loads(out)  # exactly one JSON document
    rows = top_k_patterns(store)
    assert [e["memory"] for e in doc] == [r.text for r in rows] == TEXTS
    first = doc[0]
    assert first["messages"] == [{"role": "user", "content": TEXTS[0]}]
    meta = first["metadata"]
    assert meta["importance"] == 0.9 and meta["rank"] == 1
    assert meta["effective_importance"] == round(rows[0].effective, 6)
    assert datetime.fromisoformat(meta["distilled_at"]) == rows[0].distilled_at
    assert meta["provenance"]["pattern_id"] == ids[0]
    assert len(meta["provenance"]["source_episode_ids"]) == 1
    assert doc[1]["metadata"]["provenance"]["source_episode_ids"] == []


def test_round_trip_mem0_export_to_import_knowledge(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(store)
    code, out, _ = run_cli(capsys, "--db", str(store.path), "export", "--format", "mem0", "--json")
    assert code == 0
    exported = tmp_path / "mem0.json"
    exported.write_text(out, encoding="utf-8")
    rows = top_k_patterns(store)
    other = Store(tmp_path / "other.sqlite")
    try:
        report = import_knowledge(other, exported)
        assert report.shape == "mem0" and report.errors == [] and report.dropped_quality == []
        views = review.list_candidates(other, report.run_id)
        assert [v.text for v in views] == TEXTS
        assert [v.importance for v in views] == [r.importance for r in rows]
        assert [v.distilled_at for v in views] == [r.distilled_at for r in rows]
    finally:
        other.close()


def test_letta_block_fits_the_limit_and_says_what_was_left_out(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(store)
    db = str(store.path)
    code, out, _ = run_cli(
        capsys, "--db", db, "export", "--format", "letta-block", "--limit", "200"
    )
    block = out.rstrip("\n")
    assert code == 0 and len(block) <= 200
    lines = block.split("\n")
    # the second does not fit; the shorter third still does (whole patterns, in rank order)
    assert lines[:-1] == [f"- {TEXTS[0]}", f"- {TEXTS[2]}"]
    assert lines[-1] == "(2 of 4 patterns did not fit in 200 characters)"
    code, out, _ = run_cli(capsys, "--db", db, "export", "--format", "letta-block", "--json")
    doc = json.loads(out)
    assert doc["limit"] == 5000 and doc["block"].endswith(
        "(all 4 patterns fit in 5,000 characters)"
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--format", "letta-block", "--limit", "10"], "--limit must be at least 80"),
        (["--format", "mem0", "--limit", "500"], "--limit applies to --format letta-block"),
        (["--limit", "500"], "--limit applies to --format letta-block"),
    ],
)
def test_bad_limits_are_usage_errors(
    store: Store, capsys: pytest.CaptureFixture[str], args: list[str], reason: str
) -> None:
    code, out, err = run_cli(capsys, "--db", str(store.path), "export", *args)
    assert code == 2 and out == ""
    assert err.startswith("curator: error: ") and reason in err and err.count("\n") == 1


def test_a_pattern_longer_than_the_block_is_left_out_not_cut() -> None:
    from curator.store.knowledge import PatternRow

    when = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [
        PatternRow(i, text, 0.5, 0.5, when, "uncategorized", "active", 1, i, True, 0)
        for i, text in enumerate(["x" * 300, "A short one that fits in the block."], 1)
    ]
    block = export_letta_block(rows, 120)
    assert block.split("\n") == [
        "- A short one that fits in the block.",
        "(1 of 2 patterns did not fit in 120 characters)",
    ]
