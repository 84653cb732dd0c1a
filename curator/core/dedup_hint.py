"""Word overlap: a cheap guess at each new text's best pool text, to seed the search.

The gate's search computes exact difflib ratios in descending order of an upper bound
and stops once no bound can beat the best ratio found so far; the higher that best is
from the start, the fewer exact ratios the search pays.  For most new texts the
character bounds themselves point at the best pool text, but not for a long text that
merges two or three observations: against such a text nearly every shorter pool text
reaches its length bound, so the character bounds rank the pool by length and the
merged observations are not among the first picks.  The search then paid an exact
ratio (a long one: difflib's cost grows with the new text's length) for every pick
before it met a pool text that was part of the merge.

The share of words two texts have in common (``2 * shared / (words_a + words_b)``,
over word sets) finds those parts at once: a merged observation shares all its words
with the merge.  It is a *guess*, never a bound: the texts it picks get their exact
ratio first, and the search afterwards is unchanged, so it decides which pairs are
computed first, never the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["WordIndex"]

IntArray = npt.NDArray[np.int64]


class WordIndex:
    """Word sets of the pool texts, as an inverted index (word -> pool texts with it)."""

    def __init__(self, texts: Sequence[str]) -> None:
        vocabulary: dict[str, int] = {}
        sets = [{vocabulary.setdefault(w, len(vocabulary)) for w in t.split()} for t in texts]
        sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
        words = np.fromiter((w for s in sets for w in s), dtype=np.int64, count=int(sizes.sum()))
        owners = np.repeat(np.arange(len(sets), dtype=np.int64), sizes)
        order = np.argsort(words, kind="stable")
        self._owners = owners[order]
        self._starts = np.searchsorted(words[order], np.arange(len(vocabulary) + 1))
        self._vocabulary = vocabulary
        self._sizes = sizes

    def best(self, text: str, take: int, contained: float = 0.0) -> IntArray:
        """The (at most) ``take`` pool texts sharing the largest share of words with ``text``.

        Best first; pool texts sharing no word, or fewer than ``contained`` of their own
        words, are never returned.
        """
        if take <= 0 or self._sizes.size == 0:
            return np.zeros(0, dtype=np.int64)
        own = set(text.split())
        ids = [self._vocabulary[w] for w in own if w in self._vocabulary]
        if not ids:
            return np.zeros(0, dtype=np.int64)
        postings = [self._owners[self._starts[i] : self._starts[i + 1]] for i in ids]
        shared = np.bincount(np.concatenate(postings), minlength=self._sizes.size)
        score = shared / (len(own) + self._sizes)
        score[shared < np.maximum(contained * self._sizes, 1)] = -1.0
        take = min(take, int(np.count_nonzero(score >= 0)))
        if take == 0:
            return np.zeros(0, dtype=np.int64)
        top = np.argpartition(-score, take - 1)[:take]
        return top[np.argsort(-score[top], kind="stable")].astype(np.int64)
