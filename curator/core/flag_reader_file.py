"""The learned reader's weights on disk: the shipped file, and the layout kept in the cache.

The shipped file (``resources/flag_reader.bin``, written by :func:`dump_reader` when the
reader is trained) holds only the nonzero weights, half precision, zlib-compressed: a
small download, slow to unpack. Every check of its format is made on the bytes, and a
head's weights are unpacked only when a text first needs that head (:class:`_PackedHeads`).
A process then keeps each head as a dense table of 32-bit floats in the user cache
(:func:`kept_weights`, :mod:`curator.core.derived_cache`), which later processes read in
milliseconds, to the last bit the same weights.

What the weights mean, and how a text is scored by them, is
:mod:`curator.core.flag_learned`'s.
"""

from __future__ import annotations

import re
import struct
import sys
import threading
import zlib
from array import array
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate, repeat
from math import isfinite
from pathlib import Path
from typing import NamedTuple

from curator.core import derived_cache

__all__ = [
    "BUCKETS",
    "HEADS",
    "MAGIC",
    "SparseTable",
    "Weights",
    "dump_reader",
    "kept_weights",
    "read_weights",
]

BUCKETS = 1 << 18
"""Hash buckets: enough that the training texts' n-grams rarely share one."""

HEADS = ("injection", "instruction", "link", "secret", "personal", "hidden", "identity")
"""The linear heads, in file order: whether, then which kind."""

MAGIC = b"CRL1"


class Weights(NamedTuple):
    """A reader's weights: a table of :data:`BUCKETS` floats per head, its biases, the
    threshold it flags at and the regularisation it was trained with."""

    weights: Mapping[str, Sequence[float]]
    bias: dict[str, float]
    threshold: float
    c: float


def dump_reader(
    path: Path,
    heads: dict[str, dict[int, float]],
    bias: dict[str, float],
    threshold: float,
    c: float = 1.0,
) -> None:
    """Write the weights: magic, threshold, C, then per head its bias, count, delta-coded
    indices and half-precision weights; zlib over everything after the magic."""
    body = bytearray(struct.pack("<ffI", threshold, c, len(HEADS)))
    for head in HEADS:
        items = sorted(heads[head].items())
        body += struct.pack("<fI", bias[head], len(items))
        previous = 0
        deltas = []
        for index, _ in items:
            deltas.append(index - previous)
            previous = index
        body += struct.pack(f"<{len(items)}I", *deltas)
        body += struct.pack(f"<{len(items)}e", *(w for _, w in items))
    # zlib's default level: 2 % larger than its best (9) and a tenth of its time (0.2 s
    # against 2.3 s for the shipped weights)
    path.write_bytes(MAGIC + zlib.compress(bytes(body), 6))


def read_weights(path: Path) -> Weights:
    """Read the weights written by :func:`dump_reader`.

    Anything wrong in the file (truncated, another head count, an index past the last
    bucket, a threshold or weight that is not a finite number, trailing bytes) is refused
    whole with a one-line ``ValueError``: a reader loaded from it would raise on every
    text, or flag every text (``p < nan`` is false)."""
    return _read_bytes(path.read_bytes(), path.name)


def _read_bytes(raw: bytes, name: str) -> Weights:
    if raw[:4] != MAGIC:
        raise ValueError(f"{name}: not a learned-reader weight file")
    try:
        return _parse(zlib.decompress(raw[4:]))
    except (zlib.error, struct.error, ValueError) as exc:
        raise ValueError(f"{name}: damaged learned-reader weight file: {exc}") from None


# A half-precision number is infinite or not a number when its five exponent bits are all
# set: in the high byte (little-endian, the odd bytes) that is 0x7C-0x7F, or 0xFC-0xFF.
_NOT_FINITE_HALF = re.compile(rb"[\x7c-\x7f\xfc-\xff]")


def _parse(body: bytes) -> Weights:
    """Check the whole body, then keep each head's bytes to be unpacked on its first use.

    Every check of the format is made here, on the bytes (C-speed scans, no per-weight
    Python), so a damaged file is still refused whole; unpacking a head's weights into its
    lookup table waits until a text needs the head (most texts need only ``injection``)."""
    threshold, c, count = struct.unpack_from("<ffI", body, 0)
    if count != len(HEADS):
        raise ValueError(f"{count} heads, expected {len(HEADS)}")
    if not 0.0 < threshold <= 1.0:  # also false for nan
        raise ValueError(f"threshold {threshold} is not in (0, 1]")
    offset = 12
    packed: dict[str, tuple[bytes, bytes]] = {}
    bias: dict[str, float] = {}
    for head in HEADS:
        b, n = struct.unpack_from("<fI", body, offset)
        offset += 8
        if offset + 6 * n > len(body):
            raise ValueError(f"head {head}: {n} weights, the file ends before them")
        deltas = body[offset : offset + 4 * n]
        offset += 4 * n
        values = body[offset : offset + 2 * n]
        offset += 2 * n
        if not isfinite(b) or _odd_not_finite(values):
            raise ValueError(f"head {head}: a weight that is not a finite number")
        last = sum(_uint32s(deltas))  # the deltas are unsigned: the last index is the largest
        if n and last >= BUCKETS:
            raise ValueError(f"head {head}: bucket {last} past the last")
        packed[head] = (deltas, values)
        bias[head] = b
    if offset != len(body):
        raise ValueError(f"{len(body) - offset:,} bytes after the last head")
    return Weights(_PackedHeads(packed), bias, threshold, c)


def _odd_not_finite(values: bytes) -> bool:
    """Whether a high byte (the odd ones) of the half-precision ``values`` is not finite."""
    return _NOT_FINITE_HALF.search(values[1::2]) is not None


def _uint32s(raw: bytes) -> Sequence[int]:
    """Little-endian unsigned 32-bit integers, unpacked in C."""
    numbers = array("I")
    if numbers.itemsize != 4:  # pragma: no cover - no platform Python supports has this
        return struct.unpack(f"<{len(raw) // 4}I", raw)
    numbers.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover - the file is little-endian
        numbers.byteswap()
    return numbers


class SparseTable(Sequence[float]):
    """A head's weights: :data:`BUCKETS` floats, all zero but the stored ones."""

    __slots__ = ("_weights",)

    def __init__(self, weights: dict[int, float]) -> None:
        self._weights = weights

    def __len__(self) -> int:
        return BUCKETS

    def __getitem__(self, index: int) -> float:  # type: ignore[override]
        if not 0 <= index < BUCKETS:
            raise IndexError(index)
        return self._weights.get(index, 0.0)

    def __iter__(self) -> Iterator[float]:
        get = self._weights.get
        return (get(i, 0.0) for i in range(BUCKETS))

    def stored(self) -> Iterator[tuple[int, float]]:
        """The stored ``(bucket, weight)`` pairs (the rest are zero)."""
        return iter(self._weights.items())

    def total(self, buckets: Sequence[int]) -> float:
        """The sum of the weights of ``buckets``, added in their order (as a dense table's
        ``sum(table[b] for b in buckets)``, to the last bit)."""
        return sum(map(self._weights.get, buckets, repeat(0.0)))


class _PackedHeads(Mapping[str, SparseTable]):
    """The heads' tables, each unpacked from its checked bytes on first use."""

    def __init__(self, packed: dict[str, tuple[bytes, bytes]]) -> None:
        self._packed = packed
        self._tables: dict[str, SparseTable] = {}
        self._lock = threading.Lock()

    def __getitem__(self, head: str) -> SparseTable:
        table = self._tables.get(head)
        if table is None:
            with self._lock:
                table = self._tables.get(head)
                if table is None:
                    deltas, values = self._packed[head]
                    halves = struct.unpack(f"<{len(values) // 2}e", values)
                    # a repeated index (delta 0) keeps its last weight, as a dense table would
                    table = SparseTable(
                        dict(zip(accumulate(_uint32s(deltas)), halves, strict=True))
                    )
                    self._tables[head] = table
        return table

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)


_DENSE_FILE = "flag-reader-dense.bin"
"""The kept dense layout's first file: threshold, C, the biases and the injection head,
which every text needs; each other head has a file of its own (:func:`_head_file`)."""
_DENSE_HEAD = struct.Struct(f"<ff{len(HEADS)}f")
_TABLE_BYTES = 4 * BUCKETS


def _head_file(head: str) -> str:
    return _DENSE_FILE if head == HEADS[0] else f"flag-reader-dense-{head}.bin"


def _head_key(key: bytes, head: str) -> bytes:
    """A head's file is signed for its head too: the tables are all the same size, so one
    head's kept file copied or renamed into another's place would otherwise be read as
    that head's weights (and score every text wrongly)."""
    return key + b":" + head.encode()


def _table(body: bytes) -> array[float] | None:
    """A head's dense table from its kept bytes (little-endian 32-bit floats)."""
    table = array("f")
    if table.itemsize != 4 or len(body) != _TABLE_BYTES:  # pragma: no cover - no such Python
        return None
    table.frombytes(body)
    if sys.byteorder == "big":  # pragma: no cover - kept little-endian
        table.byteswap()
    return table


def _dense_bytes(table: Sequence[float]) -> bytes:
    dense = array("f", bytes(_TABLE_BYTES))
    stored = table.stored() if isinstance(table, SparseTable) else enumerate(table)
    for index, weight in stored:
        dense[index] = weight
    if sys.byteorder == "big":  # pragma: no cover - kept little-endian
        dense.byteswap()
    return dense.tobytes()


class _KeptHeads(Mapping[str, Sequence[float]]):
    """The heads' dense tables from the user cache, each read when a text first needs it:
    most texts need only the injection head (a seventh of the layout), so a command that
    flags a few texts reads a megabyte, not seven. A head whose kept file is missing or
    damaged is unpacked from the weight file's bytes and kept again."""

    def __init__(self, raw: bytes, name: str, key: bytes, injection: array[float]) -> None:
        self._raw, self._name, self._key = raw, name, key
        self._tables: dict[str, Sequence[float]] = {HEADS[0]: injection}
        self._parsed: Weights | None = None
        """The weight file read, once, for the heads whose kept files are unusable."""
        self._lock = threading.Lock()

    def __getitem__(self, head: str) -> Sequence[float]:
        table = self._tables.get(head)
        if table is not None:
            return table
        if head not in HEADS:
            raise KeyError(head)
        with self._lock:
            table = self._tables.get(head)
            if table is None:
                key = _head_key(self._key, head)
                kept = derived_cache.load(_head_file(head), key)
                table = _table(kept) if kept is not None else None
                if table is None:
                    if self._parsed is None:
                        self._parsed = _read_bytes(self._raw, self._name)
                    table = self._parsed.weights[head]
                    derived_cache.store(_head_file(head), key, _dense_bytes(table))
                self._tables[head] = table
        return table

    def __iter__(self) -> Iterator[str]:
        return iter(HEADS)

    def __len__(self) -> int:
        return len(HEADS)


def kept_weights(path: Path) -> Weights:
    """The shipped weights, from their dense layout in the user cache when that was derived
    from these very bytes (a few milliseconds), else read, checked and derived now.

    The dense layout is every head's :data:`BUCKETS` weights as 32-bit floats (a half is
    exactly one of those), so a kept reader scores every text to the last bit as the one
    read from the file; a changed weight file changes the key and is derived again."""
    raw = path.read_bytes()
    key = b"%d:%08x:%d" % (BUCKETS, zlib.crc32(raw), len(raw))
    kept = derived_cache.load(_DENSE_FILE, _head_key(key, HEADS[0]))
    if kept is not None and len(kept) == _DENSE_HEAD.size + _TABLE_BYTES:
        threshold, c, *biases = _DENSE_HEAD.unpack_from(kept, 0)
        injection = _table(kept[_DENSE_HEAD.size :])
        if injection is not None:
            heads = _KeptHeads(raw, path.name, key, injection)
            return Weights(heads, dict(zip(HEADS, biases, strict=True)), threshold, c)
    reader = _read_bytes(raw, path.name)
    for head in HEADS:
        body = _dense_bytes(reader.weights[head])
        if head == HEADS[0]:
            bias = [reader.bias[name] for name in HEADS]
            body = _DENSE_HEAD.pack(reader.threshold, reader.c, *bias) + body
        derived_cache.store(_head_file(head), _head_key(key, head), body)
    return reader
