"""How the guard's stored flags are kept in ``Candidate.guard_flags`` (a JSON list).

Shared by the staging (:mod:`curator.pipeline.guard`), the learned guard's rewrite of
waiting candidates (:mod:`curator.pipeline.guard_learn`) and the review's flag lists
(:mod:`curator.pipeline.flagging`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from curator.core.flag_type import Flag

MODEL_KIND = "model"
"""The flag kind of the configured model's second opinion."""

LEARNED_KIND = "learned"
"""The flag kind of the guard learned from the reviewer's rejections."""

GUARD_KINDS = (MODEL_KIND, LEARNED_KIND)
"""The stored kinds, in the order they are shown (after the rule flags)."""

GUARD_KIND_LABELS = {
    MODEL_KIND: "the model's second opinion",
    LEARNED_KIND: "like texts you rejected",
}


def stored_flags(raw: Any) -> list[Flag]:
    """The flags kept in ``Candidate.guard_flags``, in :data:`GUARD_KINDS` order.

    An entry that is not a well-formed flag (a damaged or hand-edited database) is left
    out rather than failing the whole review.
    """
    if not isinstance(raw, list):
        return []
    found: list[Flag] = []
    for entry in raw:
        if not isinstance(entry, dict) or entry.get("kind") not in GUARD_KINDS:
            continue
        try:
            found.append(Flag.from_json(entry))
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
    return sorted(found, key=_order)


def replace_kind(raw: Any, kind: str, flag: Flag | None) -> list[dict[str, Any]] | None:
    """``Candidate.guard_flags`` with the ``kind`` flag replaced by ``flag`` (None: none)."""
    kept = [f for f in stored_flags(raw) if f.kind != kind]
    if flag is not None:
        kept.append(flag)
    return encode(kept)


def encode(flags: Sequence[Flag]) -> list[dict[str, Any]] | None:
    ordered = sorted(flags, key=_order)
    return [f.to_json() for f in ordered] or None


def _order(flag: Flag) -> tuple[int, str, int, int, str]:
    """Kind first (:data:`GUARD_KINDS`), then the rest: the same flags always list alike."""
    return (GUARD_KINDS.index(flag.kind), flag.reason, flag.start, flag.end, flag.match)
