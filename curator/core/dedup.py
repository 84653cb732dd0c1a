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
once.  Each new text is seeded first by the exact ratios of its two best guesses by
word overlap (:mod:`curator.core.dedup_hint`: a guess, not a bound; it finds the
parts of a long merge of observations, which the character bounds rank behind every
longer pool text), then by the search below, run on a few picks only: its best
multiset bounds, LCS-bounded, of which only the best gets its exact ratio.  The
LCS bound (rapidfuzz) is then computed only for the pairs whose multiset bound still
reaches that seed, and the cover bound only for long texts that reach the front of the
search.  Every bound is a true upper bound on
difflib's ratio, so which of them a pair ends up with changes the time, never the
answer.

Search order
------------
For each new text the candidates are visited in descending bound order (ties by
ascending pool index) and the exact ratio is computed only while the next bound
could still beat, or tie at an earlier index, the best exact ratio found so far.
That yields the exact maximum and the exact earliest argmax, which the contract
needs even for ADD decisions (``.ratio`` is always the best ratio over the pool).
Exact ratios are difflib's: the bounds only decide which pairs can be skipped.  An
exact ratio runs difflib's own block recursion and stops as soon as the blocks found
plus the LCS of each region still to search cannot beat the best
(:meth:`Pool.offer_exact`): most visited pairs lose, and a loser is usually known
after a few block searches instead of ten.  Regions whose matched count the LCS
settles need no block search: none beside a block as long as its region's LCS, none
in a region with no common character, and one character (its exact count) in a region
whose LCS is 1 (:func:`curator.core.dedup_search.settled`).  Each block is found by
difflib's own ``find_longest_match`` compiled (:mod:`curator.core.difflib_engine`:
the same code, so the same block, ties included).  Where the compiled module is not
installed, a pool text shorter than 200 characters has its blocks found by substring
search (:func:`curator.core.dedup_match.longest_match`: the same block, about twice as
fast as difflib's in Python; one test of a three-character piece rules out several
starts at once, and the search ends at a block as long as the region's LCS), and a
longer one by difflib's method, whose autojunk makes its blocks differ from plain
common substrings.  The bounds must never be below difflib's ratio (a loose bound
merely costs time), which is what the proofs above and the tests establish.

What each part buys
-------------------
Gate CPU seconds on real observations (``benchmarks/bench_dedup.py --parts``, the
development source, 200 new x 10,000 existing unless noted, a loaded machine: under
about 1.3x is noise; the full table, at 100 x 1,000 too, is in
``benchmarks/RESULTS-dedup.md``); switching a part off never changes a decision:

===========================  ========================================================
part                         what it buys
===========================  ========================================================
multiset + LCS bounds        the search itself: without them every pair is exact
word-overlap guesses         long merges 1.49 -> 0.76 s; costs 0.1-0.15 s on the
                             mixes without long texts (its word index)
one seed pair                fresh texts 1.03 -> 0.86 s (the seeding no longer
                             searches all 64 picks)
ADDed texts in chunk order   fresh texts 0.93 -> 0.86 s (0.67 -> 0.58 s when measured
                             at a lower load)
early stop of exact ratios   fresh texts 1.37 -> 0.86 s, all kinds 0.90 -> 0.75 s
compiled block search        held-out fresh texts 1.35 -> 1.16 s (0.42 -> 0.33 s at
                             100 x 1,000), development 0.59 -> 0.57 s; the other
                             kinds 0.92-1.05x (in one process, alternating, best of
                             5, an idle machine)
block search by substring    (where the compiled matcher is not installed) fresh
                             texts 1.75 -> 0.86 s, all kinds 1.07 -> 0.75 s
settled regions, pieces      fresh texts 1.03 -> 0.79 s, held-out 2.78 -> 2.13 s
                             (against the gate without them, in one process; block
                             searches 16,631 -> 8,644 and 44,951 -> 30,046)
cover bound (long texts)     nothing on real observations (few reach 200
                             characters), 2.2x on the generated template mix, whose
                             texts are often long
===========================  ========================================================

CPU time is the measure throughout: the machine the numbers come from is shared.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

from curator.core.charbound import histograms
from curator.core.dedup_search import Pool, Query, search_row
from curator.core.dedup_seed import Chunk, lcs_bounds, seed_chunk
from curator.core.difflib_engine import SequenceMatcher
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

#: Pool columns per rapidfuzz ``cdist`` call: bounds the bound matrix to
#: ``len(new) * _CHUNK`` int32 cells however large the pool is.
_CHUNK: Final = 16384
#: Texts ADDed earlier in the batch (best bound first) that get their exact ratio
#: before the last chunk's LCS pass; the others are searched together with that chunk.
ADDED_FIRST: Final = 1


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
    """The gate's similarity of one pair: difflib's ratio, in the contract's argument order
    (computed by the compiled matcher where it is installed: the same float)."""
    return SequenceMatcher(None, new_text, pool_text).ratio()


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
            ratio = difflib.SequenceMatcher(None, text, other).ratio()  # the standard library's
            if ratio > best:
                best, best_index = ratio, index
        decision = _decide(best, best_index, skip, update)
        decisions.append(decision)
        if decision.action == "ADD":
            pool.append(text)
    return decisions


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
    grow: bool = True,
) -> list[Decision]:
    """Decide SKIP / UPDATE / ADD for each new text; same result as :func:`reference_gate`.

    ``best >= skip`` -> SKIP the new text (it is already known); ``best >= update`` ->
    UPDATE the target (see :func:`merge_importance`); otherwise ADD, and the new text
    joins the pool for the texts after it (``grow=False``: it does not; each text is
    then decided against ``existing`` alone, as if it came alone).  ``workers`` is
    passed to rapidfuzz (``-1``: all cores) and affects speed only.

    The pool's ``existing`` part is bounded and seeded for all new texts at once in
    column chunks (memory stays bounded for any pool size); the ADDed part depends on
    earlier decisions, so it is searched one new text at a time, in order: its best
    bound first (before the last chunk's LCS pass), the rest together with the last
    chunk.  The best is a maximum with the earliest index winning ties, whatever order
    the pairs are offered in, so the searches combine exactly.
    """
    queries = [Query(text) for text in new]
    if not queries:
        return []
    pool = Pool(existing)
    n_existing = len(pool.texts)
    query_counts = histograms([q.text for q in queries])

    # Every chunk but the last is finished for all queries at once (memory stays
    # bounded); the last one query by query, after its search of the ADDed texts.
    last: Chunk | None = None
    spans = list(_chunks(n_existing, _CHUNK))
    for number, (start, stop) in enumerate(spans):
        chunk = seed_chunk(queries, pool, start, stop, query_counts, workers)
        if number == len(spans) - 1:
            last = chunk
            break
        for row_index, query in enumerate(queries):
            chunk.finish(row_index, query, pool, workers)

    decisions: list[Decision] = []
    added: list[str] = []
    added_lengths: list[int] = []
    for row_index, query in enumerate(queries):
        row = lcs_bounds([query.text], added, workers)[0] if added else np.zeros(0)
        lengths = np.asarray(added_lengths, dtype=np.int64)
        if last is None:
            search_row(query, pool, row, n_existing, lengths, workers)
        else:
            # The ADDed texts with the best bounds first: a near-duplicate from the same
            # batch raises the best before the last chunk's LCS pass, which then bounds
            # far fewer pairs; the rest of them join that chunk's search, in one order.
            search_row(query, pool, row, n_existing, lengths, workers, ADDED_FIRST)
            last.finish(row_index, query, pool, workers, row, lengths)
        decision = _decide(query.best, query.best_index, skip, update)
        decisions.append(decision)
        if decision.action == "ADD" and grow:
            added.append(query.text)
            added_lengths.append(len(query.text))
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
    bounds = lcs_bounds([text], existing, workers)[0]
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
