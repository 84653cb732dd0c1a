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
nearly every long pool text to be checked exactly.  The cover bound of
:mod:`curator.core.gramcover` (see its docstring for the proof) is the tighter bound
for those pairs; it is computed lazily, in batches, for long candidates that the LCS
bound could not discard.

Three bounds, cheapest first
----------------------------
The LCS itself is bounded by the character-multiset intersection (see
:mod:`curator.core.charbound`), which one matrix product yields for every pair at
once.  Each new text is seeded by the search below, run on a few picks only: its
best multiset bounds (LCS-bounded) and, for a long new text, the long pool texts
with the best LCS bounds.  The LCS bound (rapidfuzz) is then computed only for the
pairs whose multiset bound still reaches that seed, and the cover bound only for long
texts that reach the front of the search.  Every bound is a true upper bound on
difflib's ratio, so which of them a pair ends up with changes the time, never the
answer.

Search order
------------
For each new text the candidates are visited in descending bound order (ties by
ascending pool index) and the exact ratio is computed only while the next bound
could still beat, or tie at an earlier index, the best exact ratio found so far.
That yields the exact maximum and the exact earliest argmax, which the contract
needs even for ADD decisions (``.ratio`` is always the best ratio over the pool).
Exact ratios always come from difflib itself; the bounds only decide which pairs
can be skipped.  An exact ratio runs difflib's own block recursion and stops as soon
as the blocks found plus the LCS of each region still to search cannot beat the best
(:meth:`_Pool.offer_exact`): most visited pairs lose, and a loser is usually known
after a few ``find_longest_match`` calls instead of ten.  The bounds must never be
below difflib's ratio (a loose bound merely costs time), which is what the proofs
above and the tests establish.

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

from curator.core.charbound import Levels, histograms, ratio_bounds
from curator.core.gramcover import GramIndex
from curator.core.scoring import merge_importance  # lives with the importance rules

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


#: Regions this short are bounded by their length, longer ones by their LCS.
_CHEAP_CAP: Final = 4
#: Below this many pairs, rapidfuzz runs on one thread.
_PARALLEL_CELLS: Final = 20_000
#: Candidates per new text (by the character-multiset bound) whose LCS bound is
#: computed to pick the seed: the pair whose exact ratio starts the search.
_SEED_CANDIDATES: Final = 64
#: Long pool texts (best LCS bound) also considered for the seed of a long query.
_SEED_LONG: Final = 8
#: Long pool texts (best multiset bound) given the LCS bound to choose those from.
_SEED_LONG_POOL: Final = 512
#: Long candidates given the cover bound at once, at first (then twice as many).
_COVER_BATCH: Final = 32

IntArray = npt.NDArray[np.int64]


class _Pool:
    """The growing pool, with lazily built per-text caches used by the search."""

    def __init__(self, existing: Sequence[str]) -> None:
        self.texts: list[str] = list(existing)
        self._matchers: dict[int, difflib.SequenceMatcher[str]] = {}
        self._existing = len(self.texts)
        self._grams: GramIndex | None = None
        self._gram_slot: IntArray = np.zeros(0, dtype=np.int64)
        self._added_grams: dict[int, GramIndex] = {}

    def cover(self, text: str, indices: Sequence[int], need: Sequence[int]) -> IntArray:
        """Upper bounds on difflib's matched count, ``text`` vs long pool texts.

        :class:`~curator.core.gramcover.GramIndex` over every long text of ``existing``
        (built on first use), and one per long text ADDed later; ``need[k]`` is the
        count below which pair ``k`` cannot matter (see ``GramIndex.cover_bounds``).
        """
        if self._grams is None:
            lengths = np.fromiter((len(t) for t in self.texts[: self._existing]), dtype=np.int64)
            long_ones = np.flatnonzero(lengths >= _AUTOJUNK_MIN_LEN)
            self._grams = GramIndex([self.texts[k] for k in long_ones.tolist()])
            self._gram_slot = np.full(self._existing, -1, dtype=np.int64)
            self._gram_slot[long_ones] = np.arange(long_ones.size)
        result = np.zeros(len(indices), dtype=np.int64)
        wanted = np.asarray(need, dtype=np.int64)
        places = np.asarray(indices, dtype=np.int64)
        inside = places < self._existing
        slots = self._gram_slot[places[inside]]
        if (slots < 0).any():
            raise ValueError("cover bounds are for long pool texts only")
        result[inside] = self._grams.cover_bounds(text, slots, wanted[inside])
        for k in np.flatnonzero(~inside).tolist():
            index = int(places[k])
            grams = self._added_grams.get(index)
            if grams is None:
                grams = self._added_grams[index] = GramIndex([self.texts[index]])
            zero = np.zeros(1, dtype=np.int64)
            result[k] = grams.cover_bounds(text, zero, wanted[k : k + 1])[0]
        return result

    def offer_exact(self, query: _Query, index: int) -> float:
        """Offer difflib's ratio of ``query.text`` and ``pool[index]`` to ``query``.

        Returns that ratio, or, when the pair cannot win, possibly only an upper bound
        on it that is already too low to improve the query's best.  It runs difflib's
        own ``get_matching_blocks`` recursion (the matcher's ``find_longest_match`` on
        each region) but stops as soon as the blocks found plus an upper bound on what
        the pending regions can still add cannot beat the query's best.  The matched
        count of a region is at most the LCS of its two slices (its blocks are a
        common subsequence of them), so stopping never hides a pair that could win;
        when it does not stop, the sum of the block sizes is the one difflib adds up
        (the order in which regions are processed does not change which blocks are
        found) and the ratio is difflib's formula on it, bit for bit.
        """
        a = query.text
        b = self.texts[index]
        matcher = self._matcher(index, a)
        total = len(a) + len(b)
        if total == 0:
            query.offer(1.0, index)
            return 1.0
        find = matcher.find_longest_match
        queue = [(0, len(a), 0, len(b), min(len(a), len(b)))]
        pending = queue[0][4]
        matched = 0
        while queue:
            # The region that could add the most first: it settles a loser soonest.
            largest = max(range(len(queue)), key=lambda n: queue[n][4])
            queue[largest], queue[-1] = queue[-1], queue[largest]
            alo, ahi, blo, bhi, cap = queue.pop()
            pending -= cap
            i, j, k = find(alo, ahi, blo, bhi)
            if k:
                matched += k
                if alo < i and blo < j:
                    cap = _region_cap(a, b, alo, i, blo, j)
                    queue.append((alo, i, blo, j, cap))
                    pending += cap
                if i + k < ahi and j + k < bhi:
                    cap = _region_cap(a, b, i + k, ahi, j + k, bhi)
                    queue.append((i + k, ahi, j + k, bhi, cap))
                    pending += cap
            bound = 2.0 * (matched + pending) / total
            if not query.could_improve(bound, index):
                return bound
        ratio = 2.0 * matched / total
        query.offer(ratio, index)
        return ratio

    def _matcher(self, index: int, a: str) -> difflib.SequenceMatcher[str]:
        matcher = self._matchers.get(index)
        if matcher is None:
            if len(self._matchers) >= _MATCHER_CACHE_SIZE:
                self._matchers.pop(next(iter(self._matchers)))
            matcher = difflib.SequenceMatcher(None, a, self.texts[index])
            self._matchers[index] = matcher
        else:
            matcher.set_seq1(a)
        return matcher


def _region_cap(a: str, b: str, alo: int, ahi: int, blo: int, bhi: int) -> int:
    """An upper bound on what difflib can match in ``a[alo:ahi]`` x ``b[blo:bhi]``."""
    cap = min(ahi - alo, bhi - blo)
    if cap <= _CHEAP_CAP:
        return cap
    return int(Indel.similarity(a[alo:ahi], b[blo:bhi])) // 2


class _Query:
    """One new text and its running best (``best_index < 0`` while nothing was seen)."""

    __slots__ = ("best", "best_index", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.best = -1.0
        self.best_index = -1

    def could_improve(self, bound: float, index: int) -> bool:
        """Whether a candidate with this upper bound might replace the current best."""
        return bound > self.best or (bound == self.best and index < self.best_index)

    def offer(self, ratio: float, index: int) -> None:
        if ratio > self.best or (ratio == self.best and index < self.best_index):
            self.best, self.best_index = ratio, index


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
) -> _Chunk:
    """Upper bounds for ``queries`` x ``pool[start:stop]``, and each query's seed.

    Every pair gets the character-multiset bound (:mod:`curator.core.charbound`, one
    matrix product), capped by the length bound ``min(len(a), len(b))``.  Each query is
    then seeded by the search itself (:func:`_search_row`), restricted to its
    :data:`_SEED_CANDIDATES` best multiset bounds (LCS-bounded) and, for a long query,
    the :data:`_SEED_LONG` long pool texts with the best LCS bounds among its
    :data:`_SEED_LONG_POOL` best multiset bounds: the best exact ratio among those
    picks starts the full search (:meth:`_Chunk.finish`).  What the seeding search
    proved (cover bounds, exact ratios, or the bound at which an exact ratio stopped)
    stays in the bounds.
    """
    texts = [q.text for q in queries]
    columns = pool.texts[start:stop]
    counts = histograms(columns)
    levels = Levels(np.minimum(query_counts.max(axis=0), counts.max(axis=0)))
    len_q = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    len_c = np.fromiter((len(t) for t in columns), dtype=np.int64, count=len(columns))
    bounds = ratio_bounds(levels.weighted(query_counts), levels.indicators(counts), len_q, len_c)

    take = min(_SEED_CANDIDATES, len(columns))
    top = np.argpartition(bounds, len(columns) - take, axis=1)[:, len(columns) - take :]
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), take)
    cols = top.ravel().astype(np.int64)
    lcs = _ratio_bounds(_pair_lcs(texts, columns, rows, cols, workers), len_q[rows] + len_c[cols])
    bounds[rows, cols] = np.minimum(bounds[rows, cols], lcs)
    done = np.zeros(bounds.shape, dtype=np.bool_)  # pairs with their LCS bound already
    done[rows, cols] = True
    # Long queries against their _SEED_LONG_POOL best long pool texts by the multiset
    # bound: the LCS now, so that the best of them by that bound can seed too.
    long_rows = np.flatnonzero(len_q >= _AUTOJUNK_MIN_LEN)
    long_cols = np.flatnonzero(len_c >= _AUTOJUNK_MIN_LEN)
    extra = np.zeros((len(texts), 0), dtype=np.int64)
    if long_rows.size and long_cols.size:
        take_pool = min(_SEED_LONG_POOL, long_cols.size)
        grid = bounds[np.ix_(long_rows, long_cols)]
        skip = long_cols.size - take_pool
        near = long_cols[np.argpartition(grid, skip, axis=1)[:, skip:]]
        pair_rows = np.repeat(long_rows, take_pool)
        pair_cols = near.ravel()
        doubled = _pair_lcs(texts, columns, pair_rows, pair_cols, workers)
        lcs = _ratio_bounds(doubled, len_q[pair_rows] + len_c[pair_cols])
        bounds[pair_rows, pair_cols] = np.minimum(bounds[pair_rows, pair_cols], lcs)
        done[pair_rows, pair_cols] = True
        take_long = min(_SEED_LONG, take_pool)
        tight = bounds[long_rows[:, None], near]
        best_long = np.argpartition(-tight, take_long - 1, axis=1)[:, :take_long]
        extra = np.full((len(texts), take_long), -1, dtype=np.int64)
        extra[long_rows] = np.take_along_axis(near, best_long, axis=1)
    # The seed: the search itself, restricted to those picks (long pool texts get
    # the cover bound as they reach the front: autojunk makes difflib's ratio of a
    # long text collapse far below its LCS bound, so an LCS-chosen long seed is often
    # a poor one).  The search writes what it proved back into the bounds.
    masked = np.empty(len(columns), dtype=np.float64)
    for row, query in enumerate(queries):
        picks = np.unique(np.concatenate([top[row], extra[row][extra[row] >= 0]]))
        masked.fill(-np.inf)
        masked[picks] = bounds[row, picks]
        _search_row(query, pool, masked, start, len_c, workers)
        bounds[row, picks] = masked[picks]

    return _Chunk(start, bounds, done, columns, len_c)


class _Chunk:
    """One chunk of ``existing`` columns after seeding, finished one query at a time."""

    def __init__(
        self,
        start: int,
        bounds: npt.NDArray[np.float64],
        done: npt.NDArray[np.bool_],
        columns: Sequence[str],
        lengths: IntArray,
    ) -> None:
        self.start = start
        self.bounds = bounds
        self.done = done
        self.columns = np.empty(len(columns), dtype=object)  # picks texts at C speed
        self.columns[:] = columns
        self.lengths = lengths

    def finish(self, row: int, query: _Query, pool: _Pool, workers: int) -> None:
        """LCS-bound the pairs that still reach the query's best, then search the row.

        Only pairs whose multiset bound reaches the best *now* get the (costlier) LCS
        bound; the others keep the multiset bound, a true upper bound too and already
        below a ratio the query has, so the search never visits them.
        """
        bounds = self.bounds[row]
        cols = np.flatnonzero((bounds >= query.best) & ~self.done[row])
        if cols.size:
            # One query against many texts: rapidfuzz prepares the query once.
            doubled = process.cdist(
                [query.text],
                self.columns[cols].tolist(),
                scorer=Indel.similarity,
                dtype=np.int64,
                workers=1,
            )[0]
            total = len(query.text) + self.lengths[cols]
            lcs = _ratio_bounds(np.asarray(doubled, dtype=np.int64), total)
            bounds[cols] = np.minimum(bounds[cols], lcs)
        _search_row(query, pool, bounds, self.start, self.lengths, workers)


def _search_row(
    query: _Query,
    pool: _Pool,
    row: npt.NDArray[np.float64],
    offset: int,
    lengths: IntArray,
    workers: int,
) -> None:
    """Fold the exact best over one chunk of pool columns into ``query``.

    ``row[c]`` is an upper bound for pool index ``offset + c`` (``-inf``: not a
    candidate here) and ``lengths[c]`` that text's length.  The candidates that could
    beat the query's best are visited by descending bound, then ascending index, and
    the exact ratio is computed (:meth:`_Pool.offer_exact`, which stops early once a
    pair cannot win) only while the next bound can beat, or tie at an earlier index,
    the best ratio found so far.  Long pool texts (autojunk) reaching the front get
    the cover bound (:mod:`curator.core.gramcover`), with the next ones that could
    still win in growing batches, and re-enter through a queue ordered the same way.
    Every tighter bound and exact ratio found is written back into ``row``.
    """
    if row.size == 0:
        return
    candidates = np.flatnonzero(row >= query.best)
    if candidates.size == 0:
        return
    order = np.lexsort((candidates, -row[candidates]))
    columns = candidates[order]
    bounds = row[columns].tolist()
    indices = (columns + offset).tolist()
    sizes = lengths[columns].tolist()
    is_long = [size >= _AUTOJUNK_MIN_LEN for size in sizes]
    long_positions = [k for k, flag in enumerate(is_long) if flag]
    covered_upto = 0  # long_positions[:covered_upto] have left the list for the queue
    batch = _COVER_BATCH
    queue: list[tuple[float, int]] = []  # (-cover bound, pool index), a heap
    position = 0
    while True:
        while (
            position < len(bounds)
            and is_long[position]
            and covered_upto > 0
            and position <= long_positions[covered_upto - 1]
        ):
            position += 1  # already in the queue
        head = (-bounds[position], indices[position]) if position < len(bounds) else None
        if queue and (head is None or queue[0] < head):
            neg_bound, index = heapq.heappop(queue)
            if not query.could_improve(-neg_bound, index):
                break
        elif head is not None:
            if not query.could_improve(bounds[position], indices[position]):
                break
            if is_long[position]:
                chosen = long_positions[covered_upto : covered_upto + batch]
                covered_upto += len(chosen)
                batch *= 2
                picked = [k for k in chosen if query.could_improve(bounds[k], indices[k])]
                totals = [len(query.text) + sizes[k] for k in picked]
                # Below this many matched characters a pair cannot reach the best
                # (two less than the exact threshold: float rounding cannot matter).
                need = [max(0, int(query.best * total / 2) - 2) for total in totals]
                matched = pool.cover(query.text, [indices[k] for k in picked], need)
                for k, total, count in zip(picked, totals, matched.tolist(), strict=True):
                    tight = min(bounds[k], 2 * count / total)
                    row[columns[k]] = tight
                    heapq.heappush(queue, (-tight, indices[k]))
                continue
            index = indices[position]
            position += 1
        else:
            break
        if index != query.best_index:
            row[index - offset] = pool.offer_exact(query, index)


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

    The pool's ``existing`` part is bounded and seeded for all new texts at once in
    column chunks (memory stays bounded for any pool size); the ADDed part depends on
    earlier decisions, so it is searched one new text at a time, in order, before the
    rest of the last chunk.  The best is a maximum with the earliest index winning
    ties, whatever order the pairs are offered in, so the searches combine exactly.
    """
    queries = [_Query(text) for text in new]
    if not queries:
        return []
    pool = _Pool(existing)
    n_existing = len(pool.texts)
    query_counts = histograms([q.text for q in queries])

    # Every chunk but the last is finished for all queries at once (memory stays
    # bounded); the last one query by query, after its search of the ADDed texts.
    last: _Chunk | None = None
    spans = list(_chunks(n_existing, _CHUNK))
    for number, (start, stop) in enumerate(spans):
        chunk = _seeded_bounds(queries, pool, start, stop, query_counts, workers)
        if number == len(spans) - 1:
            last = chunk
            break
        for row_index, query in enumerate(queries):
            chunk.finish(row_index, query, pool, workers)

    decisions: list[Decision] = []
    added: list[str] = []
    for row_index, query in enumerate(queries):
        for start, stop in _chunks(len(added), _CHUNK):
            columns = added[start:stop]
            row = _bounds([query.text], columns, workers)[0]
            lengths = np.fromiter((len(t) for t in columns), dtype=np.int64, count=len(columns))
            _search_row(query, pool, row, n_existing + start, lengths, workers)
        if last is not None:
            # A near-duplicate ADDed earlier in the batch raises the best before the
            # last chunk's LCS pass, which then bounds far fewer pairs.
            last.finish(row_index, query, pool, workers)
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
