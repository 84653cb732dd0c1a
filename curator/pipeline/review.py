"""Reviewing staged candidates: the human gate before anything reaches Knowledge.

A distillation run stages candidates with the pipeline's proposal (SKIP / UPDATE / ADD
against the active patterns). Here a reviewer accepts or overrides each proposal, may edit
the text or importance, and can step back through the decisions. Nothing touches Knowledge
until :func:`curator.pipeline.commit.commit_run`.

Every change of a decision is a :class:`~curator.store.models.DecisionEvent` with the
candidate's decision state before and after, the time and the actor, so the audit trail
says who decided what, and :func:`undo_last_decision` can walk the decisions back.

Stale-target detection. A proposal was computed against the target pattern as it was at
staging (``Candidate.target_revision``). Accepting the proposal keeps that basis, so a
commit refuses the candidate if the pattern changed since staging. When the reviewer picks
a target explicitly (``target_id``) or the target comes from re-matching an edited text,
the reviewer's basis is the pattern as it is *now*: its revision at decision time is kept
in ``Candidate.decision_target_revision`` and checked instead. Deciding again with an
explicit target is therefore how a reviewer resolves a conflict.

A proposal to SKIP or UPDATE an earlier candidate of the same run (the pipeline leaves
its target empty: it is not a pattern yet) is accepted as a SKIP with nothing to link, so
a text is never added twice; UPDATE needs a pattern and is refused without one. A
proposal whose pattern was removed since (its commit undone) is refused as SKIP too: the
text it called known is no longer in memory.

The read side (what a reviewer sees: candidate views, progress, nearest patterns) is
:mod:`curator.pipeline.review_views`; this module re-exports it.

Every write goes through ``store.write()`` (one ``BEGIN IMMEDIATE`` transaction) and
reads the candidate inside it, so two reviewers (window and command line) never act on a
state the other has just changed, and never fail on a lock upgrade.

Several reviewers: a decision records the person apart from the channel, and a
reviewer's stale view never overwrites another's decision unseen
(:mod:`curator.pipeline.review_versions`).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from datetime import datetime
from typing import Any

from curator.core.flag_type import Flag
from curator.core.scoring import as_utc
from curator.core.textsafety import SHOWS_NOTHING, control_problem, pattern_line, visible
from curator.errors import CuratorError
from curator.pipeline.flagging import FlagContext, candidate_sources, flag_context, seen_record
from curator.pipeline.review_resolve import FINAL_ACTIONS, resolve
from curator.pipeline.review_versions import DecisionConflict, check_version, own_newest

# The read side lives in review_views; its names are re-exported here on purpose: the
# command line, the window and scripts use this module as the one review API.
from curator.pipeline.review_views import (
    NEAREST_LIMIT,
    TARGETED,
    CandidateView,
    PatternMatch,
    ReviewProgress,
    SourceEpisode,
    StagedRun,
    TextCheck,
    accepted_action,
    check_text,
    get_candidate,
    list_candidates,
    nearest_patterns,
    require_run,
    review_progress,
    source_episodes,
    staged_runs,
)
from curator.pipeline.stale_adds import newer_matches
from curator.store.db import Store
from curator.store.models import (
    MAX_PATTERN_CHARS,
    Candidate,
    DecisionEvent,
    Pattern,
    format_utc,
    utcnow,
)
from curator.store.profile import reviewer_name
from curator.store.settings import load_settings

__all__ = [
    "DECIDE_ACTIONS",
    "DECISION_FIELDS",
    "EDIT_FIELDS",
    "FINAL_ACTIONS",
    "NEAREST_LIMIT",
    "TARGETED",
    "CandidateView",
    "DecisionConflict",
    "PatternMatch",
    "ReviewProgress",
    "SourceEpisode",
    "StagedRun",
    "TextCheck",
    "accept_all",
    "check_text",
    "decide",
    "decision_state",
    "get_candidate",
    "list_candidates",
    "nearest_patterns",
    "record_proposals",
    "review_progress",
    "source_episodes",
    "staged_runs",
    "undo_decision",
    "undo_last_decision",
]

DECIDE_ACTIONS = ("ACCEPT", *FINAL_ACTIONS)

DECISION_FIELDS = (
    "action",
    "target_id",
    "target_ratio",
    "final_text",
    "final_importance",
    "decided_by",
    "decided_via",
    "decided_at",
    "state",
    "rematch_action",
    "rematch_target_id",
    "rematch_ratio",
    "decision_target_revision",
    "flags_seen",
    "keep_pattern_text",
)
"""The candidate columns a decision sets; a DecisionEvent records them before and after."""


def _open_candidate(candidate_id: int) -> Candidate:
    """The candidate, if it can still be decided (its run is staged, it is not committed)."""
    candidate = Candidate.get_or_none(Candidate.id == candidate_id)
    if candidate is None:
        raise CuratorError(f"there is no candidate {candidate_id}")
    run = require_run(int(candidate.run_id or 0))
    if candidate.state == "applied":
        raise CuratorError(f"candidate {candidate_id} is already committed; undo the commit first")
    if run.status != "staged":
        raise CuratorError(
            f"run {run.id} is {run.status}, not staged: its candidates cannot be decided"
        )
    return candidate


_FOREIGN_KEYS = {"target_id": "target", "rematch_target_id": "rematch_target"}


def decision_state(candidate: Candidate) -> dict[str, Any]:
    """The decision columns as JSON (what DecisionEvent.before/after hold)."""
    state: dict[str, Any] = {}
    for name in DECISION_FIELDS:
        if name in _FOREIGN_KEYS:
            value: Any = getattr(candidate, name)  # target_id: the raw id, no query
        else:
            value = getattr(candidate, name)
        if isinstance(value, datetime):
            value = format_utc(value)
        state[name] = value
    return state


def _write_state(candidate: Candidate, state: dict[str, Any]) -> None:
    """Store a decision state and bump the candidate's revision (inside store.write())."""
    values: dict[Any, Any] = {
        getattr(Candidate, _FOREIGN_KEYS.get(name, name)): state[name] for name in DECISION_FIELDS
    }
    values[Candidate.revision] = Candidate.revision + 1
    Candidate.update(values).where(Candidate.id == candidate.id).execute()


def _flags_now(flagger: FlagContext, candidate: Candidate, state: dict[str, Any]) -> list[Flag]:
    """The flags of the text a decision applies (the edit, else the proposed text)."""
    text = state["final_text"] if state["final_text"] is not None else candidate.text
    sources = candidate_sources([candidate.id])[candidate.id]
    return flagger.flags(text, sources, candidate.guard_flags)


def _record(
    candidate: Candidate, before: dict[str, Any], after: dict[str, Any], actor: str, kind: str
) -> None:
    _write_state(candidate, after)
    DecisionEvent.create(
        candidate=candidate.id, actor=actor, at=utcnow(), before=before, after=after, kind=kind
    )


def decide(
    store: Store,
    candidate_id: int,
    action: str,
    *,
    target_id: int | None = None,
    text: str | None = None,
    importance: float | None = None,
    keep_pattern_text: bool | None = None,
    actor: str = "human",
    reviewer: str | None = None,
    expect_revision: int | None = None,
) -> CandidateView:
    """Record a reviewer's decision on one candidate.

    ``ACCEPT`` takes the current proposal (the re-match when the text was edited);
    ``SKIP``/``UPDATE`` take ``target_id`` or the proposed target; ``ADD``/``REJECT``
    take none. ``text`` edits the candidate's text (the original text clears the edit):
    it is re-checked by the quality gate and re-matched against the active patterns, and
    an edit failing the quality gate cannot be ADDed or UPDATEd. ``importance`` in [0, 1]
    overrides the scored importance. ``keep_pattern_text`` chooses, for an UPDATE of an
    edited candidate, whether the commit keeps the pattern's text (True) or writes the
    reviewer's wording (False, the default); None leaves the earlier choice. Raises
    CuratorError and changes nothing on refusal.

    ``actor`` is the channel (recorded as ``decided_via``), ``reviewer`` the person
    (``decided_by``; None: :func:`reviewer_name`). ``expect_revision``, the candidate's
    revision when the reviewer loaded it, makes a decision someone else made since a
    :class:`DecisionConflict` (see the module's docstring).
    """
    who = reviewer if reviewer is not None else reviewer_name()
    verb = action.strip().upper()
    if verb not in DECIDE_ACTIONS:
        raise CuratorError(f"unknown action {action!r}; use one of {', '.join(DECIDE_ACTIONS)}")
    if importance is not None and (math.isnan(importance) or not 0.0 <= importance <= 1.0):
        raise CuratorError(f"importance must be between 0 and 1 (got {importance})")
    with store.explained_write("decision"):
        candidate = _open_candidate(candidate_id)
        check_version(candidate, expect_revision, who)
        before = decision_state(candidate)
        state = dict(before)
        settings = load_settings(store)
        if text is not None:
            cleaned = pattern_line(text)  # one line, as every view shows it
            if not cleaned:
                raise CuratorError("the edited text is empty; REJECT the candidate instead")
            if not visible(cleaned):
                raise CuratorError(f"the edited text {SHOWS_NOTHING}; REJECT the candidate instead")
            problem = control_problem(cleaned, "the edited text")
            if problem is not None:
                raise CuratorError(problem)
            if len(cleaned) > MAX_PATTERN_CHARS:
                # the limit import-knowledge applies: a pattern goes into every prompt
                raise CuratorError(
                    f"the edited text is {len(cleaned):,} characters, over the "
                    f"{MAX_PATTERN_CHARS:,} a pattern may have; shorten it"
                )
            if cleaned == candidate.text:
                state.update(
                    final_text=None, rematch_action=None, rematch_target_id=None, rematch_ratio=None
                )
            else:
                check = check_text(store, cleaned)
                state.update(
                    final_text=cleaned,
                    rematch_action=check.action,
                    rematch_target_id=check.target_id,
                    rematch_ratio=check.ratio,
                )
        if importance is not None:
            state["final_importance"] = None if importance == candidate.importance else importance
        if keep_pattern_text is not None:
            state["keep_pattern_text"] = keep_pattern_text
        if state["final_text"] is None:
            state["keep_pattern_text"] = None  # nothing to choose without an edit
        resolve(candidate, state, verb, target_id, settings)
        # Deciding a flagged candidate is allowed; that the flags were seen is recorded.
        state["flags_seen"] = seen_record(_flags_now(flag_context(store), candidate, state))
        state.update(
            decided_by=who, decided_via=actor, decided_at=format_utc(utcnow()), state="reviewed"
        )
        _record(candidate, before, state, actor, "decide")
    return get_candidate(store, candidate_id)


def accept_all(
    store: Store,
    run_id: int,
    actor: str = "cli --accept-all",
    *,
    include_flagged: bool = False,
    only: Collection[int] | None = None,
    reviewer: str | None = None,
) -> int:
    """Accept every unreviewed proposal of the run; returns how many were accepted.

    A proposal that :func:`decide` would refuse (its target pattern was retired or
    deleted) stays unreviewed for a person to decide. So does a flagged candidate (see
    :mod:`curator.core.flags`) unless ``include_flagged``: then its flags are recorded as
    seen, as for a single decision. ``only`` limits it to those candidates: the ones a
    confirmation listed, so a candidate that became undecided after it was shown (another
    reviewer undid its decision) is not accepted unseen. Only undecided candidates are
    touched, under the write lock, so it never overwrites anyone's decision.
    """
    who = reviewer if reviewer is not None else reviewer_name()
    accepted = 0
    with store.explained_write("accept-all"):
        run = require_run(run_id)
        if run.status != "staged":
            raise CuratorError(f"run {run_id} is {run.status}, not staged")
        settings = load_settings(store)
        pending = list(
            Candidate.select()
            .where((Candidate.run == run_id) & Candidate.action.is_null())
            .order_by(Candidate.ordinal)
        )
        if only is not None:
            wanted = set(only)
            pending = [c for c in pending if c.id in wanted]
        # an ADD that a pattern written since staging now matches waits for a person
        adds = [c for c in pending if accepted_action(c) == "ADD"]
        newer = newer_matches(run, [c.final_text or c.text for c in adds], settings)
        stale = {c.id for c, match in zip(adds, newer, strict=True) if match is not None}
        pending = [c for c in pending if c.id not in stale]
        now = utcnow()
        events = []
        flagger = flag_context(store)
        names = candidate_sources([c.id for c in pending])
        for candidate in pending:
            flags = flagger.flags(
                candidate.final_text or candidate.text, names[candidate.id], candidate.guard_flags
            )
            if flags and not include_flagged:
                continue
            before = decision_state(candidate)
            state = dict(before)
            try:
                resolve(candidate, state, "ACCEPT", None, settings, check_newer=False)
            except CuratorError:
                continue
            state["flags_seen"] = seen_record(flags)
            state.update(
                decided_by=who, decided_via=actor, decided_at=format_utc(now), state="reviewed"
            )
            _write_state(candidate, state)
            events.append(
                {
                    "candidate": candidate.id,
                    "actor": actor,
                    "at": now,
                    "before": before,
                    "after": state,
                    "kind": "decide",
                }
            )
            accepted += 1
        for start in range(0, len(events), 200):
            DecisionEvent.insert_many(events[start : start + 200]).execute()
    return accepted


EDIT_FIELDS = (
    "final_text",
    "final_importance",
    "keep_pattern_text",
    "rematch_action",
    "rematch_target_id",
    "rematch_ratio",
)
"""The decision columns an edit sets (what undoing only the edit puts back)."""


def _undo_edit_only(store: Store, event: DecisionEvent, actor: str) -> bool:
    """Take back only the edit of ``event`` when it decided an undecided candidate with an
    edit and the decision stands without it; False (nothing written) otherwise.

    The decision kept is the proposal when the edited one followed its re-match (an
    accept), else the same action and target. The event is replaced by one deciding
    without the edit (its ``before`` kept), so the next undo takes the decision back.
    """
    after, prior = event.after, event.before
    if prior.get("action") is not None or after.get("action") is None:
        return False
    if all(after.get(name) == prior.get(name) for name in EDIT_FIELDS):
        return False
    candidate = Candidate.get_by_id(event.candidate_id)
    state = _standing(store, {name: prior.get(name) for name in DECISION_FIELDS}, event.at)
    kept = after.get("target_id")
    if kept is not None and not _still_there(store, [kept], event.at):
        return False  # the decision's pattern is gone (or another under its id): undo both
    follows_rematch = after.get("rematch_action") == after["action"] and (
        after.get("rematch_target_id") == after.get("target_id")
    )
    verb = "ACCEPT" if follows_rematch else str(after["action"])
    target = None if follows_rematch else after.get("target_id")
    try:
        resolve(candidate, state, verb, target, load_settings(store))
    except CuratorError:
        return False  # the decision needs the edit (a target gone…): undo both at once
    state["flags_seen"] = seen_record(_flags_now(flag_context(store), candidate, state))
    state.update(
        decided_by=after.get("decided_by"),
        decided_via=after.get("decided_via"),
        decided_at=after.get("decided_at"),
    )
    state["state"] = after.get("state")
    _record(candidate, decision_state(candidate), state, actor, "undo")
    DecisionEvent.update(undone=True).where(DecisionEvent.id == event.id).execute()
    DecisionEvent.create(
        candidate=candidate.id, actor=event.actor, at=event.at, before=prior, after=state
    )
    return True


def _standing(store: Store, state: dict[str, Any], recorded: datetime) -> dict[str, Any]:
    """An earlier decision state (recorded at ``recorded``) as it can stand now: a pattern
    removed since (its commit undone) is no target. A decision into it is no decision (the
    candidate is undecided again, its edit kept); a re-match into it keeps its action only,
    which cannot be accepted (:func:`curator.pipeline.review_resolve.resolve` says why)."""
    named = [state[k] for k in ("target_id", "rematch_target_id") if state.get(k) is not None]
    present = _still_there(store, named, recorded)
    kept = dict(state)
    if kept.get("rematch_target_id") is not None and kept["rematch_target_id"] not in present:
        kept["rematch_target_id"] = None
    if kept.get("target_id") is not None and kept["target_id"] not in present:
        undecided = ("action", "target_id", "target_ratio", "decision_target_revision")
        kept.update(dict.fromkeys(undecided), state="pending", flags_seen=None)
        kept.update(decided_by=None, decided_via=None, decided_at=None)
    return kept


def _still_there(store: Store, pattern_ids: list[int], recorded: datetime) -> set[int]:
    """Which of the patterns a state recorded at ``recorded`` named are those patterns
    still. Where the engine gives a removed row's id to the next row (SQLite), a pattern
    written after the state was recorded is another one under the same id; elsewhere
    (PostgreSQL's sequences) the clocks of several machines need not be compared."""
    rows = Pattern.select(Pattern.id, Pattern.created_at).where(Pattern.id.in_(pattern_ids))
    reused = store.dialect.reuses_ids
    return {p.id for p in rows if not reused or as_utc(p.created_at) <= as_utc(recorded)}


def _undo_event(store: Store, event: DecisionEvent, actor: str, edit_first: bool = False) -> int:
    """Restore the state before ``event`` (inside store.write()); returns the candidate id.

    ``edit_first``: only the edit, when :func:`_undo_edit_only` can keep the decision."""
    if edit_first and _undo_edit_only(store, event, actor):
        return int(event.candidate_id)
    candidate = Candidate.get_by_id(event.candidate_id)
    before = decision_state(candidate)
    restored = _standing(
        store, {name: event.before.get(name) for name in DECISION_FIELDS}, event.at
    )
    _record(candidate, before, restored, actor, "undo")
    DecisionEvent.update(undone=True).where(DecisionEvent.id == event.id).execute()
    return int(candidate.id)


def _open_decisions() -> Any:
    """Decide events not undone yet, of candidates not committed (newest first)."""
    return (
        DecisionEvent.select()
        .join(Candidate, on=(DecisionEvent.candidate == Candidate.id))
        .where(
            (Candidate.state != "applied")
            & (DecisionEvent.kind == "decide")
            & (DecisionEvent.undone == False)  # noqa: E712 - peewee expression
        )
        .order_by(DecisionEvent.id.desc())
    )


def undo_last_decision(
    store: Store,
    run_id: int,
    actor: str = "human",
    *,
    edit_first: bool = False,
    reviewer: str | None = None,
) -> CandidateView | None:
    """Restore the decision state before the reviewer's newest not-yet-undone decision.

    Repeated calls walk further back. Decisions of committed candidates are skipped (undo
    the commit for those), and so are other reviewers' (:func:`own_newest`: a decision of
    yours that another reviewer has decided over since is a DecisionConflict, not undone).
    Returns the restored candidate, or None when nothing is left. ``edit_first``: see
    :func:`undo_decision`.
    """
    who = reviewer if reviewer is not None else reviewer_name()
    with store.explained_write("undo of the decision"):
        run = require_run(run_id)
        if run.status != "staged":
            return None
        event = own_newest(_open_decisions().where(Candidate.run == run_id), who)
        if event is None:
            return None
        candidate_id = _undo_event(store, event, actor, edit_first)
    return get_candidate(store, candidate_id)


def undo_decision(
    store: Store,
    candidate_id: int,
    actor: str = "human",
    *,
    edit_first: bool = False,
    reviewer: str | None = None,
    expect_revision: int | None = None,
) -> CandidateView | None:
    """Undo the newest decision of one candidate (the reviewer's row, not the run's last).

    The candidate returns to its state before that decision (an earlier decision of it,
    or undecided). None when the candidate has no decision left to undo; CuratorError
    when it cannot be decided any more (committed, or its run is not staged).

    ``edit_first`` (the window's keys): a decision made together with an edit (the edit
    dialog decides an undecided candidate) is taken back in two steps, the edit first
    and the decision on the next undo, as the reviewer made two choices in it.

    ``expect_revision``: as for :func:`decide`, another reviewer's decision made since
    that revision is not taken back unseen (DecisionConflict).
    """
    who = reviewer if reviewer is not None else reviewer_name()
    with store.explained_write("undo of the decision"):
        check_version(_open_candidate(candidate_id), expect_revision, who)
        event = _open_decisions().where(Candidate.id == candidate_id).first()
        if event is None:
            return None
        _undo_event(store, event, actor, edit_first)
    return get_candidate(store, candidate_id)


def record_proposals(store: Store, run_id: int) -> int:
    """Record the pipeline's proposals as ``model`` DecisionEvents (call when staging).

    The audit trail then starts with what the model proposed; these events are not
    decisions and :func:`undo_last_decision` never reverts them.
    """
    with store.explained_write("proposal record"):
        now = utcnow()
        rows = [
            {
                "candidate": c.id,
                "actor": "model",
                "at": now,
                "before": {},
                "after": {
                    "proposed_action": c.proposed_action,
                    "proposed_target_id": c.proposed_target_id,
                    "proposed_ratio": c.proposed_ratio,
                    "target_revision": c.target_revision,
                },
                "kind": "propose",
            }
            for c in Candidate.select().where(Candidate.run == run_id)
        ]
        for start in range(0, len(rows), 200):
            DecisionEvent.insert_many(rows[start : start + 200]).execute()
    return len(rows)
