"""Hostile import files, table-driven: every case through the real ``curator import``.

Each case says what the file holds, the exit code, the message, and how many episodes must
be imported; :func:`reliability.harness.run_case` checks the rest (no traceback, integrity,
row counts unchanged where nothing may be imported).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from curator.store.db import Store
from reliability.harness import Expect, run_case

GOOD = json.dumps({"content": "an ordinary episode about the garden"}).encode()
GOOD2 = json.dumps({"content": "another ordinary episode about the kitchen"}).encode()


def line(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], list[str]]
    """Builds the inputs in a folder; returns the FILE arguments."""
    code: int
    imported: int
    message: str | None = None
    stdin: bytes | None = None


def file(data: bytes, name: str = "episodes.jsonl") -> Callable[[Path], list[str]]:
    def make(folder: Path) -> list[str]:
        path = folder / name
        path.write_bytes(data)
        return [str(path)]

    return make


def directory(folder: Path) -> list[str]:
    (folder / "a-folder").mkdir()
    return [str(folder / "a-folder")]


def fifo(folder: Path) -> list[str]:
    os.mkfifo(folder / "pipe")  # nobody writes: the import must not wait for a writer
    return [str(folder / "pipe")]


def missing_between_good_files(folder: Path) -> list[str]:
    (folder / "a.jsonl").write_bytes(GOOD + b"\n")
    (folder / "c.jsonl").write_bytes(GOOD2 + b"\n")
    return [str(folder / "a.jsonl"), str(folder / "missing.jsonl"), str(folder / "c.jsonl")]


DEEP = b'{"content": "deep", "metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

CASES = [
    Case("bom", file(b"\xef\xbb\xbf" + GOOD + b"\n"), 0, 1),
    Case("invalid-utf8", file(b'{"content": "bad \xff byte"}\n'), 1, 0, r":1: invalid UTF-8"),
    Case("lone-surrogate", file(b'{"content": "x \\ud800"}\n'), 1, 0, r"lone surrogate"),
    Case("nan", file(b'{"content": "n", "metadata": {"x": NaN}}\n'), 1, 0, r"NaN is not valid"),
    Case(
        "huge-int",
        file(b'{"content": "n", "metadata": {"n": ' + b"9" * 5000 + b"}}"),
        1,
        0,
        r"5000 digits is too large",
    ),
    Case("deep-nesting", file(DEEP), 1, 0, r"nested"),
    Case("duplicate-keys", file(b'{"content": "a", "content": "b"}\n'), 1, 0, r"duplicate key"),
    Case("crlf", file(GOOD + b"\r\n" + GOOD2 + b"\r\n"), 0, 2),
    Case(
        "bare-cr",
        file(GOOD + b"\r" + GOOD2 + b"\r"),
        1,
        0,
        r"episodes\.jsonl:1: records on this line end in a bare carriage return \(\\r\).*"
        r"tr '\\r' '\\n'",
    ),
    Case(
        "bare-cr-on-one-line",
        file(GOOD + b"\n" + GOOD2 + b"\r" + GOOD + b"\n" + GOOD2.replace(b"kitchen", b"hall")),
        1,
        2,
        r"episodes\.jsonl:2: records on this line end in a bare carriage return",
    ),
    Case("bare-cr-array", file(b"[" + GOOD + b",\r" + GOOD2 + b"\r]\r", "cr.json"), 0, 2),
    Case(
        "data-after-array",
        file(b'[{"content": "a"}]\n[{"content": "b"}]\n', "two.json"),
        1,
        1,
        r"two\.json:2: unexpected data after the array",
    ),
    Case(
        "first-line-array-in-jsonl",
        file(b"[1,2]\n" + GOOD + b"\n" + GOOD2 + b"\n"),
        1,
        2,
        r":1: expected a JSON object, found an array",
    ),
    Case(
        "year-before-1000",
        file(line({"content": "old", "timestamp": "0999-06-01T00:00:00Z"}) + b"\n"),
        0,
        1,
    ),
    Case(
        "year-1-plus-offset",
        file(line({"content": "x", "timestamp": "0001-01-01T00:00:00+01:00"}) + b"\n"),
        1,
        0,
        r":1: 'timestamp' .* is outside the range",
    ),
    Case(
        "year-9999-minus-offset",
        file(line({"content": "x", "timestamp": "9999-12-31T23:59:59-01:00"}) + b"\n" + GOOD),
        1,
        1,
        r":1: 'timestamp' .* is outside the range",
    ),
    Case("directory", directory, 1, 0, r"a-folder: is a directory"),
    Case("fifo", fifo, 1, 0, r"pipe: is a named pipe"),
    Case("missing", lambda f: [str(f / "nope.jsonl")], 1, 0, r"nope\.jsonl: no such file"),
    Case("missing-between", missing_between_good_files, 1, 2, r"missing\.jsonl: no such file"),
    Case("stdin", lambda f: ["-"], 0, 2, None, GOOD + b"\n" + GOOD2 + b"\n"),
    Case("stdin-bad", lambda f: ["-"], 1, 0, r"<stdin>:1: invalid JSON", b"not json\n"),
    Case("empty-file", file(b""), 0, 0),
    Case("empty-array", file(b"[]\n", "empty.json"), 0, 0),
    Case("unreadable", lambda f: ["/proc/self/mem"], 1, 0, r"/proc/self/mem: cannot read it"),
    Case("array-cut-off", file(b'[{"content": "a"},\n', "cut.json"), 1, 1, r"not closed"),
    Case(
        "unterminated-string",
        file(b'{"content": "cut off'),
        1,
        0,
        r"Unterminated string starting at column 13",
    ),
    Case("binary", file(bytes(range(256)) * 4, "noise.bin"), 1, 0, r"noise\.bin:1: "),
    Case("array-of-numbers", file(b"[1, 2, 3]", "n.json"), 1, 0, r"expected a JSON object"),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "curator.sqlite"
    Store(path).close()
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_import_file(case: Case, db: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    files = case.make(inputs)
    result = run_case(
        ["--db", str(db), "import", "--json", *files],
        Expect(
            code=case.code,
            message=case.message,
            db=db,
            unchanged_counts=case.imported == 0,
        ),
        stdin=case.stdin,
    )
    assert json.loads(result.stdout)["imported"] == case.imported, result.stderr
    assert "at at" not in result.stderr
    conn = sqlite3.connect(db)
    try:
        stamps = [r[0] for r in conn.execute("SELECT timestamp FROM episode")]
    finally:
        conn.close()
    # every stored time is the fixed-width form (sortable as text, readable back)
    assert all(len(s) == len("2026-01-01T00:00:00.000000+00:00") for s in stamps), stamps
