"""Properties: a Letta block never exceeds its limit nor cuts a pattern; any JSON is read
without a crash, by detection and by the whole reader."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.store.knowledge import PatternRow
from curator.store.knowledge_file import read_knowledge
from curator.store.memtool_export import MIN_BLOCK_LIMIT, export_letta_block
from curator.store.memtool_formats import FORMATS, detect

WHEN = datetime(2025, 1, 1, tzinfo=UTC)
texts = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=300
).filter(lambda t: t.split())


@settings(deadline=None, max_examples=200)
@given(st.lists(texts, max_size=40), st.integers(MIN_BLOCK_LIMIT, 3000))
@example(["a" * 5000], MIN_BLOCK_LIMIT)
@example(["🌱" * 10] * 999, MIN_BLOCK_LIMIT)
@example(["00", "0", "00"], 80)
def test_letta_block_within_limit_whole_patterns_in_rank_order(
    patterns: list[str], limit: int
) -> None:
    rows = [
        PatternRow(i, t, 0.5, 0.5, WHEN, "c", "active", 1, i, True, 0)
        for i, t in enumerate(patterns, 1)
    ]
    block = export_letta_block(rows, limit)
    assert len(block) <= limit
    *lines, last = block.split("\n")
    wanted = [f"- {' '.join(t.split())}" for t in patterns]
    # each line is a whole pattern, in rank order: the lines are a subsequence of wanted
    remaining = iter(wanted)
    assert all(any(line == w for w in remaining) for line in lines)
    left_out = len(patterns) - len(lines)
    assert f"({left_out:,} of " in last if left_out else "fit" in last


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                [
                    "results",
                    "memories",
                    "memory",
                    "content",
                    "pattern",
                    "blocks",
                    "passages",
                    "agents",
                    "value",
                    "text",
                    "label",
                    "id",
                    "created_at",
                    "state",
                    "metadata",
                    "importance",
                    "distilled_at",
                    "core_memory",
                ]
            )
            | st.text(max_size=8),
            inner,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(
    deadline=None, max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(json_values, st.sampled_from(FORMATS))
@example({"agents": [{"blocks": [{"value": 1}]}]}, "auto")
@example({"results": [{"memory": "x", "metadata": {"importance": True}}]}, "auto")
def test_any_json_is_detected_and_read_without_a_crash(
    tmp_path: Path, value: object, fmt: str
) -> None:
    assert detect(value) in (None, *FORMATS)
    path = tmp_path / "any.json"
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    parsed = read_knowledge(path, fmt=fmt)
    for item in parsed.items:
        assert item.text and item.text == " ".join(item.text.split())
    for error in parsed.errors:
        assert error.reason and "\n" not in error.reason
