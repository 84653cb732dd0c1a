"""Import: the chat-log shape, idempotent re-import, and every hostile case named by the spec."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from curator.store.db import Store
from curator.store.importer import ImportReport, ImportStopped, import_file, import_files
from curator.store.models import Episode


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "import.sqlite")
    yield s
    s.close()


def chat_sessions(n: int) -> list[dict[str, object]]:
    """Dated two-speaker sessions in the common chat-log shape."""
    sessions = []
    for i in range(n):
        sessions.append(
            {
                "id": f"conv-{i // 27}-session-{i % 27}",
                "timestamp": f"2023-{1 + i % 12:02d}-{1 + i % 28:02d}T13:{i % 60:02d}:00",
                "source": "locomo-like",
                "messages": [
                    {"role": "user", "name": "Caroline", "content": f"Hey! Session {i} news?"},
                    {"role": "assistant", "name": "Melanie", "content": f"Busy week {i}, kids!"},
                    {"role": "user", "name": "Caroline", "content": "Let's meet soon 🌻"},
                ],
                "metadata": {"session": i},
            }
        )
    return sessions


def write_jsonl(path: Path, objects: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects), "utf-8")
    return path


def test_272_chat_sessions_import_once(store: Store, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "sessions.jsonl", chat_sessions(272))
    first = import_file(store, path)
    assert (first.imported, first.duplicates, first.errors) == (272, 0, [])
    assert Episode.select().count() == 272
    again = import_file(store, path)
    assert (again.imported, again.duplicates, again.errors) == (0, 272, [])
    assert Episode.select().count() == 272
    ep = Episode.get(Episode.external_id == "conv-0-session-1")
    assert ep.messages[0] == {"role": "user", "name": "Caroline", "content": "Hey! Session 1 news?"}
    assert ep.text.startswith("Caroline: Hey! Session 1 news?\nMelanie: Busy week 1")
    assert ep.timestamp.tzinfo is not None and ep.timestamp.hour == 13  # naive means UTC
    assert store.integrity_check() == "ok"


def test_json_array_file(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "array.json"
    items = [*chat_sessions(3), {"content": 5}]
    path.write_text(json.dumps(items, indent=2), "utf-8")
    report = import_file(store, path)
    assert report.imported == 3
    assert len(report.errors) == 1
    starts = [
        i + 1 for i, text in enumerate(json.dumps(items, indent=2).split("\n")) if text == "  {"
    ]
    assert report.errors[0].line == starts[3]  # the line where the fourth element begins
    assert "'content' must be a string" in report.errors[0].reason


GOOD = {"content": "a perfectly ordinary episode about tomato blight", "source": "dm"}


def hostile_lines() -> list[tuple[bytes, str | None]]:
    """(raw line, expected reason fragment or None for a good line)."""

    def line(obj: object) -> bytes:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")

    deep = b'{"content": "deep", "metadata": ' + b'{"a": ' * 10_000 + b"1" + b"}" * 10_001
    return [
        (b"\xef\xbb\xbf" + line({**GOOD, "content": "first line carries a BOM"}), None),
        (line({**GOOD, "content": "invalid utf8 follows"})[:-2] + b'\xff"}', "invalid UTF-8"),
        (b'{"content": "lone \\ud800 surrogate"}', "lone surrogate"),
        (line({**GOOD, "content": "line\u2028separator inside a string"}), None),
        (b'{"content": "nan", "metadata": {"x": NaN}}', "NaN is not valid JSON"),
        (b'{"content": "big", "metadata": {"n": ' + b"9" * 5000 + b"}}", "5000 digits"),
        (deep, "nested too deeply"),
        (b'{"content": "dup", "content": "dup again"}', "duplicate key 'content'"),
        (line({**GOOD, "content": "crlf line ending"}) + b"\r", None),
        (line({"content": "x" * 50_000_000}), "over the 1,000,000 limit"),
        (line({"content": ["not", "a", "string"]}), "'content' must be a string"),
        (line({"text": 42}), "'text' must be a string"),
        (line({"messages": "hello"}), "'messages' must be an array"),
        (line({"messages": [{"role": "user", "content": 3}]}), "needs a 'content' string"),
        (line({"messages": [{"role": 1, "content": "hi"}]}), "needs a 'role' string"),
        (line({"messages": [{"role": "user", "content": "x", "name": 5}]}), "'name' must be"),
        (line({"messages": []}), "'messages' is empty"),
        (line({**GOOD, "content": "bad id", "id": [1]}), "'id' must be a string or an integer"),
        (line({**GOOD, "content": "bad time", "timestamp": 1700000000}), "'timestamp' must be"),
        (line({**GOOD, "content": "bad time", "timestamp": "yesterday"}), "not ISO 8601"),
        (line({**GOOD, "content": "bad source", "source": 7}), "'source' must be a string"),
        (line({**GOOD, "content": "bad meta", "metadata": [1]}), "'metadata' must be an object"),
        (line(["an", "array"]), "expected a JSON object"),
        (line({"source": "nothing else"}), "needs 'content', 'text' or 'messages'"),
        (line({"content": "a", "messages": []}), "give exactly one"),
        (line({"content": "   "}), "is empty"),
        (line({**GOOD, "content": "with a Z", "timestamp": "2026-09-01T10:00:00Z"}), None),
        (b"", None),  # blank line: skipped, not an error
        (b'{"content": "cut off mid-obj', "invalid JSON"),  # final line, no newline
    ]


def test_hostile_lines_are_reported_and_good_lines_imported(store: Store, tmp_path: Path) -> None:
    cases = hostile_lines()
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(raw for raw, _ in cases))
    report = import_file(store, path)

    expected_good = [i + 1 for i, (raw, why) in enumerate(cases) if why is None and raw]
    expected_bad = {i + 1: why for i, (_, why) in enumerate(cases) if why is not None}
    got_bad = {e.line: e.reason for e in report.errors}
    assert sorted(got_bad) == sorted(expected_bad), got_bad
    for number, fragment in expected_bad.items():
        assert fragment in got_bad[number], (number, got_bad[number])
    assert report.imported == len(expected_good)
    texts = {e.text for e in Episode.select()}
    assert "first line carries a BOM" in texts
    assert "line\u2028separator inside a string" in texts
    assert "crlf line ending" in texts
    assert all(str(e).startswith(f"{path}:{e.line}: ") for e in report.errors)
    assert store.integrity_check() == "ok"


def test_empty_file_imports_nothing(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    report = import_file(store, path)
    assert (report.imported, report.errors) == (0, [])


def test_same_text_at_two_times_is_two_episodes_and_missing_time_is_idempotent(
    store: Store, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "pings.jsonl",
        [
            {"content": "ping", "timestamp": "2026-09-01T10:00:00+02:00"},
            {"content": "ping", "timestamp": "2026-09-02T10:00:00+02:00"},
            {"content": "ping without a time"},
        ],
    )
    assert import_file(store, path).imported == 3
    assert import_file(store, path).imported == 0
    first = Episode.get(Episode.text == "ping")
    assert first.timestamp.hour == 8  # converted to UTC


def test_a_missing_file_is_reported(store: Store, tmp_path: Path) -> None:
    report = import_file(store, tmp_path / "nope.jsonl")
    assert report.errors and "no such file" in report.errors[0].reason


def test_import_reports_progress_while_reading_and_writing(store: Store, tmp_path: Path) -> None:
    """The window's progress bar: lines read of the file's lines, then rows written."""
    path = tmp_path / "progress.jsonl"
    lines = [json.dumps({"text": f"progress episode {i}"}) for i in range(5000)]
    path.write_text("\n".join(lines) + "\nnot json\n", encoding="utf-8")
    seen: list[tuple[int, int]] = []
    report = import_file(store, path, progress=lambda done, total: seen.append((done, total)))
    assert report.imported == 5000 and len(report.errors) == 1
    reading = [s for s in seen if s[1] == 5001]
    writing = [s for s in seen if s[1] == 5000]
    assert [d for d, _ in reading] == [2000, 4000, 5001]
    assert writing[0] == (0, 5000) and writing[-1] == (5000, 5000)
    assert seen.index(reading[-1]) < seen.index(writing[0])  # reading, then writing


def test_a_large_import_holds_no_per_line_objects_for_the_collector(
    store: Store, tmp_path: Path
) -> None:
    """Parsed lines wait for their insert as plain tuples: one object per line for the
    cyclic collector made it run full collections over them (100 ms and more with the
    GIL held: a frozen window while importing 60,000 lines). Counted at each progress
    report, after a collection."""
    import gc

    path = tmp_path / "many.jsonl"
    lines = [
        json.dumps({"text": f"line {i}", "timestamp": "2031-05-01T10:00:00Z", "source": "s"})
        for i in range(4500)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gc.collect()
    baseline = len(gc.get_objects())
    growth: list[int] = []

    def progress(done: int, total: int) -> None:
        if 0 < done < total:
            gc.collect()
            growth.append(len(gc.get_objects()) - baseline)

    report = import_file(store, path, progress=progress)

    assert report.imported == 4500
    assert growth  # reported while reading and while writing
    assert max(growth) < 1000, growth  # one insert chunk's rows at most, not one per line


class LockingInput(io.BytesIO):
    """Standard input that takes the database's write lock in another connection when it
    is first read (fault injection: a second writer arriving between two files, at a
    moment a real process cannot be made to hit)."""

    def __init__(self, data: bytes, db: Path) -> None:
        super().__init__(data)
        self.db, self.holder = db, None

    def read(self, size: int | None = -1) -> bytes:
        if self.holder is None:
            self.holder = sqlite3.connect(self.db, isolation_level=None)
            self.holder.execute("BEGIN IMMEDIATE")
        return super().read(size)


def test_a_busy_database_stops_the_import_naming_the_files_it_kept(tmp_path: Path) -> None:
    """``import A -``: A is committed, then the lock is taken elsewhere and standard input
    waits for it in vain. The error names A and its count: "nothing changed" hid them."""
    path = tmp_path / "busy.sqlite"
    store = Store(path, busy_timeout_s=0.2)
    first = write_jsonl(tmp_path / "first.jsonl", chat_sessions(3))
    stdin = LockingInput(b'{"content": "a note after the first file"}\n', path)
    try:
        with pytest.raises(ImportStopped) as stopped:
            import_files(store, [first, "-"], stdin=stdin)
    finally:
        assert stdin.holder is not None
        stdin.holder.execute("ROLLBACK")
        stdin.holder.close()
    said = str(stopped.value)
    assert said.startswith("-: busy: another curator process is writing")
    assert said.endswith(f"the files before it stay imported: {first} (3 imported)")
    assert stopped.value.exit_code == 1  # some work was done and is kept
    with store.read():
        assert Episode.select().count() == 3
    store.close()


def test_a_full_disk_stops_the_import_naming_the_files_it_kept(tmp_path: Path) -> None:
    """``import A B`` where the database fills up in B: SQLite's error, not ours, which
    passed by the naming of A (exit 2, "nothing changed", with A's episodes stored). The
    full disk is SQLite's page limit here, a real SQLITE_FULL."""
    store = Store(tmp_path / "full.sqlite")
    first = write_jsonl(tmp_path / "first.jsonl", chat_sessions(3))
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"content": "note {i} {"w " * 200}"}}\n' for i in range(400)))
    read = import_file

    def then_full(store: Store, path: str | Path, **kwargs: Any) -> ImportReport:
        if Path(path) == big:
            [(pages,)] = store.execute("PRAGMA page_count")
            store.execute(f"PRAGMA max_page_count = {pages + 2}")
        return read(store, path, **kwargs)

    try:
        with (
            mock.patch("curator.store.importer.import_file", then_full),
            pytest.raises(ImportStopped) as stopped,
        ):
            import_files(store, [first, big])
        said = str(stopped.value)
        assert said.startswith(f"{big}: database or disk is full")
        assert said.endswith(f"the files before it stay imported: {first} (3 imported)")
        assert stopped.value.exit_code == 1
        with store.read():
            assert Episode.select().count() == 3
    finally:
        store.close()


def test_keys_no_episode_keeps_are_said_not_dropped_without_a_word(tmp_path: Path) -> None:
    """A ``created_at`` (the record's real time) and a ``tags`` were left out in silence;
    the episode then carried the import's time."""
    path = tmp_path / "log.jsonl"
    lines = [
        {"content": "deploy done", "created_at": "2020-01-01T00:00:00Z", "tags": ["prod"]},
        {"content": "rollback", "tags": []},
        {"content": "plain", "timestamp": "2024-01-01T00:00:00Z", "metadata": {"k": 1}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store = Store(tmp_path / "c.sqlite")
    try:
        report = import_file(store, path)
        assert report.imported == 3 and report.as_dict()["notes"] == report.notes
        [note] = report.notes
        assert note.startswith("keys no episode keeps were left out: tags (2 records), created_at")
        assert "time is read from 'timestamp' only" in note
        path.write_text(json.dumps(lines[2]) + "\n", encoding="utf-8")
        assert import_file(store, path).notes == []  # only keys an episode keeps
        path.write_text(json.dumps({"content": "x", "Timestamp": "2020", "": 1}) + "\n")
        [note] = import_file(store, path).notes
        assert "Timestamp (1 record)" in note and "'' (1 record)" in note
        assert "time is read from 'timestamp' only" in note
    finally:
        store.close()


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_file_in_a_wide_encoding_is_one_error_that_says_so(tmp_path: Path, codec: str) -> None:
    """With a byte order mark or without one (UTF-16 without it was an error per line,
    "Expecting property name", none saying why)."""
    path = tmp_path / "log.jsonl"
    path.write_bytes('{"content": "a"}\n{"content": "b é"}\n'.encode(codec))
    store = Store(tmp_path / "c.sqlite")
    try:
        report = import_file(store, path)
        [error] = report.errors
        assert (report.imported, error.line) == (0, 1)
        assert error.reason.startswith(f"the file is in {codec[:6].upper()}")
        assert error.reason.endswith("not UTF-8; save it as UTF-8")
    finally:
        store.close()
