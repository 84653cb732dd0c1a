"""The dedup pool of one distillation run, and the candidate rows its decisions become.

A batch is gated against the active patterns plus the candidates ADDed by earlier
batches of the same run (:mod:`curator.pipeline.distill` documents why). A decision's
target is an index into that pool: below the number of patterns it names a Pattern (its
id and the revision the candidate was measured against), above it an earlier candidate
of this run, which is not a Pattern yet, so the row's ``proposed_target`` stays NULL and
the matched candidate's ordinal goes into the ``dedup`` trace. Pure data, no database:
:class:`~curator.pipeline.distill._Distiller` writes the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from curator.core.dedup import Decision


@dataclass
class Pool:
    """The dedup pool: active patterns, then this run's ADDed candidates."""

    pattern_ids: list[int]
    pattern_texts: list[str]
    pattern_revisions: list[int]
    added_texts: list[str] = field(default_factory=list)
    added_ordinals: list[int] = field(default_factory=list)

    def texts(self) -> list[str]:
        """What a batch is gated against, in the order decisions index it."""
        return self.pattern_texts + self.added_texts

    def join(self, added: Sequence[tuple[int, str]]) -> None:
        """A staged batch's ADDs (ordinal, text) join the pool of later batches."""
        for ordinal, text in added:
            self.added_ordinals.append(ordinal)
            self.added_texts.append(text)


@dataclass
class StagedBatch:
    """A batch's candidate rows, their ``dedup`` trace and the ADDs among them."""

    rows: list[dict[str, Any]]
    dedup_trace: list[dict[str, Any]]
    added: list[tuple[int, str]]


def stage_rows(
    pool: Pool,
    *,
    run_id: int,
    category: str,
    first_ordinal: int,
    texts: Sequence[str],
    scored: Sequence[tuple[float, Decision]],
) -> StagedBatch:
    """The Candidate rows (numbered from ``first_ordinal``) for ``texts`` and their
    (importance, decision) pairs; the pool itself is not changed."""
    n_patterns = len(pool.pattern_ids)
    added_before = list(pool.added_ordinals)
    staged = StagedBatch([], [], [])
    for text, (importance, decision) in zip(texts, scored, strict=True):
        ordinal = first_ordinal + len(staged.rows)
        target_id = target_rev = matched = None
        if decision.target is not None:
            if decision.target < n_patterns:
                target_id = pool.pattern_ids[decision.target]
                target_rev = pool.pattern_revisions[decision.target]
            else:
                earlier = added_before + [o for o, _ in staged.added]
                matched = earlier[decision.target - n_patterns]
        if decision.action == "ADD":
            staged.added.append((ordinal, text))
        staged.rows.append(
            {
                "run": run_id,
                "ordinal": ordinal,
                "text": text,
                "importance": float(importance),
                "category": category,
                "proposed_action": decision.action,
                "proposed_target": target_id,
                "proposed_ratio": float(decision.ratio),
                "target_revision": target_rev,
            }
        )
        staged.dedup_trace.append(
            {
                "ordinal": ordinal,
                "action": decision.action,
                "ratio": decision.ratio,
                "target_pattern": target_id,
                "matched_candidate_ordinal": matched,
            }
        )
    return staged
