"""Counts in words: "1 episode", "2 episodes", "1 candidate is", "4 candidates are".

One helper for the window, the CLI and the pipeline's messages, instead of "episode(s)"
in each f-string: a person reads "1 episode(s)" as the program not knowing how many.
Qt-free, so the CLI and the pipeline use it without the GUI.
"""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 pattern``, ``2 patterns``, ``1,200 patterns`` (``many`` for an irregular plural)."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"


def agree(count: int, one: str, many: str) -> str:
    """The verb that agrees with ``count``: ``agree(1, "is", "are")`` is "is"."""
    return one if count == 1 else many
