"""Gold import matches episodes by their content, never by a hash the file claims.

A gold line sets a human label, so a hash that does not belong to the line's text, a
newer file format or a malformed line must never label an episode the line does not
hold. Every case goes through the real CLI on real SQLite files.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.errors import CuratorError
from curator.pipeline.gold import import_gold
from curator.store.db import Store
from curator.store.episode_records import MAX_EPISODE_CHARS, content_hash
from curator.store.importer import import_file
from curator.store.models import Episode, format_utc

HEADER = {"format": "memory-curator gold set", "version": 1}
EPISODES = [
    {"text": "the agent kept its promise to the operator", "timestamp": "2026-01-02T03:04:05Z"},
    {"text": "the agent deleted a file without asking", "timestamp": "2026-01-03T03:04:05Z"},
    {"text": "a heartbeat ping with nothing in it", "source": "cron"},  # no timestamp
]


def _database(tmp_path: Path) -> Path:
    """A database holding EPISODES, imported by the real episode importer."""
    db = tmp_path / "curator.sqlite"
    source = tmp_path / "episodes.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in EPISODES), encoding="utf-8")
    with Store(db) as store:
        assert import_file(store, source).imported == len(EPISODES)
    return db


def _rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT id, content_hash, text, human_label FROM episode ORDER BY id"
        ).fetchall()


def _gold(tmp_path: Path, *lines: Any, header: Any = HEADER) -> Path:
    path = tmp_path / "gold.jsonl"
    body = [json.dumps(header)] + [x if isinstance(x, str) else json.dumps(x) for x in lines]
    path.write_text("\n".join(body) + "\n", encoding="utf-8")
    return path


def _import(db: Path, gold: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["--db", str(db), "gold", "import", str(gold), "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def test_a_hash_of_another_episode_labels_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _database(tmp_path)
    before = _rows(db)
    victim_hash = before[0][1]
    gold = _gold(
        tmp_path,
        {
            "kind": "episode",
            "content_hash": victim_hash,
            "text": "something entirely unrelated",
            "timestamp": "2026-01-02T03:04:05Z",
            "human_label": "noise",
        },
    )
    code, doc = _import(db, gold, capsys)
    assert code == 1
    assert doc["errors"] == [
        f"{gold}:2: 'content_hash' is not the hash of this line's text, source and timestamp"
    ]
    assert _rows(db) == before  # no label on episode 1, nothing added


def test_the_same_content_under_another_hash_adds_no_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _database(tmp_path)
    before = _rows(db)
    gold = _gold(
        tmp_path,
        {
            "kind": "episode",
            **EPISODES[0],
            "content_hash": "f" * 64,
            "human_label": "constitutional",
        },
    )
    code, doc = _import(db, gold, capsys)
    assert code == 1 and len(doc["errors"]) == 1 and doc["episodes_added"] == 0
    assert _rows(db) == before


def test_a_line_with_its_own_hash_labels_its_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exported hash of an episode imported without a timestamp leaves the timestamp
    out; the line carries the import time, and it still matches its own episode."""
    db = _database(tmp_path)
    before = _rows(db)
    with sqlite3.connect(db) as conn:
        stamp = conn.execute("SELECT timestamp FROM episode WHERE id = 3").fetchone()[0]
    lines = [
        {"kind": "episode", **EPISODES[0], "content_hash": before[0][1], "human_label": "noise"},
        {
            "kind": "episode",
            **EPISODES[2],
            "timestamp": stamp,
            "content_hash": before[2][1],
            "human_label": "uncategorized",
        },
    ]
    code, doc = _import(db, _gold(tmp_path, *lines), capsys)
    assert (code, doc["errors"], doc["labels_set"], doc["episodes_added"]) == (0, [], 2, 0)
    assert [r[3] for r in _rows(db)] == ["noise", None, "uncategorized"]


def test_a_newer_format_version_is_refused_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _database(tmp_path)
    before = _rows(db)
    good = {"kind": "episode", "text": "a brand new episode", "human_label": "noise"}
    gold = _gold(tmp_path, good, header={**HEADER, "version": 99})
    assert main(["--db", str(db), "gold", "import", str(gold)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "version 99" in err and "nothing was imported" in err
    assert _rows(db) == before


@pytest.mark.parametrize("version", ["1", True, None, 0, -1, 1.5, [1]])
def test_a_header_version_that_is_not_a_known_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: Any
) -> None:
    db = _database(tmp_path)
    before = _rows(db)
    good = {"kind": "episode", "text": "a brand new episode", "human_label": "noise"}
    assert (
        main(
            [
                "--db",
                str(db),
                "gold",
                "import",
                str(_gold(tmp_path, good, header={**HEADER, "version": version})),
            ]
        )
        == 2
    )
    assert "version" in capsys.readouterr().err
    assert _rows(db) == before


def test_a_line_with_content_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The episode importer's 'content' field is accepted (it was dropped, then the
    line was rejected for lacking it)."""
    db = _database(tmp_path)
    gold = _gold(
        tmp_path, {"kind": "episode", "content": "said with content", "human_label": "noise"}
    )
    code, doc = _import(db, gold, capsys)
    assert (code, doc["errors"], doc["episodes_added"], doc["labels_set"]) == (0, [], 1, 1)
    assert _label_of(db, "said with content") == "noise"


def _label_of(db: Path, text: str) -> str | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT human_label FROM episode WHERE text = ?", (text,)).fetchone()
    return None if row is None else row[0]


def test_bom_and_crlf_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _database(tmp_path)
    gold = tmp_path / "gold.jsonl"
    line = {"kind": "episode", "text": "written on another system", "human_label": "noise"}
    gold.write_bytes(b"\xef\xbb\xbf" + f"{json.dumps(HEADER)}\r\n{json.dumps(line)}\r\n".encode())
    code, doc = _import(db, gold, capsys)
    assert (code, doc["errors"], doc["labels_set"]) == (0, [], 1)


def test_invalid_utf8_and_a_truncated_last_line_are_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _database(tmp_path)
    gold = tmp_path / "gold.jsonl"
    good = {"kind": "episode", "text": "a fine line", "human_label": "noise"}
    gold.write_bytes(
        json.dumps(HEADER).encode()
        + b'\n{"kind": "episode", "text": "caf\xe9", "human_label": "noise"}\n'
        + json.dumps(good).encode()
        + b'\n{"kind": "episode", "text": "cut off'
    )
    code, doc = _import(db, gold, capsys)
    assert code == 1 and doc["labels_set"] == 1
    assert [e.removeprefix(f"{gold}:").split(":")[0] for e in doc["errors"]] == ["2", "4"]
    assert "invalid UTF-8" in doc["errors"][0] and "invalid JSON" in doc["errors"][1]


WRONG = [
    ({"kind": ["episode"], "text": "x", "human_label": "noise"}, "'kind'"),
    ({"kind": "episode", "text": "x", "human_label": ["noise"]}, "'human_label'"),
    ({"kind": "episode", "text": "x", "human_label": "spam"}, "'human_label'"),
    ({"kind": "episode", "text": "x", "human_label": "noise", "content_hash": 5}, "content_hash"),
    ({"kind": "episode", "text": 5, "human_label": "noise"}, "'text' must be a string"),
    ({"kind": "episode", "text": "x", "human_label": "noise", "timestamp": 3}, "'timestamp'"),
    ({"kind": "episode", "human_label": "noise"}, "needs 'content', 'text' or 'messages'"),
    ({"kind": "episode", "text": "\ud800", "human_label": "noise"}, "lone surrogate"),
    ({"kind": "candidate", "text": "t", "proposed_action": {}, "decision": "ADD"}, "proposed"),
    ({"kind": "candidate", "text": "t", "proposed_action": "ADD", "decision": ["ADD"]}, "decision"),
    (
        {
            "kind": "candidate",
            "text": "t",
            "proposed_action": "ADD",
            "decision": "ADD",
            "final_text": {"a": 1},
        },
        "'final_text'",
    ),
    (
        {
            "kind": "candidate",
            "text": "t",
            "proposed_action": "ADD",
            "decision": "ADD",
            "category": 7,
        },
        "'category'",
    ),
    (
        {"kind": "candidate", "text": "\udfff", "proposed_action": "ADD", "decision": "ADD"},
        "lone surrogate",
    ),
    ('{"kind": "episode", "text": "x", "text": "y", "human_label": "noise"}', "duplicate key"),
    ('{"kind": "episode", "text": NaN, "human_label": "noise"}', "NaN"),
    ("[" * 100_000, "nested too deeply"),
    ("[1, 2]", "expected a JSON object"),
    ('"an episode"', "expected a JSON object"),
    ({"text": "x", "human_label": "noise"}, "'kind'"),
    ({"kind": "episode", "text": "x", "human_label": "noise", "metadata": [1]}, "'metadata'"),
    ({"kind": "episode", "text": "x", "human_label": "noise", "source": ["a"]}, "'source'"),
    ({"kind": "episode", "text": "x", "human_label": "noise", "id": 1.5}, "'id'"),
    ({"kind": "episode", "messages": [{"role": "user"}], "human_label": "noise"}, "message 1"),
    ({"kind": "episode", "text": "x", "content": "x", "human_label": "noise"}, "give exactly one"),
    (
        {
            "kind": "candidate",
            "text": "t",
            "proposed_action": "ADD",
            "decision": "ADD",
            "importance": True,
        },
        "'importance'",
    ),
    (
        {
            "kind": "candidate",
            "text": "t",
            "proposed_action": "ADD",
            "decision": "ADD",
            "episodes": "abc",
        },
        "'episodes'",
    ),
]


@pytest.mark.parametrize(("line", "reason"), WRONG)
def test_a_malformed_line_is_one_line_error_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: Any, reason: str
) -> None:
    db = _database(tmp_path)
    before = _rows(db)
    code, doc = _import(db, _gold(tmp_path, line), capsys)
    assert code == 1 and len(doc["errors"]) == 1, doc
    assert doc["errors"][0].startswith(f"{tmp_path / 'gold.jsonl'}:2: ")
    assert reason in doc["errors"][0] and "\n" not in doc["errors"][0]
    assert _rows(db) == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM candidate").fetchone()[0] == 0


def test_a_huge_episode_is_a_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _database(tmp_path)
    huge = {"kind": "episode", "text": "x" * (MAX_EPISODE_CHARS + 1), "human_label": "noise"}
    code, doc = _import(db, _gold(tmp_path, huge), capsys)
    assert code == 1 and "over the" in doc["errors"][0] and doc["episodes_added"] == 0


def test_repeats_inside_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same content twice with two labels: neither is trusted. Twice with one label:
    the repeat is reported, the first line counts."""
    db = _database(tmp_path)
    torn = {"kind": "episode", **EPISODES[1]}
    same = {"kind": "episode", "text": "said twice", "human_label": "noise"}
    gold = _gold(
        tmp_path,
        {**torn, "human_label": "noise"},
        same,
        {**torn, "human_label": "constitutional"},
        same,
    )
    code, doc = _import(db, gold, capsys)
    assert code == 1
    assert [e.removeprefix(f"{gold}:").split(":")[0] for e in doc["errors"]] == ["2", "4", "5"]
    assert "another label" in doc["errors"][0] and "repeats line 3" in doc["errors"][2]
    assert _rows(db)[1][3] is None  # the torn episode keeps no label
    assert _label_of(db, "said twice") == "noise" and doc["episodes_added"] == 1


def test_export_then_import_into_the_same_and_a_fresh_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export of episodes imported with and without timestamps re-imports cleanly:
    into a fresh database it adds them under the same identity, so importing the episode
    file there afterwards adds nothing."""
    db = _database(tmp_path)
    with Store(db) as store:
        from curator.pipeline.labels import relabel

        relabel(store, [int(e.id) for e in Episode.select()], "noise")
    gold = tmp_path / "exported.jsonl"
    assert main(["--db", str(db), "gold", "export", str(gold)]) == 0
    capsys.readouterr()
    code, doc = _import(db, gold, capsys)
    assert (code, doc["errors"], doc["labels_already_there"]) == (0, [], 3)
    fresh = tmp_path / "fresh.sqlite"
    code, doc = _import(fresh, gold, capsys)
    assert (code, doc["errors"], doc["episodes_added"]) == (0, [], 3)
    assert main(["--db", str(fresh), "import", str(tmp_path / "episodes.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["duplicates"] == 3


# -- the class as a property --------------------------------------------------------------

_LABELS = ["constitutional", "noise", "uncategorized"]
_TEXTS = [e["text"] for e in EPISODES] + ["a text no episode holds", "THE AGENT KEPT ITS PROMISE"]
_JUNK = [b'{"kind": "episode", "text": "caf\xe9", "human_label": "noise"}', b'{"kind": "ep', b"[1]"]


@st.composite
def _gold_line(draw: st.DrawFn) -> bytes:
    """A gold line: mostly episodes built from the database's texts with a true, an
    undated, a foreign or a random hash; sometimes junk."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(_JUNK))
    text = draw(st.sampled_from(_TEXTS))
    doc: dict[str, Any] = {"kind": "episode", "text": text}
    original = next((e for e in EPISODES if e["text"] == text), {})
    if "source" in original and draw(st.booleans()):
        doc["source"] = original["source"]
    stamp = draw(st.sampled_from([original.get("timestamp"), "2026-01-02T03:04:05Z", None]))
    if stamp is not None:
        doc["timestamp"] = stamp
    doc["human_label"] = draw(st.sampled_from([*_LABELS, "spam", None]))
    hashing = draw(st.sampled_from(["none", "true", "undated", "foreign", "random"]))
    body, source = text, doc.get("source", "")
    dated = None if stamp is None else format_utc(datetime.fromisoformat(stamp))
    if hashing == "true":
        doc["content_hash"] = content_hash(body, source, dated)
    elif hashing == "undated":
        doc["content_hash"] = content_hash(body, source, None)
    elif hashing == "foreign":
        other = EPISODES[draw(st.integers(0, len(EPISODES) - 1))]
        when = other.get("timestamp")
        doc["content_hash"] = content_hash(
            other["text"],
            other.get("source", ""),
            None if when is None else format_utc(datetime.fromisoformat(when)),
        )
    elif hashing == "random":
        doc["content_hash"] = draw(st.text("0123456789abcdef", min_size=1, max_size=64))
    return json.dumps(doc).encode()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gold-template")
    db = _database(folder)
    with Store(db) as store:
        from curator.pipeline.labels import relabel

        relabel(store, [2], "constitutional")  # one human label already there
    return db


def _truthful(row: tuple[Any, ...]) -> bool:
    """The stored hash is the importer's hash of the row's own content."""
    _id, chash, text, source, stamp = row
    return chash in {content_hash(text, source, stamp), content_hash(text, source, None)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_gold_line(), max_size=8),
    version=st.sampled_from([1, 1, 1, 2, 99, "1"]),
    crlf=st.booleans(),
)
def test_no_label_moves_to_an_episode_the_line_does_not_hold(
    template: Path, lines: list[bytes], version: Any, crlf: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "curator.sqlite"
        shutil.copyfile(template, db)
        gold = Path(folder) / "gold.jsonl"
        end = b"\r\n" if crlf else b"\n"
        gold.write_bytes(end.join([json.dumps({**HEADER, "version": version}).encode(), *lines]))
        query = "SELECT id, content_hash, text, source, timestamp, human_label FROM episode"
        with sqlite3.connect(db) as conn:
            before = {r[0]: r for r in conn.execute(query)}
        with Store(db) as store:
            try:
                report = import_gold(store, gold)
            except CuratorError:
                report = None
        with sqlite3.connect(db) as conn:
            after = {r[0]: r for r in conn.execute(query)}
        if report is None:  # refused as a whole: a newer or malformed version
            assert version != 1 and after == before
            return
        assert version == 1
        bad = {int(e.removeprefix(f"{gold}:").split(":")[0]) for e in report.errors}
        good = [json.loads(line) for n, line in enumerate(lines, 2) if n not in bad]
        for eid, row in after.items():
            assert _truthful(row[:5]), row  # no episode stored under another's hash
            if eid in before and row == before[eid]:
                continue
            # a new episode or a new label: only from an accepted line with this content
            assert any(
                (d.get("text"), d.get("source", "")) == (row[2], row[3])
                and d.get("human_label") == row[5]
                for d in good
            ), (row, good, report.errors)
            if eid in before:
                assert before[eid][5] is None  # a human label is never overwritten


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "empty", "header only"])
def test_a_file_that_cannot_be_a_gold_set_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    import os

    db = _database(tmp_path)
    before = _rows(db)
    target = tmp_path / "gold.jsonl"
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)  # no writer: opening must not wait for one
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "header only":
        target.write_text(json.dumps(HEADER) + "\n", encoding="utf-8")
    code = main(["--db", str(db), "gold", "import", str(target)])
    captured = capsys.readouterr()
    if kind == "header only":
        assert code == 0 and "0 episodes added" in captured.out
    else:
        assert code == 2 and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert _rows(db) == before


def test_a_chat_episode_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Messages hash as the importer parsed them (roles trimmed), so the exported line of a
    chat, read back, is the same episode."""
    db = tmp_path / "chat.sqlite"
    chat = tmp_path / "chat.jsonl"
    messages = [{"role": " user ", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    chat.write_text(json.dumps({"messages": messages}) + "\n", encoding="utf-8")
    with Store(db) as store:
        assert import_file(store, chat).imported == 1
        from curator.pipeline.labels import relabel

        relabel(store, [1], "constitutional")
    gold = tmp_path / "gold.jsonl"
    assert main(["--db", str(db), "gold", "export", str(gold)]) == 0
    capsys.readouterr()
    code, doc = _import(db, gold, capsys)
    assert (code, doc["errors"], doc["episodes_added"], doc["labels_already_there"]) == (
        0,
        [],
        0,
        1,
    )


def test_a_row_stored_under_a_foreign_hash_is_not_labelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row an earlier version stored under another content's hash (it trusted the file)
    is not labelled by a line holding that other content."""
    db = _database(tmp_path)
    true_hash = content_hash("honest text", "", None)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE episode SET content_hash = ? WHERE id = 1", (true_hash,))
    before = _rows(db)
    gold = _gold(tmp_path, {"kind": "episode", "text": "honest text", "human_label": "noise"})
    code, doc = _import(db, gold, capsys)
    assert code == 1 and "holds other text" in doc["errors"][0]
    assert _rows(db) == before


@pytest.mark.parametrize("name", ["g" * 249 + ".jsonl", "金" * 80 + ".jsonl"])
def test_export_to_the_longest_name_a_disk_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The file was written under its own name plus ".part" first: at 251 bytes and more
    that temporary name was too long to create, and the export failed."""
    db = _database(tmp_path)
    gold = tmp_path / name
    assert main(["--db", str(db), "gold", "export", str(gold)]) == 0, capsys.readouterr().err
    assert gold.read_text(encoding="utf-8").strip()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
