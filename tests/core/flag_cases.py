"""The demo agent the flag tests read texts against (Wren and two of its axioms)."""

from __future__ import annotations

from typing import Any

from curator.core.flag_lexicon_intents import INTENTS
from curator.core.flags import detect

AXIOMS = (
    "I always say that I am an AI when asked, and I never present myself as a human being.",
    "I never manipulate people: no hidden persuasion, no undisclosed promotion.",
)
IDENTITY = "# Wren\n\nI am Wren, an AI agent with an account on a public social network."


def kinds(text: str) -> set[str]:
    """The kinds of flag ``text`` gets for the demo agent."""
    return {f.kind for f in detect(text, AXIOMS, IDENTITY)}


FAMILY_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "ignore": ("ignore_verbs", {"whole_word": True}),
    "object": ("rule_objects", {"whole_word": False}),
    "standing": ("standing", {"whole_word": True}),
    "every": ("every_reply", {"whole_word": True}),
    "whenever": ("whenever", {"whole_word": True}),
    "directive": ("directives", {"whole_word": True}),
    "secret_word": ("secret_words", {"whole_word": True}),
    "ai": ("ai_words", {"whole_word": True}),
    "conceal": ("conceal", {"whole_word": True}),
    "human": ("human", {"whole_word": True}),
    "void": ("void", {"whole_word": True, "table": INTENTS, "stems": True}),
    "prior": ("prior", {"whole_word": False, "table": INTENTS}),
    "setup": ("setup", {"whole_word": True, "table": INTENTS}),
    "old": ("old", {"whole_word": True, "table": INTENTS}),
    "persona": ("persona", {"whole_word": True, "table": INTENTS}),
    "send": ("send", {"whole_word": True, "table": INTENTS}),
    "private": ("private", {"whole_word": False, "table": INTENTS}),
    "amend": ("amend", {"whole_word": True, "table": INTENTS, "stems": True}),
    "you": ("you", {"whole_word": True, "table": INTENTS}),
}
"""Each word family of :class:`curator.core.flag_families._Families`: the lexicon field it
is built from and the options of ``_family``."""
