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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from curator.core.agreement import Confusion, confusion
from curator.core.quality import measured

__all__ = [
    "GATE_DECISIONS",
    "GatedCandidate",
    "QualityTable",
    "QualityWhatIf",
    "WhatIf",
    "WhatIfTable",
    "pool_dependent",
    "propose",
    "quality_what_if",
    "threshold_what_if",
    "walk_what_if",
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
    scoring too), for :func:`pool_dependent`; None when ``candidates`` are whole runs.
    For many what-ifs of the same candidates (a threshold dragged), build a
    :class:`WhatIfTable` once and ask it."""
    return WhatIfTable(candidates, runs).at(skip, update)


def walk_what_if(
    candidates: Sequence[GatedCandidate],
    skip: float,
    update: float,
    *,
    runs: Sequence[GatedCandidate] | None = None,
) -> WhatIf:
    """:func:`threshold_what_if` one candidate at a time, as the rules read: the
    specification :class:`WhatIfTable` is tested against and measured by."""
    proposals = tuple(propose(c.ratio, skip, update, pool_empty=c.pool_empty) for c in candidates)
    if runs is None:
        dependent = len(pool_dependent(candidates, proposals))
    else:
        everyone = [propose(c.ratio, skip, update, pool_empty=c.pool_empty) for c in runs]
        flagged = {runs[i].id for i in pool_dependent(runs, everyone)}
        dependent = sum(c.id in flagged for c in candidates)
    return WhatIf(
        skip=skip,
        update=update,
        proposals=proposals,
        changed=sum(p != c.proposed for p, c in zip(proposals, candidates, strict=True)),
        agree_before=sum(c.proposed == c.human for c in candidates),
        agree_after=sum(p == c.human for p, c in zip(proposals, candidates, strict=True)),
        pool_dependent=dependent,
        matrix=confusion([c.human for c in candidates], list(proposals), GATE_DECISIONS),
    )


_SKIP, _UPDATE, _ADD = (GATE_DECISIONS.index(d) for d in ("SKIP", "UPDATE", "ADD"))
_NAMES = np.array(GATE_DECISIONS, dtype=object)


def _codes(decisions: Iterable[str], *, strict: bool) -> npt.NDArray[np.int8]:
    """Decisions as their index in :data:`GATE_DECISIONS`; an unknown one is -1 (equal to
    no decision), or a ValueError where ``strict`` (a human decision must be one)."""
    index = {d: i for i, d in enumerate(GATE_DECISIONS)}
    codes = []
    for decision in decisions:
        code = index.get(decision, -1)
        if strict and code == -1:
            raise ValueError(f"decision outside {list(GATE_DECISIONS)}: {decision!r}")
        codes.append(code)
    return np.array(codes, dtype=np.int8)


class _Pool:
    """The candidates of whole runs as arrays, ordered for :func:`pool_dependent`'s walk.

    Candidates gated alone (``run_id`` None) are left out: they neither count nor move
    their run's pool. The others are sorted by run (stably, so each run keeps its order);
    ``first`` holds each one's run's first position, for counts "earlier in its run"."""

    def __init__(self, candidates: Sequence[GatedCandidate]) -> None:
        pooled = sorted((c.run_id, i) for i, c in enumerate(candidates) if c.run_id is not None)
        self.order = np.array([i for _, i in pooled], dtype=np.intp)
        chosen = [candidates[i] for _, i in pooled]
        self.proposed = _codes((c.proposed for c in chosen), strict=False)
        self.same_run = np.array([c.same_run_match for c in chosen], dtype=bool)
        run_ids = [run_id for run_id, _ in pooled]
        starts = [i for i, r in enumerate(run_ids) if i == 0 or r != run_ids[i - 1]]
        lengths = [end - start for start, end in pairwise([*starts, len(run_ids)])]
        self.first = np.repeat(np.array(starts, dtype=np.intp), lengths)

    def _earlier(self, marks: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Whether any earlier candidate of the same run is marked."""
        before = np.cumsum(marks, dtype=np.intp) - marks
        return before > before[self.first]

    def dependent(self, proposals: npt.NDArray[np.int8]) -> npt.NDArray[np.bool_]:
        """:func:`pool_dependent` as a mask over the pooled candidates (in ``order``).

        The walk's two marks of a run only ever switch on: a run has *lost* an ADD once a
        stored ADD is proposed otherwise, *gained* one once a stored non-ADD becomes an ADD,
        and both from the first candidate counted on. So the first counted candidate of a
        run is the first whose condition holds on the marks of the events before it, and
        every later one counts when it *falls* or is not a SKIP."""
        p = proposals[self.order]
        was_add = self.proposed == _ADD
        lost = was_add & (p != _ADD)
        gained = ~was_add & (p == _ADD)
        falls = self.same_run | lost
        not_skip = p != _SKIP
        first_hit = (falls & self._earlier(lost)) | (self._earlier(gained) & not_skip)
        after = self._earlier(first_hit)
        return (first_hit & ~after) | (after & (falls | not_skip))


class WhatIfTable:
    """Candidates held as arrays, for what-ifs at any thresholds without a loop in Python.

    Dragging a threshold line in Insights asks for a what-if at every mouse move, on the
    GUI thread. A loop over 100,000 reviewed candidates took 60-70 ms, four frames;
    vector operations over arrays built once (on the thread that computes the insights)
    take a few milliseconds (``benchmarks/bench_whatif.py``). The answers are the loop's:
    :func:`pool_dependent` stays the specification, and a property test holds the two
    equal."""

    def __init__(
        self, candidates: Sequence[GatedCandidate], runs: Sequence[GatedCandidate] | None = None
    ) -> None:
        self._ratio = np.array([c.ratio for c in candidates], dtype=np.float64)
        self._empty = np.array([c.pool_empty for c in candidates], dtype=bool)
        self._proposed = _codes((c.proposed for c in candidates), strict=False)
        self._human = _codes((c.human for c in candidates), strict=True)
        # the candidates' own pool only where no ``runs`` give it (sorting it is most of
        # the table's build at 100,000 candidates)
        self._pool = _Pool(candidates) if runs is None else None
        self._runs: tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], _Pool] | None = None
        # With ``runs``, a scored candidate counts when a candidate of ``runs`` with its id
        # does: the ids of ``runs`` numbered 0..n-1 (``_run_id_of``), each scored one's
        # number, or n (never flagged) for an id not in ``runs``.
        self._run_id_of = np.zeros(0, dtype=np.intp)
        self._scored_id = np.zeros(len(candidates), dtype=np.intp)
        self._ids = 0
        if runs is not None:
            ratios = np.array([c.ratio for c in runs], dtype=np.float64)
            empty = np.array([c.pool_empty for c in runs], dtype=bool)
            self._runs = (ratios, empty, _Pool(runs))
            number = {cid: n for n, cid in enumerate(dict.fromkeys(c.id for c in runs))}
            self._ids = len(number)
            self._run_id_of = np.array([number[c.id] for c in runs], dtype=np.intp)
            self._scored_id = np.array(
                [number.get(c.id, self._ids) for c in candidates], dtype=np.intp
            )

    @staticmethod
    def _propose(
        ratio: npt.NDArray[np.float64], empty: npt.NDArray[np.bool_], skip: float, update: float
    ) -> npt.NDArray[np.int8]:
        """:func:`propose` for every candidate at once."""
        codes = np.full(len(ratio), _ADD, dtype=np.int8)
        codes[ratio >= update] = _UPDATE
        codes[ratio >= skip] = _SKIP
        codes[empty] = _ADD
        return codes

    def at(self, skip: float, update: float) -> WhatIf:
        """The what-if at these thresholds."""
        proposals = self._propose(self._ratio, self._empty, skip, update)
        if self._pool is not None:
            dependent = int(self._pool.dependent(proposals).sum())
        else:
            assert self._runs is not None  # the constructor gives one or the other
            ratios, empty, pool = self._runs
            found = pool.dependent(self._propose(ratios, empty, skip, update))
            flagged = np.zeros(self._ids + 1, dtype=bool)
            flagged[self._run_id_of[pool.order[found]]] = True
            dependent = int(flagged[self._scored_id].sum())
        size = len(GATE_DECISIONS)
        pairs = self._human.astype(np.intp) * size + proposals
        matrix = np.bincount(pairs, minlength=size * size).reshape(size, size)
        return WhatIf(
            skip=skip,
            update=update,
            proposals=tuple(_NAMES[proposals].tolist()),
            changed=int((proposals != self._proposed).sum()),
            agree_before=int((self._proposed == self._human).sum()),
            agree_after=int((proposals == self._human).sum()),
            pool_dependent=dependent,
            matrix=Confusion(GATE_DECISIONS, matrix.astype(np.int64)),
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
    """``reviewed``: (candidate text, human decision); ``dropped_texts``: the traced drops.
    For many limits over the same texts (a spin box stepped), build a
    :class:`QualityTable` once and ask it."""
    return QualityTable(reviewed, dropped_texts).at(min_chars, min_words)


class QualityTable:
    """Texts read once (:func:`curator.core.quality.measured`), for the quality what-if at
    any limits by array comparisons: :meth:`QualityGate.check
    <curator.core.quality.QualityGate.check>` of every text again took 1.9 s at 100,000
    reviewed candidates, on the GUI thread at each step of a spin box. The length limits
    only, as the gate without its degenerate-text check judges them."""

    def __init__(self, reviewed: Sequence[tuple[str, str]], dropped_texts: Sequence[str]) -> None:
        self._decisions = list(dict.fromkeys([*GATE_DECISIONS, *(d for _, d in reviewed)]))
        code = {d: i for i, d in enumerate(self._decisions)}
        self._decision = np.array([code[d] for _, d in reviewed], dtype=np.intp)
        self._reviewed = self._columns([text for text, _ in reviewed])
        self._dropped = self._columns(dropped_texts)

    @staticmethod
    def _columns(texts: Sequence[str]) -> tuple[npt.NDArray[np.int64], ...]:
        sizes = [measured(text) for text in texts]
        return (
            np.array([s.weighed for s in sizes], dtype=np.int64),
            np.array([s.words for s in sizes], dtype=np.int64),
            np.array([bool(s.refusals) for s in sizes], dtype=np.int64),
        )

    @staticmethod
    def _passes(
        columns: tuple[npt.NDArray[np.int64], ...], min_chars: int, min_words: int
    ) -> npt.NDArray[np.bool_]:
        weighed, words, refused = columns
        return (weighed >= min_chars) & (words >= min_words) & (refused == 0)

    def at(self, min_chars: int, min_words: int) -> QualityWhatIf:
        """The what-if at these limits."""
        kept = self._passes(self._reviewed, min_chars, min_words)
        counts = np.bincount(self._decision[~kept], minlength=len(self._decisions))
        return QualityWhatIf(
            min_chars=min_chars,
            min_words=min_words,
            reviewed=len(self._decision),
            dropped_by_decision={d: int(n) for d, n in zip(self._decisions, counts, strict=True)},
            traced_drops=len(self._dropped[0]),
            admitted=int(self._passes(self._dropped, min_chars, min_words).sum()),
        )
