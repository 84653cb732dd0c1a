"""difflib's longest matching block, found by substring search, for short pool texts.

The dedup gate's exact ratios run difflib's own block recursion
(:meth:`curator.core.dedup_search.Pool.offer_exact`); almost all of its time is spent
in ``SequenceMatcher.find_longest_match``, a Python loop over every pair of equal
characters of the two regions.  For a second sequence shorter than 200 characters
(difflib's autojunk threshold) and no junk function, that method returns the longest
common substring of ``a[alo:ahi]`` and ``b[blo:bhi]`` that starts earliest in ``a``
and, among those, earliest in ``b`` (``(alo, blo, 0)`` when there is none): ``b2j``
then holds every character of ``b``, so the dynamic programme finds the longest run
ending at the earliest ``(i, j)``, and the extension loops cannot grow a run that is
already maximal.

:func:`longest_match` finds the same block with at most one substring search per
position of ``a`` (in C), which is about twice as fast on the pool's texts:

* it walks ``i`` up from ``alo`` keeping the longest size found so far, ``size``, and
  asks whether ``a[i:i + size + 1]`` occurs in ``b``'s region; only then can a longer
  block start at ``i``, and it is grown one character at a time (a longer occurrence
  is an occurrence of the shorter piece, so the search resumes where that was found);
* the size only grows at the first ``i`` where a longer block starts, so the block
  kept is the earliest in ``a`` of the largest size, and ``str.find`` returns the
  earliest occurrence in ``b``, as difflib does;
* once ``size >= PIECE``, the starts ``i .. i + s`` (``s = size + 1 - PIECE``) are
  ruled out together when the piece ``a[i + s : i + size + 1]`` (``PIECE``
  characters) does not occur in ``b``'s region: a block of ``size + 1`` characters
  starting at ``i' <= i + s`` covers ``a[i' : i' + size + 1]``, which contains that
  piece (``i' <= i + s`` and ``i' + size + 1 >= i + size + 1``), and a block occurs in
  the region only if every piece of it does.  No start skipped could have held a
  longer block, so the block kept is the same; where the piece does occur, those
  starts are tried one by one as before.  The piece ends at ``i + size + 1 <= ahi``
  (``i < ahi - size``), so it lies in ``a``'s region;
* given ``limit``, an upper bound on the longest common substring of the regions (the
  caller's cap on the region's LCS), it stops at the first block of ``limit``
  characters: no later start can hold a longer one, so the block kept is the same.

Long pool texts keep difflib's own method: their popular characters (autojunk) make
difflib's blocks differ from plain common substrings.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PIECE", "PLAIN_MAX_LEN", "longest_match"]

#: Second sequences shorter than this have no popular characters in difflib.
PLAIN_MAX_LEN: Final = 200
#: Once the best block has ``size >= PIECE`` characters, one test of a piece of
#: ``PIECE`` characters rules out ``size + 2 - PIECE`` starts at once (module docstring).
PIECE: Final = 3


def longest_match(
    a: str, b: str, alo: int, ahi: int, blo: int, bhi: int, limit: int | None = None
) -> tuple[int, int, int]:
    """difflib's ``find_longest_match(alo, ahi, blo, bhi)`` for ``len(b) < 200``, no junk.

    ``limit``: an upper bound on the block's size (such as the LCS of the region), if
    known: the search ends once it has a block that long.
    """
    region = b[blo:bhi]
    best_i, best_j, size = alo, blo, 0
    i, stop = alo, ahi  # stop = ahi - size: no longer block starts at or after it
    if limit is None:
        limit = ahi - alo
    while i < stop:
        skip = size + 1 - PIECE  # a longer block starting in i..i + skip holds the piece
        if skip > 0:
            if a[i + skip : i + size + 1] not in region:
                i += skip + 1
                continue
            last = min(i + skip + 1, stop)
        else:
            last = i + 1
        while i < last:
            if a[i : i + size + 1] in region:  # the operator: cheaper than a method call
                find = region.find
                j = find(a[i : i + size + 1])
                size += 1
                while i + size < ahi:
                    found = find(a[i : i + size + 1], j)
                    if found < 0:
                        break
                    j = found
                    size += 1
                best_i, best_j, stop = i, blo + j, ahi - size if size < limit else i
                i += 1
                break
            i += 1
    return best_i, best_j, size
