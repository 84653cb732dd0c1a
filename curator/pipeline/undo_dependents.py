"""What depends on a pattern an undo would remove.

Undoing a commit removes the patterns it added. Rows outside that commit may point at
one of them since: a later commit's SKIP or UPDATE linked it (a source link, a candidate
applied against it), or a reviewer decided a candidate of another run against it. The
database's foreign keys would clear those references without a word (``ON DELETE``), so
a later commit would silently lose its target and could never be undone itself, and a
decision would change under its reviewer. Such an undo is refused, naming the rows; they
are undone or decided again first, exactly as for a row the later change rewrote.

A pattern only *proposed* as a target (``proposed_target``, ``rematch_target``) of a
candidate not committed yet does not hold the undo back: a proposal is the pipeline's,
and a proposal whose pattern is gone cannot be accepted as a SKIP
(:mod:`curator.pipeline.review_resolve`). A committed candidate's proposal does: the
later commit recorded it, and cleared it could never be undone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from curator.store.engine import in_chunks
from curator.store.models import Candidate, PatternEpisode
from curator.store.snapshot import Key


def _uses(c: Candidate, patterns: set[int]) -> str:
    """How the candidate points at one of ``patterns``, in a few words."""
    done = "committed" if c.state == "applied" else "not committed"
    if c.target_id in patterns:
        return f"{c.action} into pattern {c.target_id}, {done}"
    if c.rematch_target_id in patterns:
        into = f"its edit matched pattern {c.rematch_target_id}"
    else:
        into = f"proposed {c.proposed_action} into pattern {c.proposed_target_id}"
    return f"{c.action}, {into}, {done}"


def dependents(
    patterns: Sequence[int], own_candidates: Collection[Key], own_links: Collection[Key]
) -> list[str]:
    """The rows outside the changeset (whose candidate and source-link keys are given)
    that point at one of ``patterns``, each named in a few words, candidates first."""
    found: list[str] = []
    linked_by_candidates: set[int] = set()
    for chunk in in_chunks(list(patterns)):
        proposed = Candidate.proposed_target.in_(chunk) | Candidate.rematch_target.in_(chunk)
        query = (
            Candidate.select(
                Candidate.id,
                Candidate.run,
                Candidate.action,
                Candidate.state,
                Candidate.target,
                Candidate.proposed_action,
                Candidate.proposed_target,
                Candidate.rematch_action,
                Candidate.rematch_target,
            )
            .where(Candidate.target.in_(chunk) | ((Candidate.state == "applied") & proposed))
            .order_by(Candidate.id)
        )
        for c in query:
            if (c.id,) in own_candidates:
                continue
            linked_by_candidates.add(int(c.run_id))
            found.append(f"candidate {c.id} of run {c.run_id} ({_uses(c, set(chunk))})")
    for chunk in in_chunks(list(patterns)):
        columns = (PatternEpisode.pattern, PatternEpisode.episode, PatternEpisode.run)
        links = (
            PatternEpisode.select(*columns)
            .where(PatternEpisode.pattern.in_(chunk))
            .order_by(PatternEpisode.pattern, PatternEpisode.episode)
        )
        for link in links:
            key = (link.pattern_id, link.episode_id)
            if key in own_links or link.run_id in linked_by_candidates:
                continue  # the candidate that made it is named already
            run = f", run {link.run_id}" if link.run_id is not None else ""
            found.append(f"the source link of pattern {key[0]} to episode {key[1]}{run}")
    return found
