"""Bounds for a chunk of existing texts, and each new text's seed.

:func:`seed_chunk` bounds every pair of new texts x one chunk of existing texts by
the character multiset (:mod:`curator.core.charbound`), then seeds each new text's
search: the exact ratios of its best guesses by word overlap
(:mod:`curator.core.dedup_hint`), then the search itself restricted to its best
multiset bounds (LCS-bounded) and, for a long text, its best long pool texts.
:class:`Chunk` finishes the search of one new text over the chunk.  Which pairs get
which bound changes the time only, never the answer (:mod:`curator.core.dedup`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import Indel

from curator.core.charbound import Levels, histograms, ratio_bounds
from curator.core.dedup_hint import WordIndex
from curator.core.dedup_search import Pool, Query, search_row

__all__ = ["Chunk", "lcs_bounds", "seed_chunk"]

#: Below this many pairs, rapidfuzz runs on one thread.
PARALLEL_CELLS: Final = 20_000
#: Candidates per new text (by the character-multiset bound) whose LCS bound is
#: computed to pick the seed: the pair whose exact ratio starts the search.
SEED_CANDIDATES: Final = 64
#: Pool texts (best word overlap, :mod:`curator.core.dedup_hint`) whose exact ratio
#: seeds each new text's search.
HINTS: Final = 2
#: New texts at least this many times longer than the chunk's median text get them,
HINT_LENGTH: Final = 1.5
#: from pool texts with at least this share of their own words in the new text (a part
#: of a merge, or a text with a clause appended; a fresh text has none to offer).
HINT_CONTAINED: Final = 0.6

#: Pairs among those picks that get their exact ratio in the seeding search (best
#: bound first): the seed is the best of them.  More raised the seed a little but paid
#: for exact ratios that the full search, with its LCS bounds, mostly proves needless.
SEED_PAIRS: Final = 1

IntArray = npt.NDArray[np.int64]


def lcs_bounds(
    queries: Sequence[str], targets: Sequence[str], workers: int
) -> npt.NDArray[np.float64]:
    """LCS upper bounds on the difflib ratio, ``queries`` x ``targets``, as float64."""
    if len(queries) * len(targets) < PARALLEL_CELLS:
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


def as_ratios(doubled: IntArray, total: IntArray) -> npt.NDArray[np.float64]:
    """``doubled / total`` as float64, 1.0 for two empty strings (as difflib says)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        bounds = doubled.astype(np.float64) / total
    bounds[total == 0] = 1.0
    return bounds


def pair_lcs(
    queries: Sequence[str], targets: Sequence[str], rows: IntArray, cols: IntArray, workers: int
) -> IntArray:
    """``2 * LCS`` of the pairs ``(queries[rows[k]], targets[cols[k]])``."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    if rows.size < PARALLEL_CELLS:
        workers = 1
    left = [queries[r] for r in rows.tolist()]
    right = [targets[c] for c in cols.tolist()]
    doubled = process.cpdist(left, right, scorer=Indel.similarity, dtype=np.int64, workers=workers)
    return np.asarray(doubled, dtype=np.int64)


def seed_chunk(
    queries: Sequence[Query],
    pool: Pool,
    start: int,
    stop: int,
    query_counts: npt.NDArray[np.int32],
    workers: int,
) -> Chunk:
    """Upper bounds for ``queries`` x ``pool[start:stop]``, and each query's seed.

    Every pair gets the character-multiset bound (:mod:`curator.core.charbound`, one
    matrix product), capped by the length bound ``min(len(a), len(b))``.  Each query is
    then seeded by the exact ratios of its :data:`HINTS` best guesses by word overlap
    (:mod:`curator.core.dedup_hint`; only pool texts most of whose words it has) and
    by the search itself (:func:`search_row`), restricted to its
    :data:`SEED_CANDIDATES` best multiset bounds (LCS-bounded) and to the
    :data:`SEED_PAIRS` best of those: the best exact ratio found starts the full
    search (:meth:`Chunk.finish`).
    (A pass that also gave long queries their best long pool texts by the LCS bound
    went: with the word-overlap guesses it no longer paid, see
    ``benchmarks/RESULTS-dedup.md``.)  What the seeding search
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

    take = min(SEED_CANDIDATES, len(columns))
    top = np.argpartition(bounds, len(columns) - take, axis=1)[:, len(columns) - take :]
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), take)
    cols = top.ravel().astype(np.int64)
    lcs = as_ratios(pair_lcs(texts, columns, rows, cols, workers), len_q[rows] + len_c[cols])
    bounds[rows, cols] = np.minimum(bounds[rows, cols], lcs)
    done = np.zeros(bounds.shape, dtype=np.bool_)  # pairs with their LCS bound already
    done[rows, cols] = True
    # The seed: the search itself, restricted to those picks (long pool texts get
    # the cover bound as they reach the front: autojunk makes difflib's ratio of a
    # long text collapse far below its LCS bound, so an LCS-chosen long seed is often
    # a poor one).  The search writes what it proved back into the bounds.
    masked = np.empty(len(columns), dtype=np.float64)
    # Only a text clearly longer than the chunk's typical text can contain one (a
    # merge, an appended clause); for the others the multiset picks find the best and
    # the word index would only cost its construction.
    hinted = len_q >= HINT_LENGTH * float(np.median(len_c))
    words = WordIndex(columns) if HINTS and hinted.any() else None
    for row, query in enumerate(queries):
        if words is not None and hinted[row]:
            # The best guesses by word overlap get their exact ratio first: the search
            # below starts from their best instead of from the first long pick.
            for column in words.best(query.text, HINTS, HINT_CONTAINED).tolist():
                if query.could_improve(bounds[row, column], start + column):
                    bounds[row, column] = pool.offer_exact(query, start + column)
        picks = top[row]
        masked.fill(-np.inf)
        masked[picks] = bounds[row, picks]
        search_row(query, pool, masked, start, len_c, workers, SEED_PAIRS)
        bounds[row, picks] = masked[picks]

    return Chunk(start, bounds, done, columns, len_c)


class Chunk:
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

    def finish(
        self,
        row: int,
        query: Query,
        pool: Pool,
        workers: int,
        after: npt.NDArray[np.float64] | None = None,
        after_lengths: IntArray | None = None,
    ) -> None:
        """LCS-bound the pairs that still reach the query's best, then search the row.

        Only pairs whose multiset bound reaches the best *now* get the (costlier) LCS
        bound; the others keep the multiset bound, a true upper bound too and already
        below a ratio the query has, so the search never visits them.  ``after`` holds
        bounds for the pool indices that follow this chunk (the texts ADDed earlier in
        the batch, when this chunk ends ``existing``): they are searched in the same
        descending order, so no pair is paid for that a better one would have pruned.
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
            lcs = as_ratios(np.asarray(doubled, dtype=np.int64), total)
            bounds[cols] = np.minimum(bounds[cols], lcs)
        if after is not None and after_lengths is not None and after.size:
            bounds = np.concatenate([bounds, after])
            lengths = np.concatenate([self.lengths, after_lengths])
        else:
            lengths = self.lengths
        search_row(query, pool, bounds, self.start, lengths, workers)
