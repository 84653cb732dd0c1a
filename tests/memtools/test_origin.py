"""Knowledge from another memory tool keeps its original ids and dates through the review.

The person leaving Mem0 or Letta decides each memory knowing which one it was and when
that tool wrote it: the staged candidate stores it, ``curator review RUN`` and its
``--json`` show it, and so does the window's detail panel (tests/memtools/test_window.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.pipeline import review
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store
from curator.store.memtool_origin import MAX_VALUE_CHARS, describe_origin, origin
from curator.store.models import Candidate
from memtools.test_readers import LETTA, MEM0, OPENMEMORY, write


def test_mem0_memories_keep_their_id_and_both_dates(store: Store, tmp_path: Path) -> None:
    report = import_knowledge(store, write(tmp_path, "mem0.json", MEM0))
    views = review.list_candidates(store, report.run_id)
    first, second = MEM0["results"][0], MEM0["results"][1]
    assert views[0].origin == {
        "tool": "mem0",
        "id": first["id"],
        "created_at": first["created_at"],  # as the file wrote it
    }
    assert views[1].origin == {
        "tool": "mem0",
        "id": second["id"],
        "created_at": second["created_at"],
        "updated_at": second["updated_at"],
    }
    stored = Candidate.get(Candidate.run == report.run_id, Candidate.ordinal == 1)
    assert stored.origin == views[0].origin  # on the candidate itself, not derived


def test_openmemory_and_letta_keep_ids_labels_lines_and_dates(store: Store, tmp_path: Path) -> None:
    report = import_knowledge(store, write(tmp_path, "memories.json", OPENMEMORY))
    kept = [m for m in OPENMEMORY["memories"] if m["state"] == "active"]
    assert [v.origin for v in review.list_candidates(store, report.run_id)] == [
        {
            "tool": "openmemory",
            "id": m["id"],
            "created_at": m["created_at"],
            **({"updated_at": m["updated_at"]} if "updated_at" in m else {}),
        }
        for m in kept
    ]
    report = import_knowledge(store, write(tmp_path, "helper.af", LETTA))
    assert [v.origin for v in review.list_candidates(store, report.run_id)] == [
        {"tool": "letta", "block": "human", "block_id": "block-1", "line": 1},
        {"tool": "letta", "block": "human", "block_id": "block-1", "line": 3},
        {"tool": "letta", "passage_id": "passage-9", "created_at": "2025-02-10T09:00:00Z"},
    ]


def test_a_list_of_strings_and_our_own_json_have_no_origin(store: Store, tmp_path: Path) -> None:
    strings = ["Prefers short answers with one concrete example each time."]
    seed = [{"pattern": "Deploys on Tuesdays after the weekly planning meeting.", "importance": 1}]
    for name, content in (("s.json", strings), ("seed.json", seed)):
        report = import_knowledge(store, write(tmp_path, name, content))
        assert [v.origin for v in review.list_candidates(store, report.run_id)] == [None]


def test_curator_review_shows_the_origin_in_json_and_text(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = import_knowledge(store, write(tmp_path, "helper.af", LETTA))
    store.close()
    db = str(store.path)
    assert main(["--db", db, "review", str(report.run_id), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["candidates"][2]["origin"] == {
        "tool": "letta",
        "passage_id": "passage-9",
        "created_at": "2025-02-10T09:00:00Z",
    }
    assert main(["--db", db, "review", str(report.run_id)]) == 0
    out = capsys.readouterr().out
    assert "from Letta core-memory block 'human' (block-1), line 3" in out
    assert "from Letta archival passage passage-9, created 2025-02-10T09:00:00Z" in out


def test_the_origin_line_reads_as_the_tool_wrote_it() -> None:
    assert (
        describe_origin(origin("mem0", id="m-1", created_at="2024-07-20T10:15:00Z"))
        == "Mem0 memory m-1, created 2024-07-20T10:15:00Z"
    )
    assert describe_origin(None) == ""


@settings(deadline=None, max_examples=200)
@given(
    st.sampled_from(["mem0", "openmemory", "letta"]),
    st.dictionaries(
        st.sampled_from(
            ["id", "created_at", "updated_at", "block", "block_id", "line", "passage_id"]
        ),
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.lists(st.integers())),
    ),
)
def test_any_values_give_a_bounded_origin_and_one_line(tool: str, values: dict) -> None:
    """Whatever a hostile file puts under those keys: only strings and numbers are kept,
    cut to a bounded length, and the review's line is one line without control codes."""
    found = origin(tool, **values)
    assert found["tool"] == tool
    for key, value in found.items():
        assert isinstance(value, str | int | float) and not isinstance(value, bool)
        assert len(str(value)) <= max(MAX_VALUE_CHARS, len(str(values.get(key, ""))))
        if isinstance(value, str) and key != "tool":
            assert len(value) <= MAX_VALUE_CHARS
    line = describe_origin(found)
    assert line and "\n" not in line and "\x1b" not in line
    json.dumps(found)  # stored as JSON


def test_a_bad_passage_after_blocks_is_still_named_by_its_place(tmp_path: Path) -> None:
    """The origin of each block line is built while the blocks are read: the passages
    read next are still named by their own place in the file."""
    from curator.store.knowledge_file import read_knowledge

    doc = {
        "agents": [{"name": "a", "core_memory": [{"label": "human", "value": "Likes tea a lot."}]}],
        "blocks": [{"label": "persona", "value": "Answers in short sentences always."}],
        "passages": [{"text": 7}],
    }
    parsed = read_knowledge(write(tmp_path, "a.af", doc))
    assert [e.reason for e in parsed.errors] == ["passages[1]: needs a 'text' string, not a number"]
    assert [i.origin["block"] for i in parsed.items if i.origin] == ["persona", "human"]
