"""The sentence under the Knowledge pane's "in N days" slider, for every count.

Kept apart from the pane so that every combination of counts can be checked quickly:
"It holds all 0 active patterns", "1 prompt pattern(s)" and "the 2th pattern" are what
one f-string per case wrote for an empty database, a single pattern and small top K.
"""

from __future__ import annotations

from curator.core.wording import agree, plural

__all__ = ["leaving_note", "ordinal", "plural", "room_note"]


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``12th``, ``13th``, ``21st`` …"""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def room_note(active: int, top_k: int) -> str:
    """Fewer active patterns than the prompt has room for: nothing can leave it yet."""
    if active == 0:
        held = (
            "No pattern is active yet: committing a review adds the first ones. The prompt "
            f"has room for {top_k} (top K, in Settings)."
        )
    elif active == 1:
        held = f"It holds the one active pattern and has room for {top_k} (top K, in Settings)."
    else:
        held = (
            f"It holds all {active:,} active patterns and has room for {top_k} (top K, in "
            "Settings)."
        )
    return (
        f"<b>Nothing leaves the prompt yet.</b> {held} A pattern leaves only when a newer, "
        "stronger one takes its place, so this list fills once more than "
        f"{plural(top_k, 'pattern')} are active. Until then the chart shows how the "
        "selected patterns weaken."
    )


def leaving_note(leaving: int, days: int, top_k: int, cutoff: float) -> str:
    """How many prompt patterns fall below today's cut-off within ``days``."""
    within = f"within {plural(days, 'day')}"
    if leaving == 0:
        return (
            f"{within.capitalize()} no prompt pattern falls below today's cut-off "
            f"({cutoff:.3f}, the {ordinal(top_k)} pattern's value now)."
        )
    verb = agree(leaving, "falls", "fall")
    return (
        f"{plural(leaving, 'prompt pattern')} {verb} below today's cut-off ({cutoff:.3f}) "
        f"{within}: a new pattern as strong as the {ordinal(top_k)} today would push "
        f"{agree(leaving, 'it', 'them')} out."
    )
