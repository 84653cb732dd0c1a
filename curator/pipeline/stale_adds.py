"""ADD proposals that went stale: a near-duplicate pattern was written after staging.

The dedup gate proposes against the patterns there are when a run is staged. Two runs
staged before either is committed (two distills, ``import-knowledge`` twice) can each
propose to ADD the same text; once the first is committed, the second's ADD would put
the same knowledge into the prompt twice. So an ADD is checked again against the active
patterns added or reworded since its run started (by another run, not its own), by the
gate itself and the thresholds in force: where the gate would now propose SKIP or UPDATE,

- accepting the proposal is refused (:func:`curator.pipeline.review.decide`): the
  reviewer SKIPs into the newer pattern, UPDATEs it, or ADDs explicitly, which is their
  call made with that pattern there;
- an ADD decided before that pattern was written is a conflict of the commit, to be
  decided again (:mod:`curator.pipeline.commit_preview`).

The times are the writers' clocks: machines sharing a PostgreSQL database order these
events only as well as their clocks agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from curator.core.scoring import as_utc
from curator.store.models import Pattern, Run
from curator.store.settings import Settings


@dataclass(frozen=True)
class NewerMatch:
    """The pattern written since staging that an ADD's text now matches."""

    pattern_id: int
    ratio: float
    written_at: datetime
    """When the pattern got the text matched (added, or reworded by an UPDATE)."""
    text: str

    def describe(self) -> str:
        return (
            f"pattern {self.pattern_id}, written since this run was staged, is nearly the "
            f"same text (ratio {self.ratio:.2f})"
        )


def newer_matches(run: Run, texts: Sequence[str], settings: Settings) -> list[NewerMatch | None]:
    """For each text, the pattern written since ``run`` started that the gate would now
    SKIP it into or UPDATE (None: still an ADD). Call inside a transaction."""
    if not texts:
        return []
    pool = list(
        Pattern.select(Pattern.id, Pattern.text, Pattern.created_at, Pattern.updated_at)
        .where(
            (Pattern.status == "active")
            & (
                (
                    (Pattern.created_at > run.started_at)
                    & (Pattern.created_run.is_null() | (Pattern.created_run != run.id))
                )
                | (
                    (Pattern.updated_at > run.started_at)
                    & Pattern.updated_run.is_null(False)
                    & (Pattern.updated_run != run.id)
                )
            )
        )
        .order_by(Pattern.id)
    )
    if not pool:
        return [None] * len(texts)
    from curator.core.dedup import gate  # on use: numpy is not needed to list a run

    decisions = gate(
        list(texts),
        [p.text for p in pool],
        skip=settings.skip_threshold,
        update=settings.update_threshold,
        grow=False,  # each against the pool alone: these texts are not patterns
    )
    found: list[NewerMatch | None] = []
    for decision in decisions:
        if decision.action == "ADD" or decision.target is None:
            found.append(None)
            continue
        p = pool[decision.target]
        changed = max(as_utc(p.created_at), as_utc(p.updated_at))
        found.append(NewerMatch(int(p.id), float(decision.ratio), changed, p.text))
    return found
