"""What other gate thresholds would have proposed, from the ratios stored at gating time.

The dedup gate decides from one number per candidate, the best ratio over the pool
(``Candidate.proposed_ratio``, stored for every gated candidate, ADD included). So the
proposal under other thresholds is a comparison, no model call and no ratio computation:
dragging a threshold line in Insights recomputes it for every reviewed candidate at once.

Where it is exact, and where it is not: within one run the pool grows with the run's own
ADDs. A candidate whose best match was an earlier candidate of the same run (stored as a
SKIP/UPDATE without a pattern target) depends on that earlier candidate having been ADDed;
if other thresholds no longer ADD it, the real gate would compare against a smaller pool,
and a candidate the thresholds make an ADD grows the pool of every later one. The
candidates that could differ (:func:`pool_dependent`) are counted in
``WhatIf.pool_dependent`` so the figure says how many; every other candidate gets exactly
the real gate's decision (tested against :func:`curator.core.dedup.gate`). An empty pool
(ratio 0 and no possible match) always ADDs.

The quality gate is the same idea on text length: which reviewed candidates a stricter
gate would have dropped (and what the human had decided for them), and which traced drops
a looser gate would have let through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from curator.core.agreement import Confusion, confusion
from curator.core.quality import QualityGate

__all__ = [
    "GATE_DECISIONS",
    "GatedCandidate",
    "QualityWhatIf",
    "WhatIf",
    "pool_dependent",
    "propose",
    "quality_what_if",
    "threshold_what_if",
]

GATE_DECISIONS = ("SKIP", "UPDATE", "ADD", "REJECT")
"""The human's possible decisions; the gate proposes the first three only."""


def propose(ratio: float, skip: float, update: float, *, pool_empty: bool = False) -> str:
    """The gate's decision for a best ratio (:func:`curator.core.dedup._decide`'s rule)."""
    if pool_empty:
        return "ADD"
    if ratio >= skip:
        return "SKIP"
    if ratio >= update:
        return "UPDATE"
    return "ADD"


@dataclass(frozen=True)
class GatedCandidate:
    """What the what-if needs of one reviewed candidate."""

    id: int
    ratio: float
    proposed: str
    human: str  # SKIP | UPDATE | ADD | REJECT
    pool_empty: bool = False
    same_run_match: bool = False  # best match was an earlier candidate of its own run
    run_id: int | None = None  # its run, whose ADDs it was gated against (None: no pool)


@dataclass(frozen=True)
class WhatIf:
    """Proposals under ``skip``/``update`` against the stored ones and the human's."""

    skip: float
    update: float
    proposals: tuple[str, ...]
    changed: int  # proposals that differ from the stored ones
    agree_before: int  # stored proposal == human decision
    agree_after: int
    pool_dependent: int  # changed candidates whose result could depend on the run's pool
    matrix: Confusion

    @property
    def total(self) -> int:
        return len(self.proposals)

    def to_json(self) -> dict[str, object]:
        n = self.total
        return {
            "skip": self.skip,
            "update": self.update,
            "candidates": n,
            "changed": self.changed,
            "agreement_before": None if n == 0 else self.agree_before / n,
            "agreement_after": None if n == 0 else self.agree_after / n,
            "kappa_after": self.matrix.kappa(),
            "pool_dependent": self.pool_dependent,
        }


def threshold_what_if(
    candidates: Sequence[GatedCandidate],
    skip: float,
    update: float,
    *,
    runs: Sequence[GatedCandidate] | None = None,
) -> WhatIf:
    """Recompute every proposal with other thresholds and score it against the human.

    ``runs``: every candidate of the candidates' runs, in order (those left out of the
    scoring too), for :func:`pool_dependent`; None when ``candidates`` are whole runs."""
    proposals = tuple(propose(c.ratio, skip, update, pool_empty=c.pool_empty) for c in candidates)
    if runs is None:
        dependent = len(pool_dependent(candidates, proposals))
    else:
        everyone = [propose(c.ratio, skip, update, pool_empty=c.pool_empty) for c in runs]
        flagged = {runs[i].id for i in pool_dependent(runs, everyone)}
        dependent = sum(c.id in flagged for c in candidates)
    changed = [p != c.proposed for p, c in zip(proposals, candidates, strict=True)]
    matrix = confusion([c.human for c in candidates], list(proposals), GATE_DECISIONS)
    return WhatIf(
        skip=skip,
        update=update,
        proposals=proposals,
        changed=sum(changed),
        agree_before=sum(c.proposed == c.human for c in candidates),
        agree_after=sum(p == c.human for p, c in zip(proposals, candidates, strict=True)),
        pool_dependent=dependent,
        matrix=matrix,
    )


def pool_dependent(candidates: Sequence[GatedCandidate], proposals: Sequence[str]) -> list[int]:
    """The positions whose real result could differ from ``proposals`` (in run order).

    Within a run the pool holds the run's earlier ADDs. Once an earlier candidate of the
    run loses its ADD, its ratio can only fall for a candidate that matched an earlier
    candidate of its run, and for an ADD (whose best match is not stored) that would no
    longer be one; once an earlier candidate becomes an ADD, any later one not already a
    SKIP may match it better (its ratio can only rise). A candidate counted here may
    itself become or stop being an ADD, so it counts as both for the ones after it.
    Every other candidate sees the pool it was gated against and gets the real decision.
    ``candidates`` must be whole runs, each in its order: a candidate left out (undecided,
    or decided in bulk) still had its place in the pool.
    """
    lost: set[int | None] = set()
    gained: set[int | None] = set()
    found = []
    for position, (c, p) in enumerate(zip(candidates, proposals, strict=True)):
        if c.run_id is None:  # gated alone (a gold set's): no pool of its run
            continue
        falls = c.same_run_match or (c.proposed == "ADD" and p != "ADD")
        if (falls and c.run_id in lost) or (c.run_id in gained and p != "SKIP"):
            found.append(position)
            lost.add(c.run_id)  # what it really becomes is not known
            gained.add(c.run_id)
        elif c.proposed == "ADD" and p != "ADD":
            lost.add(c.run_id)
        elif c.proposed != "ADD" and p == "ADD":
            gained.add(c.run_id)
    return found


@dataclass(frozen=True)
class QualityWhatIf:
    """The quality gate at ``min_chars``/``min_words`` against what was reviewed and dropped.

    ``dropped_by_decision``: reviewed candidates the gate would now drop, per human
    decision (a dropped ADD or UPDATE is knowledge the human wanted and would lose).
    ``admitted``: texts the gate dropped at distillation that it would now let through.
    """

    min_chars: int
    min_words: int
    reviewed: int
    dropped_by_decision: dict[str, int]
    traced_drops: int
    admitted: int

    def to_json(self) -> dict[str, object]:
        return {
            "min_chars": self.min_chars,
            "min_words": self.min_words,
            "reviewed": self.reviewed,
            "would_drop": sum(self.dropped_by_decision.values()),
            "would_drop_by_decision": dict(self.dropped_by_decision),
            "traced_drops": self.traced_drops,
            "would_admit": self.admitted,
        }


def quality_what_if(
    reviewed: Sequence[tuple[str, str]],
    dropped_texts: Sequence[str],
    min_chars: int,
    min_words: int,
) -> QualityWhatIf:
    """``reviewed``: (candidate text, human decision); ``dropped_texts``: the traced drops."""
    quality = QualityGate(min_chars, min_words, degenerate=False)  # the length limits only
    by_decision = dict.fromkeys(GATE_DECISIONS, 0)
    for text, decision in reviewed:
        if not quality.check(text).ok:
            by_decision[decision] = by_decision.get(decision, 0) + 1
    admitted = sum(quality.check(text).ok for text in dropped_texts)
    return QualityWhatIf(
        min_chars=min_chars,
        min_words=min_words,
        reviewed=len(reviewed),
        dropped_by_decision=by_decision,
        traced_drops=len(dropped_texts),
        admitted=admitted,
    )
