"""difflib's ``SequenceMatcher``, compiled where it can be.

The dedup gate's contract is the standard library's ``difflib.SequenceMatcher`` ratio, and
on its hardest batches (texts close to nothing in memory) half of the gate's time was the
block search (``find_longest_match``), a loop in Python.  ``cydifflib`` is the same module
compiled with Cython: the same code, so the same blocks, ties and ratios to the last bit
(``tests/core/test_difflib_engine.py`` holds the two equal on generated texts, long ones
with difflib's popular characters included).  It finds a block 2 to 3.5 times faster than
the gate's own search in Python (:mod:`curator.core.dedup_match`), and a whole ratio
about 5 times faster than difflib (``benchmarks/RESULTS-dedup.md``).

It is a dependency wherever it publishes a wheel (CPython 3.11 to 3.13 on Linux, macOS and
Windows); elsewhere the standard library's matcher serves and :data:`COMPILED` is false,
so the gate falls back to its search in Python.  Nothing here changes a result: only how
fast it is found.  The plain reference loop (:func:`curator.core.dedup.reference_gate`)
always uses the standard library's, since it *is* the contract.
"""

from __future__ import annotations

import difflib
from typing import Final

__all__ = ["COMPILED", "SequenceMatcher"]

try:
    import cydifflib as _compiled
except ImportError:  # no wheel for this Python: the standard library's
    _compiled = None

#: Whether :data:`SequenceMatcher` is the compiled one.
COMPILED: Final = _compiled is not None
#: ``difflib.SequenceMatcher``'s class, compiled where available.
SequenceMatcher: Final[type[difflib.SequenceMatcher[str]]] = (
    _compiled.SequenceMatcher if _compiled is not None else difflib.SequenceMatcher
)
