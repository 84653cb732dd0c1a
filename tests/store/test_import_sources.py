"""Import: the file's shape comes from what it holds, timestamps round-trip, and a file that
cannot be read is one reported error while the other files are still imported."""

from __future__ import annotations

import io
import json
import os
import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.episode_queries import EpisodeFilter, EpisodeSort, date_range, query_ids
from curator.store.importer import import_file, import_files
from curator.store.migrations import MIGRATIONS
from curator.store.models import Episode, format_local, format_utc


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "import.sqlite")
    yield s
    s.close()


def texts() -> list[str]:
    return sorted(e.text for e in Episode.select())


# -- the file's shape ----------------------------------------------------------------------


def test_data_after_an_array_is_reported_not_dropped(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "two-arrays.json"
    path.write_text('[{"content": "a"}]\n[{"content": "b"}]\n', "utf-8")
    report = import_file(store, path)
    assert report.imported == 1 and texts() == ["a"]
    assert [str(e) for e in report.errors] == [
        f"{path}:2: unexpected data after the array; the rest of the file was not read"
    ]


def test_trailing_garbage_after_a_multiline_array_is_reported(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "garbage.json"
    path.write_text('[\n  {"content": "a"},\n  {"content": "b"}\n]\nnot json\n', "utf-8")
    report = import_file(store, path)
    assert report.imported == 2
    assert [(e.line, e.reason.split(";")[0]) for e in report.errors] == [
        (5, "unexpected data after the array")
    ]


def test_trailing_whitespace_after_an_array_is_fine(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text('[{"content": "a"}]\n\n  \r\n', "utf-8")
    report = import_file(store, path)
    assert (report.imported, report.errors) == (1, [])


def test_jsonl_whose_first_line_is_an_array_keeps_every_later_line(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "first-array.jsonl"
    path.write_text('[1,2]\n{"content": "x1"}\n{"content": "x2"}\n', "utf-8")
    report = import_file(store, path)
    assert texts() == ["x1", "x2"]
    assert [(e.line, e.reason) for e in report.errors] == [
        (1, "expected a JSON object, found an array")
    ]


def test_an_array_with_a_bad_byte_keeps_its_other_elements(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bad-byte.json"
    path.write_bytes(b'[\n{"content": "good"},\n{"content": "bad \xff"},\n{"content": "also"}\n]')
    report = import_file(store, path)
    assert texts() == ["also", "good"]
    assert [(e.line, e.reason) for e in report.errors] == [
        (3, "invalid UTF-8 at byte 18 of the line")
    ]


def test_unterminated_string_message_has_no_doubled_word(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text('{"content": "cut off', "utf-8")
    report = import_file(store, path)
    assert report.errors[0].reason == "invalid JSON: Unterminated string starting at column 13"


# -- timestamps ----------------------------------------------------------------------------


def test_timestamps_before_1000_are_stored_zero_padded_and_sort(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "old.jsonl"
    lines = [
        {"content": "ancient", "timestamp": "0999-06-01T00:00:00Z"},
        {"content": "first", "timestamp": "0001-01-01T00:00:00Z"},
        {"content": "modern", "timestamp": "2026-06-01T00:00:00Z"},
        {"content": "last", "timestamp": "9999-12-31T23:59:59.999999Z"},
    ]
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), "utf-8")
    assert import_file(store, path).imported == 4
    stored = [r[0] for r in store.execute("SELECT timestamp FROM episode ORDER BY timestamp")]
    assert stored == [
        "0001-01-01T00:00:00.000000+00:00",
        "0999-06-01T00:00:00.000000+00:00",
        "2026-06-01T00:00:00.000000+00:00",
        "9999-12-31T23:59:59.999999+00:00",
    ]
    # every stored value reads back as the instant that was imported
    read = {e.text: e.timestamp for e in Episode.select()}
    assert read["ancient"] == datetime(999, 6, 1, tzinfo=UTC)
    assert read["first"] == datetime(1, 1, 1, tzinfo=UTC)
    assert import_file(store, path).imported == 0  # re-import: nothing new


def test_timestamps_that_overflow_in_utc_are_rejected_by_line(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "overflow.jsonl"
    lines = [
        {"content": "too early", "timestamp": "0001-01-01T00:00:00+01:00"},
        {"content": "fine", "timestamp": "2026-01-01T00:00:00+01:00"},
        {"content": "too late", "timestamp": "9999-12-31T23:59:59-01:00"},
    ]
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), "utf-8")
    report = import_file(store, path)
    assert texts() == ["fine"]
    assert [e.line for e in report.errors] == [1, 3]
    assert all("outside the range 0001-01-01 to 9999-12-31" in e.reason for e in report.errors)


def test_the_date_filter_reaches_the_last_representable_day(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "ends.jsonl"
    lines = [
        {"content": "first", "timestamp": "0001-01-01T00:00:00Z"},
        {"content": "last", "timestamp": "9999-12-31T23:59:59.999999Z"},
    ]
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), "utf-8")
    assert import_file(store, path).imported == 2
    assert date_range(store) == (date.min, date.max)
    whole = EpisodeFilter(date_from=date.min, date_to=date.max)
    assert len(query_ids(store, whole, EpisodeSort())) == 2
    last_day = EpisodeFilter(date_from=date.max, date_to=date.max)
    assert len(query_ids(store, last_day, EpisodeSort())) == 1


def test_format_utc_is_fixed_width_for_every_year() -> None:
    for year in (1, 9, 99, 999, 1000, 2026, 9999):
        moment = datetime(year, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
        text = format_utc(moment)
        assert len(text) == len("2026-01-02T03:04:05.000006+00:00"), text
        assert datetime.fromisoformat(text) == moment


def test_local_display_does_not_overflow_at_the_ends_of_the_range() -> None:
    import time

    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX only")
    original = os.environ.get("TZ")
    # POSIX zone strings need no zone database: five hours west, nine hours east of UTC.
    cases = (
        ("EST+5", datetime(1, 1, 1, tzinfo=UTC)),
        ("JST-9", datetime(9999, 12, 31, 23, tzinfo=UTC)),
    )
    try:
        for zone, moment in cases:
            os.environ["TZ"] = zone
            time.tzset()
            with pytest.raises(OverflowError):
                moment.astimezone()  # what the panes did before
            assert format_local(moment).startswith(("0001-01-01", "9999-12-31"))
    finally:
        if original is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = original
        time.tzset()


def test_migration_pads_years_stored_without_zero_padding(tmp_path: Path) -> None:
    """A database written before the fix holds "999-06-01…"; opening it repairs the text."""
    path = tmp_path / "poisoned.sqlite"
    conn = sqlite3.connect(path)
    # the schema just before the repair migration (found by its SQL: later branches append
    # migrations after it), then the repair and everything after it run on open
    repair = next(
        i
        for i, migration in enumerate(MIGRATIONS)
        if any('instr("timestamp"' in s for s in migration)
    )
    for migration in MIGRATIONS[:repair]:
        for statement in migration:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {repair}")
    for i, stamp in enumerate(
        (
            "999-06-01T00:00:00.000000+00:00",
            "9-01-01T00:00:00.000000+00:00",
            "2026-01-01T00:00:00.000000+00:00",
        )
    ):
        conn.execute(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,"
            " classify_truncated) VALUES (?, ?, ?, '', '{}', ?, 0)",
            (f"h{i}", f"e{i}", stamp, "2026-01-01T00:00:00.000000+00:00"),
        )
    conn.commit()
    conn.close()
    store = Store(path)
    try:
        rows = [r[0] for r in store.execute("SELECT timestamp FROM episode ORDER BY timestamp")]
        assert rows == [
            "0009-01-01T00:00:00.000000+00:00",
            "0999-06-01T00:00:00.000000+00:00",
            "2026-01-01T00:00:00.000000+00:00",
        ]
        assert all(e.timestamp.year in (9, 999, 2026) for e in Episode.select())
    finally:
        store.close()


# -- sources that cannot be read -----------------------------------------------------------


def good_file(path: Path, text: str) -> Path:
    path.write_text(json.dumps({"content": text}) + "\n", "utf-8")
    return path


def test_a_directory_fifo_and_missing_file_are_reported_and_the_rest_imported(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # nobody writes to it: opening it must not wait
    first = good_file(tmp_path / "a.jsonl", "from a")
    last = good_file(tmp_path / "b.jsonl", "from b")
    reports = import_files(store, [first, folder, fifo, tmp_path / "missing.jsonl", last])
    assert texts() == ["from a", "from b"]
    errors = [str(e) for r in reports for e in r.errors]
    assert errors[0] == f"{folder}: is a directory"
    assert errors[1].startswith(f"{fifo}: is a named pipe")
    assert errors[2] == f"{tmp_path / 'missing.jsonl'}: no such file"
    assert len(errors) == 3


def test_an_unreadable_file_is_reported(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: ``os.open`` raising EACCES, which root (running tests) never sees."""
    locked = good_file(tmp_path / "locked.jsonl", "secret")
    real_open = os.open

    def fault_injection_open(path: object, flags: int, *args: object) -> int:
        if Path(str(path)) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", fault_injection_open)
    other = good_file(tmp_path / "other.jsonl", "public")
    reports = import_files(store, [locked, other])
    assert texts() == ["public"]
    assert str(reports[0].errors[0]) == f"{locked}: permission denied"


def test_a_read_error_half_way_imports_nothing_of_that_file(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the read fails after the first lines (EIO from a dying disk)."""
    path = tmp_path / "dying.jsonl"
    path.write_text("".join(json.dumps({"content": f"line {i}"}) + "\n" for i in range(500)))
    import curator.store.importer as importer

    class FaultInjectionFile(io.BytesIO):
        lines = 0

        def __next__(self) -> bytes:
            self.lines += 1
            if self.lines > 100:
                raise OSError(5, "Input/output error")
            return super().__next__()

    def fault_injection_open(p: str | Path) -> io.BytesIO:
        return FaultInjectionFile(Path(p).read_bytes())

    monkeypatch.setattr(importer, "_open_regular", fault_injection_open)
    report = import_file(store, path)
    assert report.imported == 0 and Episode.select().count() == 0
    assert str(report.errors[0]) == (
        f"{path}: cannot read it (Input/output error); nothing of it was imported"
    )


def test_dash_reads_standard_input(store: Store, tmp_path: Path) -> None:
    data = b'{"content": "piped in"}\n{"content": 5}\n'
    reports = import_files(
        store, ["-", good_file(tmp_path / "f.jsonl", "file")], stdin=io.BytesIO(data)
    )
    assert texts() == ["file", "piped in"]
    assert reports[0].file == "<stdin>"
    assert [str(e) for e in reports[0].errors] == [
        "<stdin>:2: 'content' must be a string, not a number"
    ]
