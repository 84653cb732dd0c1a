"""The demo agent the flag tests read texts against (Wren and two of its axioms)."""

from __future__ import annotations

from curator.core.flags import detect

AXIOMS = (
    "I always say that I am an AI when asked, and I never present myself as a human being.",
    "I never manipulate people: no hidden persuasion, no undisclosed promotion.",
)
IDENTITY = "# Wren\n\nI am Wren, an AI agent with an account on a public social network."


def kinds(text: str) -> set[str]:
    """The kinds of flag ``text`` gets for the demo agent."""
    return {f.kind for f in detect(text, AXIOMS, IDENTITY)}
