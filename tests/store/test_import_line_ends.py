"""Line ends of imported files: ``\\n`` and ``\\r\\n`` end a line, a bare ``\\r`` does not.

JSON Lines are split on ``\\n`` only (so U+2028 inside a string stays a character). A file
written with old Mac line ends (a bare carriage return, as some exporters still write)
therefore reads as one long line of records run together; the reader must say so, with
the fix, instead of a JSON error about "extra data". A JSON array is whitespace-tolerant
(CR is JSON whitespace) and a CSV is split by Python's csv module, which takes all three
line ends: both must keep importing such files.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.store.db import Store
from curator.store.episode_records import ParsedEpisode
from curator.store.importer import import_file, read_episodes
from curator.store.json_source import LineError
from curator.store.models import Episode

RECORDS = [
    {"content": "the tomatoes want water every morning", "source": "garden"},
    {"content": "a Windows log line\r\nwith its CRLF kept", "source": "garden"},
    {"content": "line\u2028separator inside a string", "id": "third"},
    {"content": "the last one", "timestamp": "2026-09-01T10:00:00Z"},
]
TEXTS = [str(r["content"]) for r in RECORDS]


def lines(records: list[dict[str, object]], end: str, *, last: bool = True) -> bytes:
    """``records`` as JSON Lines with ``end`` after each (and after the last if ``last``)."""
    body = end.join(json.dumps(r, ensure_ascii=False) for r in records)
    return (body + (end if last else "")).encode("utf-8")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "line-ends.sqlite")
    yield s
    s.close()


def stored_texts() -> list[str]:
    return [e.text for e in Episode.select().order_by(Episode.id)]


def is_bare_cr_reason(reason: str) -> bool:
    """The reason names the line end and the fix."""
    return "bare carriage return (\\r)" in reason and "tr '\\r' '\\n'" in reason


# -- JSON Lines ---------------------------------------------------------------------------


@pytest.mark.parametrize("last", [True, False], ids=["ends-in-cr", "no-final-cr"])
def test_bare_cr_jsonl_is_one_clear_error_and_imports_nothing(
    store: Store, tmp_path: Path, last: bool
) -> None:
    path = tmp_path / "old-mac.jsonl"
    path.write_bytes(lines(RECORDS, "\r", last=last))
    report = import_file(store, path)
    assert (report.imported, report.duplicates, report.lines) == (0, 0, 1)
    assert len(report.errors) == 1
    error = report.errors[0]
    assert error.line == 1
    assert is_bare_cr_reason(error.reason), error.reason
    assert "Extra data" not in error.reason
    assert str(error).startswith(f"{path}:1: ")
    assert stored_texts() == []


@pytest.mark.parametrize("end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_lf_and_crlf_jsonl_import_every_record(store: Store, tmp_path: Path, end: str) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(lines(RECORDS, end))
    report = import_file(store, path)
    assert (report.imported, report.errors) == (len(RECORDS), [])
    assert stored_texts() == TEXTS


def test_only_the_line_holding_bare_crs_is_rejected_numbered_as_read(
    store: Store, tmp_path: Path
) -> None:
    """Line 2 holds the second and third records, run together by a bare CR; lines 1 and
    3 (one CRLF, one LF) are imported. The line numbers are the importer's (``\\n``)."""
    first, second, third, fourth = (json.dumps(r, ensure_ascii=False) for r in RECORDS)
    data = f"{first}\r\n{second}\r{third}\n{fourth}\n".encode()
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(data)
    report = import_file(store, path)
    assert report.imported == 2
    assert [(e.line, is_bare_cr_reason(e.reason)) for e in report.errors] == [(2, True)]
    assert str(report.errors[0]).startswith(f"{path}:2: ")
    assert stored_texts() == [TEXTS[0], TEXTS[3]]


def test_cr_between_tokens_of_one_record_is_whitespace(store: Store, tmp_path: Path) -> None:
    """A CR inside one record (JSON whitespace) ends nothing and breaks nothing."""
    path = tmp_path / "spaced.jsonl"
    path.write_bytes(b'{"content":\r"spaced out",\r"source": "x"}\n\r{"content": "led by CR"}\n')
    report = import_file(store, path)
    assert (report.imported, report.errors) == (2, [])


def test_raw_cr_inside_a_string_keeps_its_json_error(store: Store, tmp_path: Path) -> None:
    """A raw CR inside a string is invalid JSON whatever the line ends (turning it into a
    newline fixes nothing): the JSON error stands, not the line-end hint."""
    path = tmp_path / "raw-cr.jsonl"
    path.write_bytes(b'{"content": "two\rhalves"}\n{"content": "fine"}\n')
    report = import_file(store, path)
    assert report.imported == 1
    assert [e.line for e in report.errors] == [1]
    assert "invalid JSON" in report.errors[0].reason
    assert not is_bare_cr_reason(report.errors[0].reason)


def test_bare_cr_between_records_after_a_string_holding_cr(store: Store, tmp_path: Path) -> None:
    """A CR inside a string (raw, invalid) does not hide the bare CR that ends its record."""
    path = tmp_path / "both.jsonl"
    path.write_bytes(b'{"content": "a\rb"}\r{"content": "c"}\r')
    report = import_file(store, path)
    assert report.imported == 0
    assert [(e.line, is_bare_cr_reason(e.reason)) for e in report.errors] == [(1, True)]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'\r{"content": "c", "content": "d"}', "duplicate key 'content'"),  # LF-CR line ends
        (b'{"content": "a",\r"x": NaN}', "NaN"),
        (b'{"content": "a"\r"source": "b"}', "invalid JSON"),  # a comma missing
        (b"{'content': 'single quotes'}\r", "invalid JSON"),
    ],
)
def test_a_cr_inside_one_bad_record_keeps_the_record_s_own_error(
    store: Store, tmp_path: Path, line: bytes, reason: str
) -> None:
    """A CR that parts no two records is whitespace, and the record's own error stands:
    the line-end hint there advised a conversion after which the line still failed."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(line + b"\n")
    (error,) = import_file(store, path).errors
    assert reason in error.reason and not is_bare_cr_reason(error.reason), error.reason


def test_other_bad_lines_keep_their_reason(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"content": "ok"}\r\n{"content": 5}\r\nnot json\r\n')
    report = import_file(store, path)
    assert report.imported == 1
    assert [e.line for e in report.errors] == [2, 3]
    assert not any(is_bare_cr_reason(e.reason) for e in report.errors)


def test_bare_cr_on_standard_input(store: Store) -> None:
    report = import_file(store, "-", stdin=io.BytesIO(lines(RECORDS, "\r")))
    assert report.imported == 0
    assert [(str(e).split(": ")[0], is_bare_cr_reason(e.reason)) for e in report.errors] == [
        ("<stdin>:1", True)
    ]


def test_bare_cr_jsonl_with_a_bom(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + lines(RECORDS, "\r"))
    report = import_file(store, path)
    assert [(e.line, is_bare_cr_reason(e.reason)) for e in report.errors] == [(1, True)]


# -- JSON arrays --------------------------------------------------------------------------


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_json_array_imports_with_any_line_end(store: Store, tmp_path: Path, end: str) -> None:
    path = tmp_path / "array.json"
    text = json.dumps(RECORDS, indent=2, ensure_ascii=False).replace("\n", end)
    path.write_bytes(text.encode("utf-8"))
    report = import_file(store, path)
    assert (report.imported, report.errors) == (len(RECORDS), [])
    assert stored_texts() == TEXTS


# -- through the command ------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_curator_import_says_bare_cr_with_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``curator import`` (format found by content) reaches the JSON Lines reader."""
    path = tmp_path / "export.jsonl"
    path.write_bytes(lines(RECORDS, "\r"))
    db = tmp_path / "cli.sqlite"
    code, out, err = run(capsys, "--db", str(db), "--create", "import", str(path))
    assert code == 1
    assert f"{path}:1: " in err
    assert is_bare_cr_reason(err), err
    assert "Extra data" not in err
    assert f"{path}: 0 imported, 0 already present, 1 rejected" in out + err


# -- CSV ----------------------------------------------------------------------------------

CSV_ROWS = [
    "sent_at,channel,body",
    "2024-05-01T10:00:00Z,ops,first row",
    '2024-05-01T10:01:00Z,ops,"a, quoted cell"',
    "2024-05-01T10:02:00Z,dev,third row",
]
CSV_MAP = "content=body,timestamp=sent_at,source=channel"


@pytest.mark.parametrize("fmt", [None, "csv"], ids=["found-by-content", "format-csv"])
@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_csv_imports_with_any_line_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], end: str, fmt: str | None
) -> None:
    path = tmp_path / "log.csv"
    path.write_bytes(end.join([*CSV_ROWS, ""]).encode())
    db = tmp_path / "csv.sqlite"
    chosen = ["--format", fmt] if fmt else []
    argv = ["--db", str(db), "--create", "--json", "import", str(path), "--map", CSV_MAP]
    code, out, err = run(capsys, *argv, *chosen)
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert (doc["imported"], doc["files"][0]["format"]) == (3, "csv")
    with sqlite3.connect(db) as conn:
        got = [r[0] for r in conn.execute("SELECT text FROM episode ORDER BY id")]
    assert got == ["user: first row", "user: a, quoted cell", "user: third row"]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_csv_bad_row_is_numbered_the_same_with_any_line_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], end: str
) -> None:
    rows = [*CSV_ROWS[:2], "2024-05-01T10:01:00Z,ops", *CSV_ROWS[3:], ""]
    path = tmp_path / "log.csv"
    path.write_bytes(end.join(rows).encode())
    db = tmp_path / "csv.sqlite"
    code, _, err = run(capsys, "--db", str(db), "--create", "import", str(path), "--map", CSV_MAP)
    assert code == 1
    assert f"{path}:3: has 2 cells, the header has 3" in err


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_quoted_header_cell_holding_a_line_end_is_still_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], end: str
) -> None:
    """The header found by content is the reader's first record: cut at the first CR,
    a quoted header cell holding one made the file no CSV, read as JSON Lines."""
    path = tmp_path / "log.csv"
    path.write_bytes(end.join(['"note\rtitle",content,source', "hello there,x,a", ""]).encode())
    db = tmp_path / "csv.sqlite"
    code, out, err = run(capsys, "--db", str(db), "--create", "--json", "import", str(path))
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert (doc["imported"], doc["files"][0]["format"]) == (1, "csv")


# -- properties ---------------------------------------------------------------------------

_texts = st.lists(
    st.one_of(
        st.characters(blacklist_categories=("Cc", "Cs")),
        st.sampled_from(["\n", "\r\n", "\t", "\u2028", "\u2029", '"', "\\", "{", "}"]),
    ),
    min_size=1,
    max_size=12,
).map("".join)

_records = st.lists(
    st.builds(
        lambda i, text, source, ascii_only: (
            {"content": f"episode {i}: {text}", "source": source},
            ascii_only,
        ),
        st.integers(0, 10**6),
        _texts,
        st.sampled_from(["", "dm", "agent log"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=8,
)


def _jsonl(records: list[tuple[dict[str, object], bool]], end: str, last: bool) -> bytes:
    body = end.join(json.dumps(r, ensure_ascii=a) for r, a in records)
    return (body + (end if last else "")).encode("utf-8")


def _read(data: bytes) -> list[ParsedEpisode | LineError]:
    return list(read_episodes(io.BytesIO(data), "f.jsonl"))


def _identities(items: list[ParsedEpisode | LineError]) -> list[tuple[int, str]]:
    assert not [i for i in items if isinstance(i, LineError)], items
    return [(i.line, i.content_hash) for i in items if isinstance(i, ParsedEpisode)]


@settings(deadline=None, max_examples=60)
@given(records=_records, last=st.booleans())
@example(records=[({"content": "a"}, True), ({"content": "b"}, True)], last=True)
@example(records=[({"content": "x\r\ny"}, False)] * 2, last=False)
def test_any_valid_records_read_the_same_by_lf_or_crlf_and_bare_cr_is_one_error(
    records: list[tuple[dict[str, object], bool]], last: bool
) -> None:
    by_lf = _identities(_read(_jsonl(records, "\n", last)))
    assert [n for n, _ in by_lf] == list(range(1, len(records) + 1))
    assert _identities(_read(_jsonl(records, "\r\n", last))) == by_lf

    bare = _read(_jsonl(records, "\r", last))
    if len(records) == 1:  # one record and its (stripped) line end: nothing runs together
        assert _identities(bare) == by_lf
    else:
        assert len(bare) == 1 and isinstance(bare[0], LineError), bare
        assert bare[0].line == 1 and is_bare_cr_reason(bare[0].reason), bare[0]

    # As one JSON array, a CR is whitespace: the same episodes whatever the line ends.
    hashes = [h for _, h in by_lf]
    for end in ("\n", "\r\n", "\r"):
        body = ("," + end).join(json.dumps(r, ensure_ascii=a) for r, a in records)
        array = f"[{end}{body}{end}]{end if last else ''}".encode()
        assert [h for _, h in _identities(_read(array))] == hashes
