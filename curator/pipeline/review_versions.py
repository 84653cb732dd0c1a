"""Several reviewers on one run: who decided, and optimistic versions per candidate.

A decision records the person (``decided_by``: the reviewer's name,
:func:`curator.store.profile.reviewer_name`) apart from the channel (``decided_via``:
"human" for the window and the API, "cli", "window accept-all", "cli --accept-all"; rows
decided before names were kept hold the channel in both columns); readers that skip bulk
decisions look at the channel. Every decision bumps the candidate's ``revision``, its
optimistic version: a reviewer who passes the revision they loaded (``expect_revision``)
is refused with :class:`DecisionConflict` when the candidate changed since *and* the
decision in force now is someone else's, in one sentence ("candidate 5 was decided ADD
by ana at 14:02 ..."), instead of overwriting it unseen. A change since then by the same
reviewer (their own queued keys, a second window of theirs) is not a conflict; nor is
deciding a candidate someone undid back to undecided (no one's decision is lost). Undo
checks the same way: a reviewer's undo never takes back another reviewer's decision
made after the state they saw.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from curator.errors import ConflictError
from curator.pipeline.review_views import TARGETED
from curator.store.models import Candidate, DecisionEvent, format_moment

__all__ = ["DecisionConflict", "check_version", "describe_decision", "own_newest"]


class DecisionConflict(ConflictError):
    """The candidate was decided by someone else since the reviewer loaded it (exit 1).

    Nothing was written; ``revision`` is the candidate's version now, for a caller that
    reloads the row and shows it."""

    def __init__(self, message: str, candidate_id: int, revision: int) -> None:
        super().__init__(message)
        self.candidate_id = candidate_id
        self.revision = revision


def describe_decision(candidate: Candidate) -> str:
    """The decision in force in a few words: "decided ADD by ana at 14:02", "undecided"."""
    if candidate.action is None:
        return "undecided"
    what = f"decided {candidate.action}"
    if candidate.action in TARGETED and candidate.target_id is not None:
        what += f" of pattern {candidate.target_id}"
    if candidate.decided_by:
        what += f" by {candidate.decided_by}"
    if candidate.decided_at is not None:
        what += f" at {format_moment(candidate.decided_at)}"
    return what


def check_version(candidate: Candidate, expected: int | None, reviewer: str) -> None:
    """Refuse (DecisionConflict) to overwrite a decision someone else made since
    ``expected`` (the revision the reviewer loaded); None checks nothing."""
    if expected is None or int(candidate.revision) == expected:
        return
    if candidate.action is None or candidate.decided_by == reviewer:
        return  # nobody else's decision would be overwritten
    raise DecisionConflict(
        f"candidate {candidate.id} was {describe_decision(candidate)} since you loaded it "
        f"(revision {expected}, now {candidate.revision}); nothing was changed: see their "
        "decision, then decide again to replace it",
        int(candidate.id),
        int(candidate.revision),
    )


def _mine(event: DecisionEvent, reviewer: str) -> bool:
    """Whether the decision event is the reviewer's (one recorded before names were kept,
    without ``decided_via`` in its state, counts as everyone's, as undo treated it)."""
    after: dict[str, Any] = event.after or {}
    return "decided_via" not in after or after.get("decided_by") == reviewer


def own_newest(events: Iterable[DecisionEvent], reviewer: str) -> DecisionEvent | None:
    """The reviewer's newest open decision among ``events`` (newest first), for Ctrl+Z.

    Another reviewer's decisions are passed over: taking them back would overwrite a
    decision unseen. A decision of the reviewer's that someone else decided over since is
    refused (DecisionConflict): undoing it would restore the state before it over theirs.
    """
    newer: set[int] = set()  # candidates with an open decision newer than the one looked at
    for event in events:
        cid = int(event.candidate_id)
        if _mine(event, reviewer):
            if cid in newer:
                candidate = Candidate.get_by_id(cid)
                raise DecisionConflict(
                    f"candidate {cid} was {describe_decision(candidate)} after your decision; "
                    "nothing was undone: see their decision, then decide again to replace it",
                    cid,
                    int(candidate.revision),
                )
            return event
        newer.add(cid)
    return None
