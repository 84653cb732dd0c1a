"""A flag: one finding of the poisoned-memory detector (:mod:`curator.core.flags`).

The record, the kinds and the provenance flag live apart from the detector's rules so
that code showing flags already found (:mod:`curator.core.kept_flags`, the Review pane,
``curator review``) imports none of them: the rules cost a tenth of a second to load.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "KIND_LABELS", "TEXT_KINDS", "Flag", "flag_kinds", "provenance_flag"]

TEXT_KINDS = ("instruction", "link", "secret", "personal", "hidden", "identity")
KINDS = (*TEXT_KINDS, "untrusted")

KIND_LABELS = {
    "instruction": "instruction to the agent",
    "link": "link or contact",
    "secret": "credential or secret",
    "personal": "personal identifier",
    "hidden": "hidden text",
    "identity": "amends identity or axioms",
    "untrusted": "untrusted sources only",
}


@dataclass(frozen=True, slots=True)
class Flag:
    """One finding: its kind, a short reason, and the span ``text[start:end]`` it is about.

    ``start == end`` for flags about the whole text (the provenance flag).
    """

    kind: str
    reason: str
    start: int
    end: int
    match: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reason": self.reason,
            "start": self.start,
            "end": self.end,
            "match": self.match,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Flag:
        return cls(
            str(doc["kind"]),
            str(doc["reason"]),
            int(doc["start"]),
            int(doc["end"]),
            str(doc.get("match", "")),
        )

    def describe(self) -> str:
        where = f": “{short(self.match)}”" if self.match else ""
        return f"{self.kind}: {self.reason}{where}"


def short(s: str, limit: int = 40) -> str:
    """``s`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(s.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def provenance_flag(sources: Sequence[str], untrusted: Iterable[str]) -> Flag | None:
    """The ``untrusted`` flag when every source (at least one) is an untrusted source."""
    bad = {s.strip().lower() for s in untrusted}
    if not sources or not all(s.strip().lower() in bad for s in sources):
        return None
    names = ", ".join(sorted({s or "(none)" for s in sources}))
    return Flag("untrusted", f"every source episode is from an untrusted source ({names})", 0, 0)


def flag_kinds(flags: Iterable[Flag]) -> list[str]:
    """The distinct kinds, in :data:`KINDS` order."""
    present = {f.kind for f in flags}
    return [k for k in KINDS if k in present]
