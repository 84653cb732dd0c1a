"""The search of the dedup gate: exact difflib ratios, paid only where a pair can win.

:class:`Pool` is the growing pool (the existing texts, then the texts ADDed earlier in
the call) with its caches: difflib's index of each long pool text (short ones need
none: :mod:`curator.core.dedup_match` finds their blocks) and the cover bound's q-gram
index of the long ones.  :class:`Query` is one new text and its running best.
:func:`search_row` visits the candidates of one new text in descending bound order
and pays an exact ratio (:meth:`Pool.offer_exact`, which stops as soon as a pair
cannot win) only while the next bound could still beat the best; see
:mod:`curator.core.dedup` for why the bounds are sound and the result exact.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Indel

from curator.core import difflib_engine
from curator.core.dedup_match import PLAIN_MAX_LEN, longest_match
from curator.core.gramcover import GramIndex

__all__ = ["AUTOJUNK_MIN_LEN", "Pool", "Query", "region_cap", "search_row", "settled"]

#: difflib switches on its autojunk heuristic for second sequences this long.
AUTOJUNK_MIN_LEN: Final = 200
#: Cached ``SequenceMatcher`` objects (one per pool text, holding difflib's index of
#: the pool text), at most this many, and holding pool texts of at most
#: ``MATCHER_CACHE_CHARS`` characters together: a compiled matcher takes about 3 KB
#: plus 12 bytes a character of its text (6 KB at 110 characters, 243 KB at 20,000),
#: so the cache stays under about 50 MB while a gate runs, whatever the texts' length.
MATCHER_CACHE_SIZE: Final = 8192
MATCHER_CACHE_CHARS: Final = 2_000_000
#: Regions whose shorter side has at most this many characters (but more than one) are
#: bounded by that length, the others by their LCS (a one-character side is checked).
#: 4 saved rapidfuzz calls; with settled regions (:func:`settled`) exact caps pay more.
CHEAP_CAP: Final = 1
#: Long candidates given the cover bound at once, at first (then twice as many).
COVER_BATCH: Final = 32
#: Parts of the search that can be switched off to measure what they buy
#: (``benchmarks/bench_dedup.py --parts``); switching one off never changes a decision.
EARLY_STOP = True
COVER = True
PLAIN_FIND = True
#: difflib's block search, compiled (:mod:`curator.core.difflib_engine`), for every pool
#: text; where it is not installed, the search in Python (``PLAIN_FIND``) and difflib's.
COMPILED_FIND = difflib_engine.COMPILED

IntArray = npt.NDArray[np.int64]


class Pool:
    """The growing pool, with lazily built per-text caches used by the search."""

    def __init__(self, existing: Sequence[str]) -> None:
        self.texts: list[str] = list(existing)
        self._matchers: dict[int, difflib.SequenceMatcher[str]] = {}
        self._matcher_chars = 0  # the length of the pool texts in ``_matchers``
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
            long_ones = np.flatnonzero(lengths >= AUTOJUNK_MIN_LEN)
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

    def offer_exact(self, query: Query, index: int) -> float:
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

        Some regions need no block search at all.  A block as long as its region's cap
        (an upper bound on the region's LCS) is a longest common subsequence of the
        region, so the regions beside it have no common character and add nothing
        (any one, with the block, would make a longer common subsequence).  A region
        whose cap is 0 adds nothing, and one whose cap is 1 adds exactly 1 when the
        pool text has no popular characters (:func:`settled`).  Each region's cap also
        ends its block search once a block that long is found
        (:func:`~curator.core.dedup_match.longest_match`'s ``limit``).
        """
        a = query.text
        b = self.texts[index]
        total = len(a) + len(b)
        if total == 0:
            query.offer(1.0, index)
            return 1.0
        short = len(b) < AUTOJUNK_MIN_LEN  # no popular characters: blocks are substrings
        # difflib's block: compiled, else (short texts) by substring search, else difflib's
        plain = not COMPILED_FIND and PLAIN_FIND and len(b) < PLAIN_MAX_LEN
        find = None if plain else self._matcher(index, a).find_longest_match
        # Regions as (-cap, alo, ahi, blo, bhi), a heap: the region that could add the
        # most first, it settles a loser soonest.
        pending = min(len(a), len(b))
        queue = [(-pending, 0, len(a), 0, len(b))]
        matched = 0
        best, best_index = query.best, query.best_index
        while queue:
            neg_cap, alo, ahi, blo, bhi = heapq.heappop(queue)
            pending += neg_cap
            if find is None:
                i, j, k = longest_match(a, b, alo, ahi, blo, bhi, -neg_cap)
            else:
                i, j, k = find(alo, ahi, blo, bhi)
            # k == cap: the block is a longest common subsequence of the region, so the
            # regions beside it have none (see settled).
            if k and k != -neg_cap:
                matched += k
                if alo < i and blo < j:
                    cap = region_cap(a, b, alo, i, blo, j)
                    if settled(cap, short):
                        matched += cap
                    else:
                        heapq.heappush(queue, (-cap, alo, i, blo, j))
                        pending += cap
                if i + k < ahi and j + k < bhi:
                    cap = region_cap(a, b, i + k, ahi, j + k, bhi)
                    if settled(cap, short):
                        matched += cap
                    else:
                        heapq.heappush(queue, (-cap, i + k, ahi, j + k, bhi))
                        pending += cap
            else:
                matched += k
            bound = 2.0 * (matched + pending) / total
            # Not query.could_improve(bound, index): the best does not move in here.
            if EARLY_STOP and (bound < best or (bound == best and index >= best_index)):
                return bound
        ratio = 2.0 * matched / total
        query.offer(ratio, index)
        return ratio

    def _matcher(self, index: int, a: str) -> difflib.SequenceMatcher[str]:
        matcher = self._matchers.get(index)
        if matcher is None:
            size = len(self.texts[index])
            while self._matchers and (
                len(self._matchers) >= MATCHER_CACHE_SIZE
                or self._matcher_chars + size > MATCHER_CACHE_CHARS
            ):
                oldest = next(iter(self._matchers))
                del self._matchers[oldest]
                self._matcher_chars -= len(self.texts[oldest])
            self._matcher_chars += size
            kind = difflib_engine.SequenceMatcher if COMPILED_FIND else difflib.SequenceMatcher
            matcher = kind(None, a, self.texts[index])
            self._matchers[index] = matcher
        else:
            matcher.set_seq1(a)
        return matcher


def settled(cap: int, short: bool) -> bool:
    """Whether a region capped at ``cap`` by :func:`region_cap` adds exactly ``cap``.

    True for ``cap == 0``: nothing can match.  True for ``cap == 1`` when the second
    sequence is shorter than 200 characters (no popular characters): a cap of 1 is
    always the region's LCS (a length cap is 1 only where a side has one character,
    and that one is checked), so a character is common and ``find_longest_match``
    returns a block of exactly 1; the regions beside it then have no common character
    (with the block it would make a common subsequence of 2), so difflib adds 1 there,
    whatever the block's place.
    """
    return cap == 0 or (cap == 1 and short)


def region_cap(a: str, b: str, alo: int, ahi: int, blo: int, bhi: int) -> int:
    """An upper bound on what difflib can match in ``a[alo:ahi]`` x ``b[blo:bhi]``.

    The LCS of the region (difflib's blocks there are a common subsequence of it),
    except where the shorter side has 2 to :data:`CHEAP_CAP` characters: then that
    length.  A one-character side is looked up in the other, so a cap of 1 is always
    the LCS (:func:`settled` relies on it).
    """
    cap = min(ahi - alo, bhi - blo)
    if cap == 1:
        if ahi - alo == 1:
            return int(b.find(a[alo], blo, bhi) >= 0)
        return int(a.find(b[blo], alo, ahi) >= 0)
    if cap <= CHEAP_CAP:
        return cap
    return int(Indel.similarity(a[alo:ahi], b[blo:bhi])) // 2


class Query:
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


def search_row(
    query: Query,
    pool: Pool,
    row: npt.NDArray[np.float64],
    offset: int,
    lengths: IntArray,
    workers: int,
    budget: int | None = None,
) -> None:
    """Fold the exact best over one chunk of pool columns into ``query``.

    ``row[c]`` is an upper bound for pool index ``offset + c`` (``-inf``: not a
    candidate here) and ``lengths[c]`` that text's length.  The candidates that could
    beat the query's best are visited by descending bound, then ascending index, and
    the exact ratio is computed (:meth:`Pool.offer_exact`, which stops early once a
    pair cannot win) only while the next bound can beat, or tie at an earlier index,
    the best ratio found so far.  Long pool texts (autojunk) reaching the front get
    the cover bound (:mod:`curator.core.gramcover`), with the next ones that could
    still win in growing batches, and re-enter through a queue ordered the same way.
    ``budget``: at most this many pairs get an exact ratio (the seeding search).  Every
    tighter bound and exact ratio found is written back into ``row``.
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
    sizes = lengths[columns]
    long_mask = sizes >= AUTOJUNK_MIN_LEN if COVER else np.zeros(sizes.size, dtype=np.bool_)
    is_long: list[bool] = long_mask.tolist()
    long_positions: list[int] = np.flatnonzero(long_mask).tolist()
    covered_upto = 0  # long_positions[:covered_upto] have left the list for the queue
    batch = COVER_BATCH
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
                totals = [len(query.text) + int(sizes[k]) for k in picked]
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
            if budget is not None:
                if budget <= 0:
                    break
                budget -= 1
            row[index - offset] = pool.offer_exact(query, index)
