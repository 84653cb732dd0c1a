"""Skipping a GGUF header's string arrays in blocks ends exactly where skipping them one by
one does, for any lengths and any block size: the same offset after the array, the same
error for a truncated or corrupt one (``_Reader.skip_strings`` against
:func:`_skip_string`, the way the reader skipped them before)."""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.llm import model_file
from curator.llm.model_file import _MAX_STRING, ModelFileError, _Reader

PATH = Path("model.gguf")


def _skip_string(reader: _Reader) -> None:
    """The reference: one string skipped with a read of its length and a seek."""
    n = reader.unpack("<Q")
    if n > _MAX_STRING:
        raise ModelFileError(f"{reader.path}: corrupt GGUF header (string of {n:,} bytes)")
    reader.handle.seek(n, os.SEEK_CUR)


def _strings(lengths: list[int]) -> bytes:
    return b"".join(struct.pack("<Q", n) + bytes([97 + n % 26]) * n for n in lengths)


def _one_by_one(data: bytes, count: int) -> tuple[int, str]:
    handle = io.BytesIO(data)
    reader = _Reader(handle, PATH)  # type: ignore[arg-type]
    try:
        for _ in range(count):
            _skip_string(reader)
        reader.read(4)  # what follows the array (a short file fails here, as below)
    except ModelFileError as exc:
        return -1, str(exc)
    return handle.tell(), ""


def _in_blocks(data: bytes, count: int) -> tuple[int, str]:
    handle = io.BytesIO(data)
    reader = _Reader(handle, PATH)  # type: ignore[arg-type]
    try:
        reader.skip_strings(count)
        reader.read(4)
    except ModelFileError as exc:
        return -1, str(exc)
    return handle.tell(), ""


@settings(max_examples=300, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 70), max_size=40),
    block=st.integers(1, 64),
    cut=st.one_of(st.none(), st.integers(0, 3000)),
    tail=st.binary(max_size=6),
)
def test_blocks_end_where_one_by_one_ends(
    lengths: list[int], block: int, cut: int | None, tail: bytes
) -> None:
    data = _strings(lengths) + tail
    if cut is not None:
        data = data[:cut]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model_file, "_SKIP_BLOCK", block)
        assert _in_blocks(data, len(lengths)) == _one_by_one(data, len(lengths))


@pytest.mark.parametrize("block", [8, 64, 1 << 20])
def test_a_corrupt_length_is_refused_as_one_by_one_refuses_it(block: int) -> None:
    data = _strings([3, 5]) + struct.pack("<Q", 1 << 40) + b"x" * 64
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model_file, "_SKIP_BLOCK", block)
        got = _in_blocks(data, 3)
    assert got == _one_by_one(data, 3)
    assert "corrupt GGUF header (string of" in got[1]


def test_the_demo_models_header_reads_the_same_either_way(
    demo_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = model_file.read_gguf_info(demo_model)

    def one_by_one(self: _Reader, count: int) -> None:
        for _ in range(count):
            _skip_string(self)

    monkeypatch.setattr(_Reader, "skip_strings", one_by_one)
    assert model_file.read_gguf_info(demo_model) == blocks


def test_a_fifo_swapped_in_after_the_check_is_refused_not_waited_on(tmp_path: Path) -> None:
    """The header reader opens the file it checked without ever waiting on a FIFO (opening
    one for reading waits for a writer for ever, and the Settings pane and the window's
    close would wait on that read). The swap between the check and the open is made by a
    fault injection: the check of the path replaces the file by a FIFO once it has passed."""
    import os
    import threading

    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    real_is_file = Path.is_file

    def swapped_after_check(self: Path) -> bool:
        answer = real_is_file(self)
        if self == path and answer:
            path.unlink()
            os.mkfifo(path)
        return answer

    outcome: list[BaseException | object] = []

    def read() -> None:
        try:
            outcome.append(model_file.read_gguf_info(path))
        except BaseException as exc:
            outcome.append(exc)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "is_file", swapped_after_check)
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(10)
    if reader.is_alive():  # release the blocked open so the thread ends
        with open(path, "wb"):
            pass
        reader.join(10)
        pytest.fail("the header reader waited on a FIFO")
    assert len(outcome) == 1 and isinstance(outcome[0], ModelFileError)
    assert "is not a file" in str(outcome[0])
