"""The dedup gate: decide SKIP / UPDATE / ADD for freshly distilled patterns.

The contract is defined by :func:`reference_gate`, the plain all-pairs loop over
:class:`difflib.SequenceMatcher` ratios.  :func:`gate` returns exactly the same
decisions, targets and ratios (bit-for-bit equal floats) but skips almost every exact
ratio computation by first bounding it from above.

Why the bounds are sound
------------------------
``SequenceMatcher(None, a, b).ratio()`` is ``2.0 * M / (len(a) + len(b))`` where ``M``
is the total size of the matching blocks.  The blocks are disjoint, increasing in
both strings and made of equal characters, so they form a common subsequence:
``M <= LCS(a, b)``.  rapidfuzz's ``Indel.similarity`` is exactly ``2 * LCS`` as an
integer, so ``2.0 * LCS / T`` computed in float64 is ``>=`` difflib's float (float
division is correctly rounded and therefore monotone in the numerator).  Empty
against empty is 1.0 for both; one empty side is 0.0 for both.

For ``len(b) >= 200`` difflib's *autojunk* heuristic makes characters that occur more
than ``len(b) // 100 + 1`` times in ``b`` "popular": they never seed a match, they
are only picked up while extending a block whose core is made of non-popular
characters.  For natural text almost every letter and the space are popular, so
difflib's ratio collapses far below the LCS bound and the LCS bound alone would leave
nearly every long pool text to be checked exactly.  :func:`_autojunk_bounds` adds a
second, tighter bound for those pairs (see its docstring for the proof); it is only
computed lazily, in batches, for candidates that the LCS bound could not discard.

Three bounds, cheapest first
----------------------------
The LCS itself is bounded by the character-multiset intersection (see
:mod:`curator.core.charbound`), which one matrix product yields for every pair at
once.  Each new text is seeded with one exact ratio (its most promising short pool
text); the LCS bound (rapidfuzz) is then computed only for the pairs whose multiset
bound still reaches that seed, and the autojunk bound only for long texts that reach
the front of the search.  Every bound is a true upper bound on difflib's ratio, so
which of them a pair ends up with changes the time, never the answer.

Search order
------------
For each new text the candidates are visited in descending bound order (ties by
ascending pool index) and the exact ratio is computed only while the next bound
could still beat, or tie at an earlier index, the best exact ratio found so far.
That yields the exact maximum and the exact earliest argmax, which the contract
needs even for ADD decisions (``.ratio`` is always the best ratio over the pool).
Exact ratios always come from difflib itself; the bounds only decide which pairs
can be skipped.  They must never be below difflib's ratio (a loose bound merely
costs time), which is what the proofs above and the tests establish.

The property tests in ``tests/core/test_dedup.py`` check the bounds and compare
``gate`` with ``reference_gate`` decision by decision on adversarial inputs;
``benchmarks/bench_dedup.py`` measures the speed-up on realistic ones.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import Indel

from curator.core.charbound import Levels, histograms, intersections

__all__ = [
    "DEFAULT_SKIP",
    "DEFAULT_UPDATE",
    "Action",
    "Decision",
    "gate",
    "merge_importance",
    "reference_gate",
]

Action = Literal["SKIP", "UPDATE", "ADD"]

DEFAULT_SKIP: Final = 0.95
DEFAULT_UPDATE: Final = 0.70

#: difflib switches on its autojunk heuristic for second sequences this long.
_AUTOJUNK_MIN_LEN: Final = 200
#: Pool columns per rapidfuzz ``cdist`` call: bounds the bound matrix to
#: ``len(new) * _CHUNK`` int32 cells however large the pool is.
_CHUNK: Final = 16384
#: Cached ``SequenceMatcher`` objects (one per pool text, holding difflib's index of
#: the pool text).  Bounded so that a huge pool cannot grow memory without limit.
_MATCHER_CACHE_SIZE: Final = 8192


@dataclass(frozen=True, slots=True)
class Decision:
    """What the gate decided for one new pattern.

    ``target`` is the pool index of the best match for SKIP and UPDATE (an index into
    ``existing``, or ``len(existing) + k`` for the k-th pattern ADDed earlier in the
    same call) and ``None`` for ADD.  ``ratio`` is the best ratio over the whole pool
    for every action, so a reviewer can see how close an ADD came to a duplicate;
    it is 0.0 when the pool was empty.
    """

    action: Action
    target: int | None
    ratio: float


def merge_importance(old: float, new: float) -> float:
    """Importance after an UPDATE: the larger of the two.

    Taking the maximum is idempotent (re-running the same batch changes nothing) and
    never additive, so repeated near-duplicates cannot inflate a pattern's importance.
    """
    return max(old, new)


def _decide(best: float, best_index: int, skip: float, update: float) -> Decision:
    """Map the best ratio over the pool to a decision (``best_index < 0``: empty pool)."""
    if best_index < 0:
        return Decision("ADD", None, 0.0)
    if best >= skip:
        return Decision("SKIP", best_index, best)
    if best >= update:
        return Decision("UPDATE", best_index, best)
    return Decision("ADD", None, best)


def pair_ratio(new_text: str, pool_text: str) -> float:
    """The gate's similarity of one pair: difflib's ratio, in the contract's argument order."""
    return difflib.SequenceMatcher(None, new_text, pool_text).ratio()


def reference_gate(
    new: Sequence[str],
    existing: Sequence[str],
    *,
    skip: float = DEFAULT_SKIP,
    update: float = DEFAULT_UPDATE,
) -> list[Decision]:
    """The contract, as the plain all-pairs loop (slow; for tests and benchmarks).

    The pool is ``existing`` followed by the new patterns ADDed earlier in this call.
    Each new text is compared with every pool text using
    ``SequenceMatcher(None, new_text, pool_text).ratio()``; the best ratio wins, ties
    go to the earliest pool index.
    """
    pool = list(existing)
    decisions: list[Decision] = []
    for text in new:
        best, best_index = -1.0, -1
        for index, other in enumerate(pool):
            ratio = pair_ratio(text, other)
            if ratio > best:
                best, best_index = ratio, index
        decision = _decide(best, best_index, skip, update)
        decisions.append(decision)
        if decision.action == "ADD":
            pool.append(text)
    return decisions


_U32: Final = np.dtype("<u4")
#: Code values no character can have (characters stop at 0x10FFFF): the padding
#: around ``a`` and the separators between concatenated pool texts match nothing.
_PAD: Final = 0xFFFF_FFFE
_SEPARATOR: Final = 0xFFFF_FFFF
#: Cells per refinement batch (per pair: the new text's length + 1 + the pool text's
#: length), to bound memory.
_BATCH_CELLS: Final = 2_000_000
#: Anchors (character pairs that can seed a block) per refinement batch.
_MAX_ANCHORS: Final = 500_000
#: Below this many pairs, rapidfuzz runs on one thread.
_PARALLEL_CELLS: Final = 20_000
#: Characters compared per step while growing anchored runs (and padding width).
_GROW: Final = 16
#: Candidates per new text (by the character-multiset bound) whose LCS bound is
#: computed to pick the seed: the pair whose exact ratio starts the search.
_SEED_CANDIDATES: Final = 64

IntArray = npt.NDArray[np.int64]
CodeArray = npt.NDArray[np.uint32]


def _codes(text: str) -> CodeArray:
    """Code points of ``text`` (lone surrogates included) as a read-only uint32 array."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=_U32)


def _decode(codes: CodeArray) -> str:
    return codes.astype(_U32, copy=False).tobytes().decode("utf-32-le", "surrogatepass")


def _non_popular(text: str) -> tuple[IntArray, CodeArray]:
    """Positions and codes of the characters difflib's autojunk keeps for ``text``.

    Mirrors ``SequenceMatcher.__chain_b``: for ``len(text) >= 200`` a character is
    popular when it occurs more than ``len(text) // 100 + 1`` times; shorter texts
    have no popular characters (the bound below then degrades gracefully to the LCS).
    """
    codes = _codes(text)
    if len(text) < _AUTOJUNK_MIN_LEN:  # no autojunk: every character is kept
        return np.arange(len(text), dtype=np.int64), codes
    _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    positions = np.flatnonzero(counts[inverse] <= len(text) // 100 + 1).astype(np.int64)
    return positions, codes[positions]


class _Pool:
    """The growing pool, with lazily built per-text caches used by the search."""

    def __init__(self, existing: Sequence[str]) -> None:
        self.texts: list[str] = list(existing)
        self._matchers: dict[int, difflib.SequenceMatcher[str]] = {}
        self._keep: dict[int, tuple[IntArray, CodeArray]] = {}

    def ratio(self, a: str, index: int) -> float:
        """Exact ``SequenceMatcher(None, a, pool[index]).ratio()``.

        difflib indexes its *second* sequence (``b2j``), which here is the pool text, so
        one matcher per pool text is kept and only ``set_seq1`` changes; the result is
        identical to a fresh matcher because ``b2j`` depends on ``b`` alone.
        """
        matcher = self._matchers.get(index)
        if matcher is None:
            if len(self._matchers) >= _MATCHER_CACHE_SIZE:
                self._matchers.pop(next(iter(self._matchers)))
            matcher = difflib.SequenceMatcher(None, a, self.texts[index])
            self._matchers[index] = matcher
        else:
            matcher.set_seq1(a)
        return matcher.ratio()

    def keep(self, index: int) -> tuple[IntArray, CodeArray]:
        """Non-popular positions and codes of a long pool text (cached)."""
        kept = self._keep.get(index)
        if kept is None:
            if len(self._keep) >= _MATCHER_CACHE_SIZE:
                self._keep.pop(next(iter(self._keep)))
            kept = self._keep[index] = _non_popular(self.texts[index])
        return kept


class _Query:
    """One new text and its running best (``best_index < 0`` while nothing was seen)."""

    __slots__ = ("_lookup", "best", "best_index", "codes", "padded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.best = -1.0
        self.best_index = -1
        self.codes = _codes(text)
        padded = np.full(len(text) + 2 * _GROW, _PAD, dtype=_U32)
        padded[_GROW:-_GROW] = self.codes
        self.padded = padded
        self._lookup: tuple[CodeArray, IntArray] | None = None

    def lookup(self) -> tuple[CodeArray, IntArray]:
        """The text's codes sorted, and the positions they came from."""
        if self._lookup is None:
            order = np.argsort(self.codes, kind="stable").astype(np.int64)
            self._lookup = (self.codes[order], order)
        return self._lookup

    def could_improve(self, bound: float, index: int) -> bool:
        """Whether a candidate with this upper bound might replace the current best."""
        return bound > self.best or (bound == self.best and index < self.best_index)

    def offer(self, ratio: float, index: int) -> None:
        if ratio > self.best or (ratio == self.best and index < self.best_index):
            self.best, self.best_index = ratio, index


def _autojunk_bounds(query: _Query, pool: _Pool, indices: Sequence[int]) -> IntArray:
    """Upper bounds on difflib's matched-character count, ``query`` vs long pool texts.

    For ``len(b) >= 200`` (autojunk on, no junk function), ``find_longest_match``
    works like this on a region ``a[alo:ahi]`` x ``b[blo:bhi]``: the *core* of the
    block is the longest run of consecutive equal pairs whose ``b`` characters are all
    non-popular; the core is then extended over equal characters of any kind.  Hence
    every matching block either

    * (type C) contains a pair ``(i, j)`` with ``a[i] == b[j]`` non-popular, and lies
      inside the maximal diagonal run of equal characters through that pair (an
      "anchored run"); or
    * (type E) has an empty core: the region has no non-popular pair at all, and the
      block is the common prefix of ``a[alo:ahi]`` and ``b[blo:bhi]``.  A region that
      does not start at ``(0, 0)`` starts right after an earlier block, where the
      extension stopped on a mismatch, so only a region starting at ``(0, 0)`` can
      produce a non-empty type E block: it lies inside the common prefix of a and b.

    So every matched pair lies in an anchored run or in the common prefix, and the
    matched pairs of all blocks form a common subsequence.  Blanking out (with
    characters that match nothing) every position of ``a`` and of ``b`` covered by
    neither keeps all matched pairs, so the LCS of the blanked strings bounds the
    matched count.  Unlike the plain LCS it ignores the long stretches of popular
    characters that difflib can never reach, which is where autojunk makes difflib's
    ratio collapse.

    Blanked characters match nothing, so deleting them leaves the LCS unchanged; the
    strings handed to rapidfuzz are the covered characters only, which also makes
    the LCS cheap.  All pairs are handled at once with numpy: the pool texts are
    concatenated with separators, the anchored runs of all anchors are grown
    together, ``_GROW`` characters per step, and rapidfuzz computes all the LCS in
    one call.

    Work is split into groups that bound memory (anchors and cells); a pair with more
    anchors than one group may hold (only possible for very long texts made of few
    distinct characters) keeps the trivial bound ``min(len(a), len(b))``.
    """
    texts = [pool.texts[index] for index in indices]
    kept = [pool.keep(index) for index in indices]
    len_a = len(query.text)
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    result = np.minimum(lengths, len_a)
    sorted_codes, _ = query.lookup()
    codes = np.concatenate([c for _, c in kept] + [np.empty(0, _U32)])
    hits = np.searchsorted(sorted_codes, codes, side="right") - np.searchsorted(
        sorted_codes, codes, side="left"
    )
    bounds = np.concatenate([[0], np.cumsum([len(p) for p, _ in kept], dtype=np.int64)])
    running = np.concatenate([[0], np.cumsum(hits, dtype=np.int64)])
    anchors = (running[bounds[1:]] - running[bounds[:-1]]).tolist()
    group: list[int] = []
    group_anchors = group_cells = 0

    def flush() -> None:
        if group:
            result[group] = _autojunk_group(
                query, [texts[k] for k in group], [kept[k] for k in group]
            )
            group.clear()

    for k, (size, hit) in enumerate(zip(lengths.tolist(), anchors, strict=True)):
        cells = len_a + 1 + size
        if hit > _MAX_ANCHORS or cells > _BATCH_CELLS:
            continue
        if group_anchors + hit > _MAX_ANCHORS or group_cells + cells > _BATCH_CELLS:
            flush()
            group_anchors = group_cells = 0
        group.append(k)
        group_anchors += hit
        group_cells += cells
    flush()
    return result


def _autojunk_group(
    query: _Query, texts: list[str], kept: list[tuple[IntArray, CodeArray]]
) -> IntArray:
    """:func:`_autojunk_bounds` for one memory-bounded group of pool texts."""
    count = len(texts)
    len_a = len(query.text)
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=count)
    # Layout: _GROW separators, t0, SEP, t1, SEP, ..., t_last, then separators.
    starts = np.empty(count, dtype=np.int64)
    starts[0] = _GROW
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    starts[1:] += _GROW
    joined = np.full(int(starts[-1] + lengths[-1]) + _GROW + 1, _SEPARATOR, dtype=_U32)
    joined[_GROW : _GROW + int(starts[-1] + lengths[-1]) - _GROW] = _codes("\x00".join(texts))
    joined[starts[1:] - 1] = _SEPARATOR

    # Anchors: every (i, j) with a[i] == b[j] and b[j] non-popular in its own text.
    per_text = np.fromiter((len(p) for p, _ in kept), dtype=np.int64, count=count)
    anchor_text = np.repeat(np.arange(count, dtype=np.int64), per_text)
    anchor_j = np.concatenate([p for p, _ in kept] + [np.empty(0, np.int64)])
    anchor_j = anchor_j + np.repeat(starts, per_text)
    anchor_codes = np.concatenate([c for _, c in kept] + [np.empty(0, _U32)])
    sorted_codes, order = query.lookup()
    low = np.searchsorted(sorted_codes, anchor_codes, side="left")
    hits = np.searchsorted(sorted_codes, anchor_codes, side="right") - low
    source = np.repeat(np.arange(len(hits), dtype=np.int64), hits)
    within = np.arange(int(hits.sum()), dtype=np.int64) - np.repeat(np.cumsum(hits) - hits, hits)
    pair_i = order[low[source] + within] + _GROW  # index into query.padded
    pair_j = anchor_j[source]
    pair_text = anchor_text[source]

    # Grow every anchored run to its maximal extent; pads and separators stop it.
    padded = query.padded
    reach = []
    for sign in (-1, 1):
        steps = sign * np.arange(1, _GROW + 1, dtype=np.int64)
        grown = np.zeros(len(pair_i), dtype=np.int64)
        active = np.arange(len(pair_i), dtype=np.int64)
        for _ in range(3):  # most runs are short: single steps first
            if not active.size:
                break
            offset = sign * (grown[active] + 1)
            same_one = padded[pair_i[active] + offset] == joined[pair_j[active] + offset]
            active = active[same_one]
            grown[active] += 1
        while active.size:
            offset = sign * grown[active]
            same = (
                padded[(pair_i[active] + offset)[:, None] + steps]
                == joined[(pair_j[active] + offset)[:, None] + steps]
            )
            full = same.all(axis=1)
            grown[active] += np.where(full, _GROW, np.argmin(same, axis=1))
            active = active[full]
        reach.append(grown)
    left, right = reach

    # Common prefixes (the only place a type E block can be).
    prefix = np.zeros(count, dtype=np.int64)
    if len_a:
        maybe = np.flatnonzero(joined[starts] == query.codes[0])
        if maybe.size:
            width = len_a + 1
            needed = int(starts[-1]) + width - len(joined)
            if needed > 0:
                joined = np.concatenate([joined, np.full(needed, _SEPARATOR, dtype=_U32)])
            windows = joined[starts[maybe][:, None] + np.arange(width, dtype=np.int64)]
            same = windows == padded[_GROW : _GROW + width][None, :]
            prefix[maybe] = np.argmin(same, axis=1)

    # Covered positions: of a (one row per pair) and of the concatenated pool texts.
    width = len_a + 1
    cells = count * width
    rows = np.arange(count, dtype=np.int64) * width
    first_a = pair_text * width + pair_i - _GROW
    begin_a = np.concatenate([first_a - left, rows])
    end_a = np.concatenate([first_a + right + 1, rows + prefix])
    cover_a = (
        np.cumsum(
            np.bincount(begin_a, minlength=cells + 1)[:cells]
            - np.bincount(end_a, minlength=cells + 1)[:cells]
        ).reshape(count, width)[:, :len_a]
        > 0
    )
    size = len(joined)
    begin_b = np.concatenate([pair_j - left, starts])
    end_b = np.concatenate([pair_j + right + 1, starts + prefix])
    cover_b = (
        np.cumsum(
            np.bincount(begin_b, minlength=size + 1)[:size]
            - np.bincount(end_b, minlength=size + 1)[:size]
        )
        > 0
    )

    # Only covered characters go to the LCS (blanked ones could not match anyway).
    kept_a = _decode(np.broadcast_to(query.codes, (count, len_a))[cover_a])
    ends_a = np.cumsum(cover_a.sum(axis=1)).tolist()
    rows_a = [kept_a[s:e] for s, e in zip([0, *ends_a[:-1]], ends_a, strict=True)]
    kept_b = _decode(joined[cover_b])
    before = np.concatenate([[0], np.cumsum(cover_b)])
    starts_b = before[starts].tolist()
    ends_b = before[starts + lengths].tolist()
    rows_b = [kept_b[s:e] for s, e in zip(starts_b, ends_b, strict=True)]
    # One thread: the blanked strings are short, and starting threads costs more.
    doubled = process.cpdist(rows_a, rows_b, scorer=Indel.similarity, dtype=np.int64, workers=1)
    return np.asarray(doubled, dtype=np.int64) // 2


def _bounds(
    queries: Sequence[str], targets: Sequence[str], workers: int
) -> npt.NDArray[np.float64]:
    """LCS upper bounds on the difflib ratio, ``queries`` x ``targets``, as float64."""
    if len(queries) * len(targets) < _PARALLEL_CELLS:
        workers = 1  # starting threads costs more than a small matrix
    doubled_lcs = process.cdist(
        queries, targets, scorer=Indel.similarity, dtype=np.int32, workers=workers
    )
    total = (
        np.fromiter((len(q) for q in queries), dtype=np.int64, count=len(queries))[:, None]
        + np.fromiter((len(t) for t in targets), dtype=np.int64, count=len(targets))[None, :]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        bounds = doubled_lcs.astype(np.float64) / total
    # Two empty strings: difflib says 1.0 (and so does the bound).
    bounds[total == 0] = 1.0
    return bounds


def _ratio_bounds(doubled: IntArray, total: IntArray) -> npt.NDArray[np.float64]:
    """``doubled / total`` as float64, 1.0 for two empty strings (as difflib says)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        bounds = doubled.astype(np.float64) / total
    bounds[total == 0] = 1.0
    return bounds


def _pair_lcs(
    queries: Sequence[str], targets: Sequence[str], rows: IntArray, cols: IntArray, workers: int
) -> IntArray:
    """``2 * LCS`` of the pairs ``(queries[rows[k]], targets[cols[k]])``."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    if rows.size < _PARALLEL_CELLS:
        workers = 1
    left = [queries[r] for r in rows.tolist()]
    right = [targets[c] for c in cols.tolist()]
    doubled = process.cpdist(left, right, scorer=Indel.similarity, dtype=np.int64, workers=workers)
    return np.asarray(doubled, dtype=np.int64)


def _seeded_bounds(
    queries: Sequence[_Query],
    pool: _Pool,
    start: int,
    stop: int,
    query_counts: npt.NDArray[np.int32],
    workers: int,
) -> npt.NDArray[np.float64]:
    """Upper bounds for ``queries`` x ``pool[start:stop]``, tight where it matters.

    Every pair gets the character-multiset bound (:mod:`curator.core.charbound`, one
    matrix product), capped by the length bound ``min(len(a), len(b))``.  Each query is
    then seeded with one exact ratio: of the pair with the best LCS bound among its
    :data:`_SEED_CANDIDATES` best multiset bounds.  Only the pairs whose multiset bound
    still reaches that best get the (costlier) LCS bound; the others keep the multiset
    bound, a true upper bound too and already below a ratio the query has, so the
    search never visits them.
    """
    texts = [q.text for q in queries]
    columns = pool.texts[start:stop]
    counts = histograms(columns)
    levels = Levels(np.maximum(query_counts.max(axis=0), counts.max(axis=0)))
    common = intersections(levels.weighted(query_counts), levels.indicators(counts))
    len_q = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    len_c = np.fromiter((len(t) for t in columns), dtype=np.int64, count=len(columns))
    total = len_q[:, None] + len_c[None, :]
    # Plus the length bound: rounded-up counts can exceed the shorter text's length.
    np.minimum(common, np.minimum(len_q[:, None], len_c[None, :]), out=common)
    bounds = _ratio_bounds(2 * common, total)

    take = min(_SEED_CANDIDATES, len(columns))
    top = np.argpartition(-bounds, take - 1, axis=1)[:, :take]
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), take)
    cols = top.ravel().astype(np.int64)
    lcs = _ratio_bounds(_pair_lcs(texts, columns, rows, cols, workers), total[rows, cols])
    bounds[rows, cols] = np.minimum(bounds[rows, cols], lcs)
    # The seed: the best LCS bound, short pool texts first (autojunk makes difflib's
    # ratio of a long one collapse far below its LCS bound), then the earliest index.
    seeds = bounds[rows, cols].reshape(len(texts), take)
    short = (len_c[top] < _AUTOJUNK_MIN_LEN).astype(np.int64)
    for row, query in enumerate(queries):
        first = np.lexsort((top[row], -seeds[row], -short[row]))[0]
        column = int(top[row, first])
        if query.could_improve(float(seeds[row, first]), start + column):
            query.offer(pool.ratio(query.text, start + column), start + column)

    best = np.fromiter((q.best for q in queries), dtype=np.float64, count=len(queries))
    for row, query in enumerate(queries):
        cols = np.flatnonzero(bounds[row] >= best[row])
        if cols.size:
            # One query against many texts: rapidfuzz prepares the query once.
            doubled = process.cdist(
                [query.text],
                [columns[c] for c in cols.tolist()],
                scorer=Indel.similarity,
                dtype=np.int64,
                workers=1,
            )[0]
            lcs = _ratio_bounds(np.asarray(doubled, dtype=np.int64), total[row, cols])
            bounds[row, cols] = np.minimum(bounds[row, cols], lcs)
    return bounds


def _search_row(
    query: _Query,
    pool: _Pool,
    row: npt.NDArray[np.float64],
    offset: int,
    lengths: IntArray,
    workers: int,
) -> None:
    """Fold the exact best over one chunk of pool columns into ``query``.

    ``row[c]`` is the LCS bound for pool index ``offset + c`` and ``lengths[c]`` that
    text's length.  The best is seeded with the top candidate's exact ratio.  The
    candidates that could still beat it are then visited by descending bound, then
    ascending index, and the exact ratio is computed only while the next bound can
    beat, or tie at an earlier index, the best ratio found so far.  A long pool text
    (autojunk) reaching the front gets the tighter bound of :func:`_autojunk_bounds`
    first and re-enters the queue; those are refined in growing batches, so that
    numpy's per-call cost is shared while a rising best still spares most of them.
    """
    if row.size == 0:
        return
    if query.best_index < 0:
        first = int(np.argmax(row))
        query.offer(pool.ratio(query.text, offset + first), offset + first)
    candidates = np.flatnonzero(row >= query.best)
    if candidates.size == 0:
        return
    order = np.lexsort((candidates, -row[candidates]))
    columns = candidates[order]
    bounds = row[columns].tolist()
    indices = (columns + offset).tolist()
    is_long = (lengths[columns] >= _AUTOJUNK_MIN_LEN).tolist()
    long_positions = [k for k, flag in enumerate(is_long) if flag]
    refined_upto = 0  # long_positions[:refined_upto] have their tight bound queued
    batch = 16
    queue: list[tuple[float, int]] = []  # (-tight bound, pool index), a heap
    position = 0
    while True:
        while (
            position < len(bounds)
            and is_long[position]
            and (refined_upto > 0 and position <= long_positions[refined_upto - 1])
        ):
            position += 1  # already refined and queued
        head = (-bounds[position], indices[position]) if position < len(bounds) else None
        if queue and (head is None or queue[0] < head):
            neg_bound, index = heapq.heappop(queue)
            if not query.could_improve(-neg_bound, index):
                break
        elif head is not None:
            if not query.could_improve(bounds[position], indices[position]):
                break
            if is_long[position]:
                picked = long_positions[refined_upto : refined_upto + batch]
                picked = [k for k in picked if query.could_improve(bounds[k], indices[k])]
                matched = _autojunk_bounds(query, pool, [indices[k] for k in picked])
                for k, count in zip(picked, matched.tolist(), strict=True):
                    total = len(query.text) + int(lengths[columns[k]])
                    tight = min(bounds[k], 2 * count / total)
                    heapq.heappush(queue, (-tight, indices[k]))
                refined_upto += len(long_positions[refined_upto : refined_upto + batch])
                batch *= 2
                continue
            index = indices[position]
            position += 1
        else:
            break
        if index != query.best_index:
            query.offer(pool.ratio(query.text, index), index)


def _chunks(size: int, step: int) -> Iterator[tuple[int, int]]:
    for start in range(0, size, step):
        yield start, min(size, start + step)


def gate(
    new: Sequence[str],
    existing: Sequence[str],
    *,
    skip: float = DEFAULT_SKIP,
    update: float = DEFAULT_UPDATE,
    workers: int = -1,
) -> list[Decision]:
    """Decide SKIP / UPDATE / ADD for each new text; same result as :func:`reference_gate`.

    ``best >= skip`` -> SKIP the new text (it is already known); ``best >= update`` ->
    UPDATE the target (see :func:`merge_importance`); otherwise ADD, and the new text
    joins the pool for the texts after it.  ``workers`` is passed to rapidfuzz
    (``-1``: all cores) and affects speed only.

    The pool's ``existing`` part is searched for all new texts at once in column
    chunks (memory stays bounded for any pool size); the ADDed part depends on earlier
    decisions, so it is searched afterwards, one new text at a time, in order.  Every
    existing index is smaller than every ADDed index, so the two searches combine
    with the same tie rule.
    """
    queries = [_Query(text) for text in new]
    if not queries:
        return []
    pool = _Pool(existing)
    n_existing = len(pool.texts)
    query_counts = histograms([q.text for q in queries])

    for start, stop in _chunks(n_existing, _CHUNK):
        columns = pool.texts[start:stop]
        bounds = _seeded_bounds(queries, pool, start, stop, query_counts, workers)
        lengths = np.fromiter((len(t) for t in columns), dtype=np.int64, count=len(columns))
        for row_index, query in enumerate(queries):
            _search_row(query, pool, bounds[row_index], start, lengths, workers)

    decisions: list[Decision] = []
    added: list[str] = []
    for query in queries:
        for start, stop in _chunks(len(added), _CHUNK):
            columns = added[start:stop]
            row = _bounds([query.text], columns, workers)[0]
            lengths = np.fromiter((len(t) for t in columns), dtype=np.int64, count=len(columns))
            _search_row(query, pool, row, n_existing + start, lengths, workers)
        decision = _decide(query.best, query.best_index, skip, update)
        decisions.append(decision)
        if decision.action == "ADD":
            added.append(query.text)
            pool.texts.append(query.text)
    return decisions


def nearest(
    text: str, existing: Sequence[str], k: int, *, workers: int = 1
) -> list[tuple[int, float]]:
    """The ``k`` pool texts most similar to ``text``: ``(index, ratio)``, best first.

    The reviewer's target picker needs more than the gate's single best match. The ratio
    is the gate's (:func:`pair_ratio`, exact); the LCS bound of :func:`_bounds` orders
    the pool and stops the search once no remaining text can enter the top ``k``, so a
    pool of thousands costs a few exact ratios, not thousands. Ties keep pool order.
    """
    if k <= 0 or not existing:
        return []
    bounds = _bounds([text], existing, workers)[0]
    order = np.lexsort((np.arange(len(existing)), -bounds))
    best: list[tuple[float, int]] = []  # min-heap of (ratio, -index) for the top k
    for index in order.tolist():
        if len(best) >= k and bounds[index] < best[0][0]:
            break
        ratio = pair_ratio(text, existing[index])
        item = (ratio, -index)
        if len(best) < k:
            heapq.heappush(best, item)
        elif item > best[0]:
            heapq.heapreplace(best, item)
    ranked = sorted(best, key=lambda item: (-item[0], -item[1]))
    return [(-neg, ratio) for ratio, neg in ranked]
