"""The q-gram cover bound: a cheap, autojunk-aware upper bound for long pool texts.

For a pool text ``b`` of 200+ characters difflib's *autojunk* heuristic makes every
character that occurs more than ``len(b) // 100 + 1`` times in ``b`` "popular", and
its ratio against most other texts collapses far below the LCS bound.  This bound
follows difflib's blocks: it costs a few microseconds per pair (vectorised over many
pool texts at once) and on natural text leaves difflib itself only the few long pairs
that could still win.  (A former bound that grew every anchored run exactly was
slightly tighter but cost about 0.1 ms per pair, more than the exact ratios it saved.)

Why it is an upper bound
------------------------
With autojunk on (``len(b) >= 200``, no junk function) ``find_longest_match`` works
like this on a region ``a[alo:ahi]`` x ``b[blo:bhi]``: the *core* of the block is the
longest run of consecutive equal pairs whose ``b`` characters are all non-popular
(only those are in difflib's ``b2j``); the core is then extended over equal
characters of any kind.  Hence every matching block either

* contains a pair ``(i, j)`` with ``a[i] == b[j]`` non-popular in ``b`` and lies inside
  the maximal run of equal characters through that pair; or
* has an empty core: then it is the common prefix of the region.  A region that does
  not start at ``(0, 0)`` starts right after an earlier block, where the extension
  stopped on a mismatch (or at the region's end, which leaves nothing), so such a
  block can only be non-empty inside the common prefix of ``a`` and ``b``.

So every character pair difflib matches lies either in the common prefix or in a
common run (equal characters, consecutive in both) that contains a *live* position of
``b``: one whose character is non-popular in ``b`` and occurs in ``a``.  Take such a
run ``b[l:r]`` and a matched position ``x`` in it:

* ``r - l == 1``: ``x`` is the live position itself;
* ``r - l == 2``: the bigram ``b[l:r]`` occurs in ``a`` and contains a live position;
* ``r - l >= 3``: every trigram window ``b[s:s+3]``, ``l <= s <= r - 3``, occurs in
  ``a``; these windows are consecutive, so they belong to one maximal chain of
  consecutive windows that occur in ``a``, and one of them contains the live
  position (the windows cover ``b[l:r]``).

So ``x`` is *covered*: it is live, or in an occurring bigram window that contains a
live position, or in a maximal chain of occurring trigram windows of which one
window contains a live position, or in the common prefix.  The matched pairs form a
common subsequence of ``a`` and of the covered characters of ``b``, hence
``matched <= LCS(a, covered(b)) <= |covered(b)|``.

"Occurs in ``a``" is tested through 16-bit hashes of ``a``'s characters, bigrams and
trigrams: a collision can only make a window look occurring when it is not, which
covers more and loosens the bound, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import Indel

__all__ = ["AUTOJUNK_MIN_LEN", "GramIndex"]

_U32: Final = np.dtype("<u4")
_TABLE_BITS: Final = 16
_SHIFT: Final = np.uint64(64 - _TABLE_BITS)
#: Odd 64-bit multipliers (multiplicative hashing of up to three code points).
_K1: Final = np.uint64(0x9E3779B97F4A7C15)
_K2: Final = np.uint64(0xC2B2AE3D27D4EB4F)
_K3: Final = np.uint64(0x165667B19E3779F9)
#: Slot of the query tables that is never set: windows that do not apply point here.
_NONE: Final = 1 << _TABLE_BITS
#: Difflib's autojunk threshold: shorter second sequences have no popular characters.
AUTOJUNK_MIN_LEN: Final = 200

BoolArray = npt.NDArray[np.bool_]
HashArray = npt.NDArray[np.uint16]
IntArray = npt.NDArray[np.int64]


def _codes(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=_U32)


def _hashes(codes: npt.NDArray[np.uint32]) -> tuple[HashArray, HashArray, HashArray]:
    """16-bit hashes of each character, and of the bigram and trigram starting there.

    Windows that would run past the end get the hash of a shorter window; callers mask
    them out (they are never "occurring").
    """
    wide = codes.astype(np.uint64)
    h1 = wide * _K1
    nxt = np.zeros_like(wide)
    nxt[:-1] = wide[1:]
    h2 = h1 + nxt * _K2
    nxt2 = np.zeros_like(wide)
    nxt2[:-2] = wide[2:]
    h3 = h2 + nxt2 * _K3
    return (
        (h1 >> _SHIFT).astype(np.uint16),
        (h2 >> _SHIFT).astype(np.uint16),
        (h3 >> _SHIFT).astype(np.uint16),
    )


class GramIndex:
    """Query-independent data of the bound for many texts, concatenated (built once).

    Every text is followed by one separator slot that is never live and ends every
    window, so concatenated texts never share a chain.  Per position it keeps the
    hash of the character when it is non-popular in its own text, and the hashes of
    the bigram and trigram starting there when they fit inside the text; every other
    slot holds :data:`_NONE`, an index that no query table sets.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        lengths = np.fromiter((len(t) for t in self.texts), dtype=np.int64, count=len(texts))
        self.lengths = lengths
        self.starts = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths + 1, out=self.starts[1:])
        size = int(self.starts[-1])
        codes = _codes("\x00".join(self.texts) + "\x00") if texts else np.zeros(0, _U32)
        self.codes = codes
        owner = np.repeat(np.arange(len(texts), dtype=np.int64), lengths + 1)
        offset = np.arange(size, dtype=np.int64) - self.starts[:-1][owner]
        inside = offset < lengths[owner]
        nonpop = inside & (lengths[owner] < AUTOJUNK_MIN_LEN)
        long_texts = np.flatnonzero(lengths >= AUTOJUNK_MIN_LEN)
        if long_texts.size:
            at = inside & (lengths[owner] >= AUTOJUNK_MIN_LEN)
            nonpop[at] = _counts_in_own_text(owner[at], codes[at]) <= (
                lengths[owner[at]] // 100 + 1
            )
        h1, h2, h3 = _hashes(codes)
        self.h1 = np.where(nonpop, h1, _NONE).astype(np.uint32)
        self.h2 = np.where(offset + 2 <= lengths[owner], h2, _NONE).astype(np.uint32)
        self.h3 = np.where(offset + 3 <= lengths[owner], h3, _NONE).astype(np.uint32)
        self._tables_for: str | None = None
        self._tables = _tables("")

    def cover_bounds(self, query: str, which: IntArray, need: IntArray | None = None) -> IntArray:
        """Upper bounds on difflib's matched characters, ``query`` vs ``texts[which]``.

        The bound is the number of covered characters, tightened to the LCS of the
        query and the covered characters (rapidfuzz) where that number still reaches
        ``need`` (all pairs when ``need`` is None): a pair already below what it needs
        to matter is not worth the LCS.
        """
        which = np.asarray(which, dtype=np.int64)
        if which.size == 0:
            return np.zeros(0, dtype=np.int64)
        spans = self.lengths[which] + 1
        starts = np.zeros(which.size + 1, dtype=np.int64)
        np.cumsum(spans, out=starts[1:])
        index = np.arange(int(starts[-1]), dtype=np.int64) + np.repeat(
            self.starts[which] - starts[:-1], spans
        )
        if self._tables_for is not query:  # the search asks again for the same query
            self._tables = _tables(query)
            self._tables_for = query
        t1, t2, t3 = self._tables
        live = t1[self.h1[index]]
        a2 = t2[self.h2[index]]
        a3 = t3[self.h3[index]]
        size = len(live)
        # Live at s + 1 (s + 2): the window starting at s contains a live position.
        live1 = np.zeros(size, dtype=np.bool_)
        live1[:-1] = live[1:]
        live2 = np.zeros(size, dtype=np.bool_)
        live2[:-2] = live[2:]
        pair = a2 & (live | live1)
        # Maximal chains of occurring trigram windows; keep those with a live position.
        begins = a3.copy()
        begins[1:] &= ~a3[:-1]
        first = np.flatnonzero(begins)
        triple = np.zeros(size, dtype=np.bool_)
        if first.size:
            anchored = np.logical_or.reduceat(a3 & (live | live1 | live2), first)
            chain = np.cumsum(begins, dtype=np.int32) - 1
            triple[a3] = anchored[chain[a3]]
        cover = live | pair | triple
        cover[1:] |= pair[:-1] | triple[:-1]
        cover[2:] |= triple[:-2]
        # The common prefix: difflib's only block that needs no live position.
        if query:
            head = self.codes[self.starts[which]] == ord(query[0])
            for k in np.flatnonzero(head & (self.lengths[which] > 0)).tolist():
                common = _common_prefix(query, self.texts[int(which[k])])
                cover[starts[k] : starts[k] + common] = True
        counts = np.add.reduceat(cover.astype(np.int64), starts[:-1])
        tighten = np.flatnonzero(counts >= need) if need is not None else np.arange(which.size)
        if tighten.size == 0:
            return counts
        kept = self.codes[index[cover]].tobytes().decode("utf-32-le", "surrogatepass")
        ends = np.cumsum(counts).tolist()
        parts = [kept[ends[k] - int(counts[k]) : ends[k]] for k in tighten.tolist()]
        doubled = process.cdist([query], parts, scorer=Indel.similarity, dtype=np.int64, workers=1)
        counts[tighten] = np.asarray(doubled[0], dtype=np.int64) // 2
        return counts


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b``."""
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


def _counts_in_own_text(owner: IntArray, codes: npt.NDArray[np.uint32]) -> IntArray:
    """How often each position's character occurs in its own text (exact)."""
    if codes.size and int(codes.max()) < 256:  # Latin-1: one bin per (text, character)
        small = owner * 256 + codes
        return np.bincount(small)[small]
    keys = (owner << 21) | codes.astype(np.int64)  # code points stop at 0x10FFFF < 2**21
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse]


def _tables(text: str) -> tuple[BoolArray, BoolArray, BoolArray]:
    """Which hashes the query's characters, bigrams and trigrams take (slot _NONE: no)."""
    size = (1 << _TABLE_BITS) + 1
    n = len(text)
    h1, h2, h3 = _hashes(_codes(text))
    t1 = np.zeros(size, dtype=np.bool_)
    t2 = np.zeros(size, dtype=np.bool_)
    t3 = np.zeros(size, dtype=np.bool_)
    t1[h1] = True
    t2[h2[: max(0, n - 1)]] = True
    t3[h3[: max(0, n - 2)]] = True
    return t1, t2, t3
