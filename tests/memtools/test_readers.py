"""import-knowledge reads Mem0, OpenMemory, Letta agent files and lists of strings.

The files are written from each tool's documented shape: Mem0's ``Memory.get_all()``
result, OpenMemory's export (``memories.json``, alone or in its zip), a Letta ``.af``
with core-memory blocks and archival passages. Each is staged as a run for review, the
original dates on the candidates and the original ids in the run's dedup trace.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from curator.cli import main
from curator.pipeline import review
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store
from curator.store.knowledge_file import read_knowledge
from curator.store.knowledge_items import MAX_PATTERN_CHARS
from curator.store.models import Candidate, Run, TraceStep

MEM0 = {
    "results": [
        {
            "id": "5f2b0e1c-1111-4a5e-9c1e-000000000001",
            "memory": "Prefers vegetarian restaurants when travelling for work 🌱",
            "hash": "d41d8cd98f00b204e9800998ecf8427e",
            "metadata": None,
            "created_at": "2024-07-20T10:15:00.123456-07:00",
            "updated_at": None,
            "user_id": "alex",
        },
        {
            "id": "5f2b0e1c-1111-4a5e-9c1e-000000000002",
            "memory": "Пишет отчёты по пятницам и просит краткое резюме в пяти пунктах.",
            "hash": "0cc175b9c0f1b6a831c399e269772661",
            "metadata": {"category": "work"},
            "created_at": "2024-08-01T09:00:00-07:00",
            "updated_at": "2024-08-02T09:00:00-07:00",
            "user_id": "alex",
        },
        {
            "id": "5f2b0e1c-1111-4a5e-9c1e-000000000003",
            "memory": "会議の前に必ず議題を共有してほしいと考えているユーザーです。",
            "created_at": "2024-09-01T00:00:00Z",
            "user_id": "alex",
        },
    ]
}

OPENMEMORY = {
    "user": {"id": "u1", "user_id": "alex"},
    "apps": [{"id": "a1", "name": "cursor"}],
    "memories": [
        {
            "id": "0b1e6c0e-0000-4000-8000-000000000001",
            "user_id": "u1",
            "app_id": "a1",
            "content": "Uses pnpm rather than npm in every JavaScript project they maintain.",
            "metadata": {},
            "state": "active",
            "created_at": "2025-01-05T12:00:00+00:00",
            "updated_at": "2025-01-05T12:00:00+00:00",
            "categories": ["tooling"],
        },
        {
            "id": "0b1e6c0e-0000-4000-8000-000000000002",
            "content": "Wanted dark mode in every editor; this was later removed by the user.",
            "state": "deleted",
            "created_at": "2025-01-06T12:00:00+00:00",
        },
        {
            "id": "0b1e6c0e-0000-4000-8000-000000000003",
            "content": "Deploys the staging environment only after the integration tests pass.",
            "state": "active",
            "created_at": "2025-02-01T08:30:00Z",
        },
    ],
    "export_meta": {"version": "1", "generated_at": "2025-03-01T00:00:00Z"},
}

LETTA = {
    "agents": [
        {
            "name": "helper",
            "agent_type": "memgpt_agent",
            "core_memory": [
                {
                    "id": "block-1",
                    "label": "human",
                    "value": "- Name: Alex, a site reliability engineer in Lisbon.\n\n"
                    "- Prefers answers with concrete shell commands 🐚",
                    "limit": 5000,
                }
            ],
        }
    ],
    "blocks": [
        {
            "id": "block-1",
            "label": "human",
            "value": "- Name: Alex, a site reliability engineer in Lisbon.\n\n"
            "- Prefers answers with concrete shell commands 🐚",
            "limit": 5000,
        },
        {"id": "block-2", "label": "persona", "value": "", "limit": 5000},
    ],
    "passages": [
        {
            "id": "passage-9",
            "text": "On-call rotations change every Monday at 09:00 Lisbon time.",
            "created_at": "2025-02-10T09:00:00Z",
        }
    ],
}


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def dedup_trace(run_id: int) -> list[dict[str, Any]]:
    step = TraceStep.get((TraceStep.run == run_id) & (TraceStep.step == "dedup"))
    return list(step.parsed)


def test_mem0_get_all_is_staged_with_its_dates_and_ids(store: Store, tmp_path: Path) -> None:
    report = import_knowledge(store, write(tmp_path, "mem0.json", MEM0))
    assert report.shape == "mem0" and report.errors == [] and report.read == 3
    run = Run.get_by_id(report.run_id)
    assert run.kind == "import" and run.status == "staged" and run.params["shape"] == "mem0"
    views = review.list_candidates(store, run.id)
    texts = [m["memory"] for m in MEM0["results"]]
    # Japanese has no spaces between words: the quality gate measures it in
    # English-equivalent words (curator.core.textmeasure), so it is kept like the others
    assert [v.text for v in views] == texts and report.dropped_quality == []
    assert views[0].distilled_at == datetime(2024, 7, 20, 17, 15, 0, 123456, tzinfo=UTC)
    ids = [t["source_id"] for t in dedup_trace(run.id)]
    assert ids == [f"mem0:{m['id']}" for m in MEM0["results"]]


def test_a_bare_mem0_list_is_read_with_line_numbers(store: Store, tmp_path: Path) -> None:
    items = [*MEM0["results"], {"id": "x", "memory": 42}, {"id": "y"}]
    parsed = read_knowledge(write(tmp_path, "list.json", items))
    assert parsed.shape == "mem0" and len(parsed.items) == 3
    reasons = [(e.line > 1, e.reason) for e in parsed.errors]
    assert reasons == [
        (True, "'memory' must be a string, not a number"),
        (True, "needs a 'memory' string"),
    ]


def test_openmemory_export_json_and_zip(store: Store, tmp_path: Path) -> None:
    plain = read_knowledge(write(tmp_path, "memories.json", OPENMEMORY))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("export/memories.json", json.dumps(OPENMEMORY))
        archive.writestr("export/memories.jsonl.gz", b"\x1f\x8b")
    zipped = read_knowledge(write(tmp_path, "export.zip", buffer.getvalue()))
    for parsed in (plain, zipped):
        assert parsed.shape == "openmemory"
        assert [i.source_id for i in parsed.items] == [
            "openmemory:0b1e6c0e-0000-4000-8000-000000000001",
            "openmemory:0b1e6c0e-0000-4000-8000-000000000003",
        ]
        # the deleted memory is reported, not dropped silently
        assert [(e.line, e.reason) for e in parsed.errors] == [
            (2, "memories[2]: state 'deleted': left out (no longer in the tool's memory)")
        ]
    report = import_knowledge(store, write(tmp_path, "again.zip", buffer.getvalue()))
    assert report.staged == 2 and len(report.errors) == 1


def test_letta_agent_file_blocks_line_by_line_and_passages(store: Store, tmp_path: Path) -> None:
    report = import_knowledge(store, write(tmp_path, "helper.af", LETTA))
    assert report.shape == "letta" and report.errors == []
    views = review.list_candidates(store, report.run_id)
    assert [v.text for v in views] == [
        "Name: Alex, a site reliability engineer in Lisbon.",
        "Prefers answers with concrete shell commands 🐚",
        "On-call rotations change every Monday at 09:00 Lisbon time.",
    ]  # the block listed twice (top level and in its agent) is read once; empty: nothing
    assert views[2].distilled_at == datetime(2025, 2, 10, 9, tzinfo=UTC)
    assert views[0].distilled_at is None
    assert [t["source_id"] for t in dedup_trace(report.run_id)] == [
        "letta:block:human:1",
        "letta:block:human:3",
        "letta:passage:passage-9",
    ]


def test_a_list_of_strings(store: Store, tmp_path: Path) -> None:
    items = ["Answers in Portuguese when the user writes in Portuguese 🇵🇹", "", 7, "日本語で返信"]
    parsed = read_knowledge(write(tmp_path, "s.json", json.dumps(items, ensure_ascii=False)))
    assert parsed.shape == "strings"
    assert [i.text for i in parsed.items] == [items[0], items[3]]
    assert [e.reason for e in parsed.errors] == [
        "the string is empty",
        "expected a string, found a number",
    ]


@pytest.mark.parametrize(
    "content",
    [{"results": []}, {"memories": []}, {"blocks": [], "passages": []}, []],
    ids=["mem0", "openmemory", "letta", "array"],
)
def test_empty_lists_read_nothing_and_stage_nothing(
    store: Store, tmp_path: Path, content: Any
) -> None:
    report = import_knowledge(store, write(tmp_path, "e.json", content))
    assert report.read == 0 and report.errors == [] and report.run_id is None
    assert Run.select().count() == 0


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"results": "nope"}, "'results' must be an array, not a string"),
        ({"results": [None]}, "results[1]: expected a memory object with 'memory', found null"),
        (
            {"results": [{"memory": "x" * 50, "metadata": {"importance": "high"}}]},
            "'metadata.importance' must be a number, not a string",
        ),
        (
            {"results": [{"memory": "A memory that is long enough.", "created_at": 5}]},
            "'created_at' must be an ISO 8601 string, not a number",
        ),
        (
            {
                "results": [
                    {"memory": "A memory from the future.", "created_at": "9999-01-01T00:00:00Z"}
                ]
            },
            "is in the future",
        ),
        ({"results": [{"memory": "x" * (MAX_PATTERN_CHARS + 1)}]}, "over the 4,000 limit"),
        ({"memories": [{"content": ["a"]}]}, "'content' must be a string, not an array"),
        ({"blocks": [{"label": "human", "value": 3}]}, "needs a 'value' string, not a number"),
        ({"blocks": {"label": "human"}}, "'blocks' must be an array, not an object"),
        ({"passages": [{"text": None}]}, "passages[1]: needs a 'text' string, not null"),
        ({"agents": [1]}, "agents[1]: expected an object, not a number"),
        ({"hello": 1}, "a JSON object of no known shape"),
        ('{"results": [{"memory": "cut', "(file cut off?)"),
        ('{"results": [], "results": []}', "duplicate key 'results'"),
        ({"results": [{"memory": "bell \u0007 inside the text of a memory"}]}, "control"),
    ],
)
def test_hostile_files_are_worded_errors_and_stage_nothing_bad(
    store: Store, tmp_path: Path, content: Any, reason: str
) -> None:
    report = import_knowledge(store, write(tmp_path, "bad.json", content))
    assert report.errors, report
    assert reason in report.errors[0].reason
    assert report.staged == 0 and Candidate.select().count() == 0


def test_an_enormous_memory_is_one_error_and_the_rest_is_read(tmp_path: Path) -> None:
    doc = {"results": [{"memory": "y" * 2_000_000}, MEM0["results"][0]]}
    parsed = read_knowledge(write(tmp_path, "big.json", doc))
    assert len(parsed.items) == 1 and len(parsed.errors) == 1
    assert parsed.errors[0].line == 1 and "results[1]" in parsed.errors[0].reason


def test_a_zip_bomb_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is lowered (a fault injection of scale: a real bomb past 512 MiB would
    take the test minutes to write); what is checked is that reading stops at the limit."""
    from curator.store import memtool_formats

    monkeypatch.setattr(memtool_formats, "MAX_ZIP_JSON_BYTES", 1024 * 1024)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", b"{" + b" " * (8 * 1024 * 1024) + b"}")
    assert len(buffer.getvalue()) < 64 * 1024
    parsed = read_knowledge(write(tmp_path, "bomb.zip", buffer.getvalue()))
    assert parsed.items == [] and "over 1 MiB; not read" in parsed.errors[0].reason


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"PK\x03\x04 this is not really a zip", "an unreadable zip"),
        (None, "a zip without memories.json"),
    ],
)
def test_broken_zips_are_one_error(tmp_path: Path, content: bytes | None, reason: str) -> None:
    if content is None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("other.json", "{}")
        content = buffer.getvalue()
    parsed = read_knowledge(write(tmp_path, "x.zip", content))
    assert parsed.items == [] and reason in parsed.errors[0].reason


@pytest.mark.parametrize(
    ("fmt", "content", "reason"),
    [
        ("letta", ["a list of strings here"], "a Letta agent file is a JSON object"),
        ("seed", MEM0, "seed is a JSON array"),
        ("mem0", "plain text line\n", "not JSON; mem0 is read from JSON"),
        ("mem0", OPENMEMORY, "no 'results' array"),
    ],
)
def test_a_forced_format_that_does_not_match_is_one_error(
    tmp_path: Path, fmt: str, content: Any, reason: str
) -> None:
    parsed = read_knowledge(write(tmp_path, "f.json", content), fmt=fmt)
    assert parsed.items == [] and reason in parsed.errors[0].reason


def test_a_forced_format_reads_what_auto_would_guess_otherwise(tmp_path: Path) -> None:
    """A bare list whose first element has 'memory' and 'content': auto says mem0."""
    items = [{"content": "An OpenMemory memory with a content field.", "memory": "other"}]
    path = write(tmp_path, "l.json", items)
    assert read_knowledge(path).items[0].text == "other"
    assert read_knowledge(path, fmt="openmemory").items[0].text == items[0]["content"]


def test_cli_format_option_and_exit_codes(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(store.path)
    path = write(tmp_path, "m.json", MEM0)
    assert main(["--db", db, "import-knowledge", str(path), "--format", "mem0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["shape"] == "mem0" and out["staged"] == 3  # the Japanese one too
    bad = write(tmp_path, "b.json", {"results": [{"memory": 1}]})
    assert main(["--db", db, "import-knowledge", str(bad)]) == 1
    assert "b.json:1: results[1]: 'memory' must be a string" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse's usage error
        main(["--db", db, "import-knowledge", str(path), "--format", "zip"])
    assert usage.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "Traceback" not in err


def test_an_object_with_a_byte_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    raw = b'{"results": [{"memory": "caf\xe9 au lait is what the user drinks each day"}]}'
    parsed = read_knowledge(write(tmp_path, "latin1.json", raw))
    assert parsed.items == []
    assert [(e.line, e.reason) for e in parsed.errors] == [
        (0, "invalid UTF-8 at byte 29 of the file")
    ]


def test_deep_nesting_is_not_called_a_cut_off_file(tmp_path: Path) -> None:
    deep = '{"results": ' + "[" * 100_000 + "]" * 100_000 + "}"
    parsed = read_knowledge(write(tmp_path, "deep.json", deep))
    assert [e.reason for e in parsed.errors] == ["JSON nested too deeply"]


def test_a_byte_order_mark_before_an_object_is_read(tmp_path: Path) -> None:
    raw = b'\xef\xbb\xbf{"results": [{"memory": "Read even with a byte order mark in front."}]}'
    assert len(read_knowledge(write(tmp_path, "bom.json", raw)).items) == 1
