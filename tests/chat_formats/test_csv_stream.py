"""A CSV file is read as a stream: its UTF-8 checked a block at a time, its rows parsed
from the file, never its whole text held beside them."""

from __future__ import annotations

import csv
import io
import random
import tracemalloc
from collections import Counter
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.chat_formats import csv_map
from curator.chat_formats.common import BadExport, Conversation

BAD_BYTES = [b"\x80", b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80"]
"""A lone continuation byte, a byte UTF-8 never uses, an overlong form, an encoded
surrogate, a character cut short, a code point past U+10FFFF."""


def _rows(source: bytes | Path) -> list[list[str]]:
    found = list(csv_map.conversations(source, "f", {}, Counter()))
    return [[m.content for m in c.messages] for c in found if isinstance(c, Conversation)]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cells=st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\r\x00")), max_size=8),
    bom=st.booleans(),
    bad=st.none() | st.sampled_from(BAD_BYTES),
    where=st.integers(min_value=-1),  # -1: at the end
    block=st.integers(min_value=1, max_value=9),
)
@example(cells=["é"], bom=False, bad=None, where=0, block=1)  # a character across blocks
@example(cells=["a"], bom=True, bad=b"\xe2\x82", where=-1, block=4)  # cut at the end
def test_the_first_bad_byte_is_named_wherever_the_blocks_end(
    cells: list[str], bom: bool, bad: bytes | None, where: int, block: int, tmp_path: Path
) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["content", "conversation"])
    for cell in cells:
        writer.writerow([cell or "x", "c"])
    data = (b"\xef\xbb\xbf" if bom else b"") + text.getvalue().encode("utf-8")
    if bad is not None:
        at = len(data) if where < 0 else where % (len(data) + 1)
        data = data[:at] + bad + data[at:]
    path = tmp_path / "chat.csv"
    path.write_bytes(data)
    try:
        data.decode("utf-8")
        expected = None
    except UnicodeDecodeError as exc:
        expected = f"invalid UTF-8 at byte {exc.start + 1}"
    with mock.patch.object(csv_map, "_CHECK_BYTES", block):
        if expected is None:
            assert _rows(path) == _rows(data)
            return
        with pytest.raises(BadExport) as raised:
            _rows(path)
    assert str(raised.value) == expected


def test_the_file_s_text_is_never_held_beside_its_rows(tmp_path: Path) -> None:
    """Reading a 4.6 MB file: everything allocated on the way, beyond the rows kept, is
    under a tenth of the file (the whole text held as a string and in a ``StringIO``
    was five times the file, the bytes read first another one)."""
    rng = random.Random(1)
    words = ["the", "agent", "replied", "with", "a", "careful", "note", "about", "deploys"]
    path = tmp_path / "big.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["content", "conversation"])
        for i in range(10_000):
            writer.writerow([" ".join(rng.choices(words, k=80)), f"c{i // 20}"])
    size = path.stat().st_size
    tracemalloc.start()
    try:
        found = list(csv_map.conversations(path, "f", {}, Counter()))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(c.messages) for c in found if isinstance(c, Conversation)) == 10_000
    assert peak - kept < size / 10


@pytest.mark.parametrize("change", ["append", "truncate", "rewrite, same size"])
def test_a_file_written_to_between_its_two_passes_imports_nothing(
    tmp_path: Path, change: str
) -> None:
    """Fault injection: another program writes to the file in place after its UTF-8 was
    checked (the parse then read a splice of two versions, or a part, and said nothing)."""
    path = tmp_path / "chat.csv"
    rows = "".join(f"message {i},c{i % 3}\n" for i in range(200))
    path.write_text("content,conversation\n" + rows, encoding="utf-8")
    check = csv_map._check_utf8

    def then_written_to(handle: io.BufferedReader) -> None:
        check(handle)
        with path.open("r+b") as other:
            if change == "append":
                other.seek(0, io.SEEK_END)
                other.write(b"late,c1\n")
            elif change == "truncate":
                other.truncate(500)
            else:
                data = other.read()
                other.seek(0)
                other.write(data.replace(b"message", b"MESSAGE"))

    with mock.patch.object(csv_map, "_check_utf8", then_written_to):
        found = csv_map.conversations(path, "f", {}, Counter())
        with pytest.raises(BadExport, match="written to while it was read"):
            list(found)


def test_a_file_replaced_by_a_rename_is_read_as_it_was_opened(tmp_path: Path) -> None:
    path = tmp_path / "chat.csv"
    path.write_text("content,conversation\nfirst,c\nsecond,c\n", encoding="utf-8")
    check = csv_map._check_utf8

    def then_replaced(handle: io.BufferedReader) -> None:
        check(handle)
        (tmp_path / "new.csv").write_text("content,conversation\nother,c\n", encoding="utf-8")
        (tmp_path / "new.csv").replace(path)

    with mock.patch.object(csv_map, "_check_utf8", then_replaced):
        assert _rows(path) == [["first", "second"]]


def test_a_quoted_cell_that_never_closes_is_its_line_s_error_not_a_message(
    tmp_path: Path,
) -> None:
    """A file cut inside a quoted cell imported the cut text; one missing a closing quote
    imported the rest of the file as one message."""
    cut = b'conversation,content\nc,first\nc,"second, cut sh'
    missing = b'conversation,content\nc,first\nc,"second\nc,third\nc,fourth\n'
    for data in (cut, missing):
        found = list(csv_map.conversations(data, "f", {}, Counter()))
        (error,) = [e for e in found if not isinstance(e, Conversation)]
        assert error.line == 3 and "never closes" in str(error.reason)
        assert _rows(data) == [["first"]]
    with pytest.raises(BadExport, match="header row never closes"):
        _rows(b'content,"conversation\nfirst,c\n')


@settings(max_examples=300)
@given(
    cells=st.lists(
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1),
        min_size=1,
        max_size=6,
    ),
    cut=st.integers(min_value=0),
)
def test_a_file_cut_anywhere_imports_whole_cells_only(cells: list[str], cut: int) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["conversation", "content"])  # a cut in the last cell leaves every cell
    for cell in cells:
        writer.writerow(["c", cell])
    data = text.getvalue()
    shortened = data[: cut % (len(data) + 1)].encode("utf-8")
    try:
        imported = [m for row in _rows(shortened) for m in row]
    except BadExport:  # the header cut: nothing read
        return
    assert all(m in cells for m in imported)


def test_two_reads_side_by_side_keep_each_other_s_cell_limit() -> None:
    """A read that set the csv module's (process-wide) cell limit and put it back at its
    end took it from under a read going on beside it: that one's next long cell (over
    131,072 characters) stopped its file."""
    bad_first = b"content,conversation\nx\n"  # a row's error: the read pauses there
    first = csv_map.conversations(bad_first + b"short,c\n", "a", {}, Counter())
    second = csv_map.conversations(bad_first + b"y" * 200_000 + b",c\n", "b", {}, Counter())
    assert not isinstance(next(first), Conversation)
    assert not isinstance(next(second), Conversation)
    assert [c.messages[0].content for c in first] == ["short"]  # the first read ends
    (rest,) = list(second)
    assert isinstance(rest, Conversation) and len(rest.messages[0].content) == 200_000
