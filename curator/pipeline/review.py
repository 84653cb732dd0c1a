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
a text is never added twice; UPDATE needs a pattern and is refused without one.

Every write goes through ``store.write()`` (one ``BEGIN IMMEDIATE`` transaction) and
reads the candidate inside it, so two reviewers (window and command line) never act on a
state the other has just changed, and never fail on a lock upgrade.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from peewee import fn

from curator.core.flags import Flag
from curator.core.quality import QualityGate
from curator.core.textsafety import control_problem
from curator.errors import CuratorError
from curator.pipeline.flagging import FlagContext, candidate_sources, flag_context, seen_record
from curator.store.db import Store
from curator.store.knowledge_file import MAX_PATTERN_CHARS
from curator.store.models import (
    Candidate,
    CandidateEpisode,
    DecisionEvent,
    Episode,
    Pattern,
    Run,
    format_utc,
    utcnow,
)
from curator.store.settings import Settings, load_settings
from curator.store.snapshot import tuples

FINAL_ACTIONS = ("SKIP", "UPDATE", "ADD", "REJECT")
DECIDE_ACTIONS = ("ACCEPT", *FINAL_ACTIONS)
TARGETED = ("SKIP", "UPDATE")

DECISION_FIELDS = (
    "action",
    "target_id",
    "target_ratio",
    "final_text",
    "final_importance",
    "decided_by",
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


@dataclass(frozen=True)
class CandidateView:
    """One candidate as the window and the command line show it.

    ``target_text``/``target_importance`` describe the pattern shown side by side *now*:
    the decided target for SKIP/UPDATE, else the re-match of an edited text, else the
    proposed target. ``rematch_*`` is the dedup gate's proposal for the edited text and
    ``quality_reasons`` what the quality gate says about it (empty: passes or not edited).
    ``flags`` are the memory-poisoning flags of the effective text, computed now (against
    the current axioms and trust settings); ``flags_seen`` what the reviewer was shown when
    deciding. ``distilled_at`` is the original date of imported knowledge (None otherwise).
    """

    id: int
    run_id: int
    ordinal: int
    text: str
    importance: float
    category: str
    proposed_action: str
    proposed_target_id: int | None
    proposed_ratio: float
    action: str | None
    target_id: int | None
    target_ratio: float | None
    final_text: str | None
    final_importance: float | None
    decided_by: str | None
    decided_at: datetime | None
    state: str
    source_episode_ids: tuple[int, ...]
    target_text: str | None
    target_importance: float | None
    rematch_action: str | None = None
    rematch_target_id: int | None = None
    rematch_ratio: float | None = None
    quality_reasons: tuple[str, ...] = ()
    shown_target_id: int | None = None
    target_status: str | None = None
    revision: int = 1
    flags: tuple[Flag, ...] = ()
    flags_seen: list[dict[str, str]] | None = None
    distilled_at: datetime | None = None
    keep_pattern_text: bool = False

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    @property
    def reviewed(self) -> bool:
        return self.action is not None

    @property
    def effective_text(self) -> str:
        return self.final_text if self.final_text is not None else self.text

    @property
    def effective_importance(self) -> float:
        return self.final_importance if self.final_importance is not None else self.importance

    @property
    def rewords(self) -> bool:
        """An UPDATE whose commit replaces the pattern's text with the reviewer's wording."""
        return (
            self.action == "UPDATE" and self.final_text is not None and not self.keep_pattern_text
        )

    @property
    def current_proposal(self) -> str:
        """What ACCEPT would do now: the re-match for an edited text, else the proposal."""
        if self.final_text is not None and self.rematch_action is not None:
            return self.rematch_action
        return self.proposed_action

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["decided_at"] = self.decided_at.isoformat() if self.decided_at else None
        doc["source_episode_ids"] = list(self.source_episode_ids)
        doc["quality_reasons"] = list(self.quality_reasons)
        doc["flags"] = [f.to_json() for f in self.flags]
        doc["distilled_at"] = self.distilled_at.isoformat() if self.distilled_at else None
        return doc


@dataclass(frozen=True)
class ReviewProgress:
    total: int
    reviewed: int
    by_action: dict[str, int] = field(default_factory=dict)

    @property
    def unreviewed(self) -> int:
        return self.total - self.reviewed

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "reviewed": self.reviewed,
            "unreviewed": self.unreviewed,
            "by_action": dict(self.by_action),
        }


@dataclass(frozen=True)
class TextCheck:
    """The quality verdict and dedup proposal for a text (what an edit would get)."""

    ok: bool
    reasons: tuple[str, ...]
    action: str
    target_id: int | None
    ratio: float
    target_text: str | None = None


# -- reading ----------------------------------------------------------------------------


def _quality_gate(settings: Settings) -> QualityGate:
    return QualityGate(settings.min_chars, settings.min_words, settings.drop_degenerate)


def _shown_target(c: Candidate) -> int | None:
    target = c.target_id
    if c.action in TARGETED and target is not None:
        return target
    rematch = c.rematch_target_id
    if c.final_text is not None and rematch is not None:
        return rematch
    return c.proposed_target_id


def _views(store: Store, candidates: list[Candidate]) -> list[CandidateView]:
    if not candidates:
        return []
    ids = [c.id for c in candidates]
    sources: dict[int, list[int]] = {i: [] for i in ids}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        links = (
            CandidateEpisode.select(CandidateEpisode.candidate, CandidateEpisode.episode)
            .where(CandidateEpisode.candidate.in_(chunk))
            .order_by(CandidateEpisode.episode)
        )
        for cid, eid in tuples(links):
            sources[cid].append(eid)
    shown = {c.id: _shown_target(c) for c in candidates}
    wanted = sorted({t for t in shown.values() if t is not None})
    patterns: dict[int, tuple[str, float, str]] = {}
    for start in range(0, len(wanted), 500):
        rows = Pattern.select(Pattern.id, Pattern.text, Pattern.importance, Pattern.status).where(
            Pattern.id.in_(wanted[start : start + 500])
        )
        for pid, text, importance, status in tuples(rows):
            patterns[pid] = (text, importance, status)
    gate_ = _quality_gate(load_settings(store))
    flagger = flag_context(store)
    names = candidate_sources(ids)
    views = []
    for c in candidates:
        target = shown[c.id]
        info = patterns.get(target) if target is not None else None
        reasons: tuple[str, ...] = ()
        if c.final_text is not None:
            reasons = tuple(gate_.check(c.final_text).reasons)
        views.append(
            CandidateView(
                id=c.id,
                run_id=int(c.run_id or 0),
                ordinal=c.ordinal,
                text=c.text,
                importance=c.importance,
                category=c.category,
                proposed_action=c.proposed_action,
                proposed_target_id=c.proposed_target_id,
                proposed_ratio=c.proposed_ratio,
                action=c.action,
                target_id=c.target_id,
                target_ratio=c.target_ratio,
                final_text=c.final_text,
                final_importance=c.final_importance,
                decided_by=c.decided_by,
                decided_at=c.decided_at,
                state=c.state,
                source_episode_ids=tuple(sources[c.id]),
                target_text=info[0] if info else None,
                target_importance=info[1] if info else None,
                rematch_action=c.rematch_action,
                rematch_target_id=c.rematch_target_id,
                rematch_ratio=c.rematch_ratio,
                quality_reasons=reasons,
                shown_target_id=target if info else None,
                target_status=info[2] if info else None,
                revision=c.revision,
                flags=tuple(flagger.flags(c.final_text or c.text, names[c.id], c.guard_flags)),
                flags_seen=c.flags_seen,
                distilled_at=c.distilled_at,
                keep_pattern_text=bool(c.keep_pattern_text),
            )
        )
    return views


def list_candidates(store: Store, run_id: int) -> list[CandidateView]:
    """The run's candidates in the pipeline's order."""
    _get_run(run_id)
    candidates = list(Candidate.select().where(Candidate.run == run_id).order_by(Candidate.ordinal))
    return _views(store, candidates)


def get_candidate(store: Store, candidate_id: int) -> CandidateView:
    candidate = Candidate.get_or_none(Candidate.id == candidate_id)
    if candidate is None:
        raise CuratorError(f"there is no candidate {candidate_id}")
    return _views(store, [candidate])[0]


def review_progress(store: Store, run_id: int) -> ReviewProgress:
    """How far the review of a run is: total, reviewed, and the count of each action."""
    with store.read():
        _get_run(run_id)
        query = Candidate.select(Candidate.action).where(Candidate.run == run_id)
        actions = tuples(query.bind(store.db))
    total = 0
    reviewed = 0
    by_action: dict[str, int] = {}
    for (action,) in actions:
        total += 1
        if action is not None:
            reviewed += 1
            by_action[action] = by_action.get(action, 0) + 1
    return ReviewProgress(total=total, reviewed=reviewed, by_action=by_action)


def check_text(store: Store, text: str) -> TextCheck:
    """The quality verdict and the dedup proposal an edited text would get (no write).

    The window calls this while the reviewer types; :func:`decide` stores the same result.
    """
    # On use: the dedup engine (numpy) is not needed to list a run.
    from curator.core.dedup import gate

    settings = load_settings(store)
    verdict = _quality_gate(settings).check(text)
    active = (
        Pattern.select(Pattern.id, Pattern.text)
        .where(Pattern.status == "active")
        .order_by(Pattern.id)
    )
    rows = tuples(active)
    decision = gate(
        [text],
        [r[1] for r in rows],
        skip=settings.skip_threshold,
        update=settings.update_threshold,
    )[0]
    target = rows[decision.target] if decision.target is not None else None
    return TextCheck(
        ok=bool(verdict.ok),
        reasons=tuple(verdict.reasons),
        action=decision.action,
        target_id=target[0] if target else None,
        ratio=decision.ratio,
        target_text=target[1] if target else None,
    )


@dataclass(frozen=True)
class PatternMatch:
    """An active pattern offered as an UPDATE target, with its ratio to the candidate."""

    id: int
    text: str
    importance: float
    category: str
    ratio: float


NEAREST_LIMIT = 30
"""How many targets the picker offers at once (the search narrows the pool first)."""


def nearest_patterns(
    store: Store, text: str, search: str = "", limit: int = NEAREST_LIMIT
) -> list[PatternMatch]:
    """The active patterns most similar to ``text`` (the gate's ratio), best first.

    ``search`` keeps only patterns whose text contains it (case-insensitive), or whose
    id it names ("#12" or "12"), so a reviewer can find a target the ratio ranks low.
    A read of every active pattern: the window runs it off the GUI thread.
    """
    # On use: the dedup engine (numpy) is not needed to list a run.
    from curator.core.dedup import nearest

    with store.read():
        query = (
            Pattern.select(Pattern.id, Pattern.text, Pattern.importance, Pattern.category)
            .where(Pattern.status == "active")
            .order_by(Pattern.id)
        )
        rows = tuples(query.bind(store.db))
    needle = search.strip().casefold()
    if needle:
        wanted_id = needle.lstrip("#")
        rows = [
            r
            for r in rows
            if needle in r[1].casefold() or (wanted_id.isdigit() and r[0] == int(wanted_id))
        ]
    ranked = nearest(text, [r[1] for r in rows], limit)
    return [
        PatternMatch(rows[i][0], rows[i][1], rows[i][2], rows[i][3], ratio) for i, ratio in ranked
    ]


@dataclass(frozen=True)
class StagedRun:
    """A run waiting for review, as the run chooser lists it."""

    id: int
    started_at: datetime
    progress: ReviewProgress


def staged_runs(store: Store) -> list[StagedRun]:
    """The staged runs, newest first, with their review progress."""
    with store.read():
        runs = tuples(
            Run.select(Run.id, Run.started_at)
            .where(Run.status == "staged")
            .order_by(Run.id.desc())
            .bind(store.db)
        )
        counts: dict[int, dict[str | None, int]] = {}
        if runs:
            ids = [r[0] for r in runs]
            query = (
                Candidate.select(Candidate.run, Candidate.action, fn.COUNT(Candidate.id))
                .where(Candidate.run.in_(ids))
                .group_by(Candidate.run, Candidate.action)
            )
            for run_id, action, n in tuples(query.bind(store.db)):
                counts.setdefault(run_id, {})[action] = n
    result = []
    for run_id, started in runs:
        by = counts.get(run_id, {})
        by_action = {a: n for a, n in by.items() if a is not None}
        total = sum(by.values())
        progress = ReviewProgress(
            total=total, reviewed=sum(by_action.values()), by_action=by_action
        )
        result.append(StagedRun(run_id, started, progress))
    return result


@dataclass(frozen=True)
class SourceEpisode:
    """A candidate's source episode, as the review shows it beside the candidate."""

    id: int
    timestamp: datetime
    source: str
    label: str | None
    text: str


def source_episodes(store: Store, episode_ids: list[int]) -> list[SourceEpisode]:
    """The episodes a candidate was distilled from, oldest first."""
    found: list[SourceEpisode] = []
    with store.read():
        for start in range(0, len(episode_ids), 500):
            query = Episode.select(
                Episode.id, Episode.timestamp, Episode.source, Episode.label, Episode.text
            ).where(Episode.id.in_(episode_ids[start : start + 500]))
            found.extend(
                SourceEpisode(int(i), ts, src or "", label, text)
                for i, ts, src, label, text in tuples(query.bind(store.db))
            )
    return sorted(found, key=lambda e: e.timestamp)


# -- deciding ---------------------------------------------------------------------------


def _get_run(run_id: int) -> Run:
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        raise CuratorError(f"there is no run {run_id}")
    return run


def _open_candidate(candidate_id: int) -> Candidate:
    """The candidate, if it can still be decided (its run is staged, it is not committed)."""
    candidate = Candidate.get_or_none(Candidate.id == candidate_id)
    if candidate is None:
        raise CuratorError(f"there is no candidate {candidate_id}")
    run = _get_run(int(candidate.run_id or 0))
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


def _active_pattern(pattern_id: int) -> Pattern:
    pattern = Pattern.get_or_none(Pattern.id == pattern_id)
    if pattern is None or pattern.status != "active":
        state = "does not exist" if pattern is None else f"is {pattern.status}"
        raise CuratorError(f"pattern {pattern_id} {state}; choose an active pattern")
    return pattern


def _resolve(
    candidate: Candidate,
    state: dict[str, Any],
    verb: str,
    target_id: int | None,
    settings: Settings,
) -> None:
    """Set action, target, target_ratio and decision_target_revision in ``state``."""
    # On use: the dedup engine (numpy) is not needed to list a run.
    from curator.core.dedup import pair_ratio

    final_text: str | None = state["final_text"]
    if final_text is not None:
        p_action = state["rematch_action"] or "ADD"
        p_target = state["rematch_target_id"]
        p_ratio = state["rematch_ratio"]
    else:
        p_action = candidate.proposed_action
        p_target = candidate.proposed_target_id
        p_ratio = candidate.proposed_ratio
    action = p_action if verb == "ACCEPT" else verb
    if action not in FINAL_ACTIONS:
        raise CuratorError(f"candidate {candidate.id} has an unknown proposal {action!r}")
    if verb == "ACCEPT" and target_id is not None:
        raise CuratorError("ACCEPT takes the proposal as is; give SKIP or UPDATE with a target")
    state["action"] = action
    if action not in TARGETED:
        if target_id is not None:
            raise CuratorError(f"{action} takes no target pattern")
        state.update(target_id=None, target_ratio=None, decision_target_revision=None)
    else:
        # Where the target comes from decides which revision the commit checks: the
        # staging-time one for the pipeline's proposal, the current one otherwise.
        chosen: int | None
        if target_id is not None:
            chosen, basis = target_id, "reviewer"
        elif p_target is not None:
            chosen, basis = int(p_target), ("rematch" if final_text is not None else "proposal")
        else:
            chosen, basis = candidate.proposed_target_id, "proposal"
        if chosen is None:
            within_run = final_text is None and candidate.target_revision is None
            if action == "UPDATE" and not (verb == "ACCEPT" and within_run):
                gone = "the proposed one no longer exists" if not within_run else "none proposed"
                raise CuratorError(
                    f"candidate {candidate.id}: UPDATE needs a target pattern ({gone}); choose one"
                )
            # A duplicate with nothing to link: of an earlier candidate of the same run
            # (not a pattern yet), or of a pattern deleted since. Nothing is added twice.
            state.update(
                action="SKIP", target_id=None, target_ratio=None, decision_target_revision=None
            )
            return
        pattern = _active_pattern(chosen)
        if chosen == p_target and p_ratio is not None:
            ratio = float(p_ratio)
        else:
            ratio = pair_ratio(
                final_text if final_text is not None else candidate.text, pattern.text
            )
        state.update(
            target_id=chosen,
            target_ratio=ratio,
            decision_target_revision=None if basis == "proposal" else pattern.revision,
        )
    if final_text is not None and action in ("ADD", "UPDATE"):
        verdict = _quality_gate(settings).check(final_text)
        if not verdict.ok:
            raise CuratorError(
                f"candidate {candidate.id}: the edited text fails the quality gate "
                f"({'; '.join(verdict.reasons)}); it cannot be {action}ed"
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
    """
    verb = action.strip().upper()
    if verb not in DECIDE_ACTIONS:
        raise CuratorError(f"unknown action {action!r}; use one of {', '.join(DECIDE_ACTIONS)}")
    if importance is not None and (math.isnan(importance) or not 0.0 <= importance <= 1.0):
        raise CuratorError(f"importance must be between 0 and 1 (got {importance})")
    with store.explained_write("decision"):
        candidate = _open_candidate(candidate_id)
        before = decision_state(candidate)
        state = dict(before)
        settings = load_settings(store)
        if text is not None:
            cleaned = text.strip()
            if not cleaned:
                raise CuratorError("the edited text is empty; REJECT the candidate instead")
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
        _resolve(candidate, state, verb, target_id, settings)
        # Deciding a flagged candidate is allowed; that the flags were seen is recorded.
        state["flags_seen"] = seen_record(_flags_now(flag_context(store), candidate, state))
        state.update(decided_by=actor, decided_at=format_utc(utcnow()), state="reviewed")
        _record(candidate, before, state, actor, "decide")
    return get_candidate(store, candidate_id)


def accept_all(
    store: Store,
    run_id: int,
    actor: str = "cli --accept-all",
    *,
    include_flagged: bool = False,
    only: Collection[int] | None = None,
) -> int:
    """Accept every unreviewed proposal of the run; returns how many were accepted.

    A proposal that :func:`decide` would refuse (its target pattern was retired or
    deleted) stays unreviewed for a person to decide. So does a flagged candidate (see
    :mod:`curator.core.flags`) unless ``include_flagged``: then its flags are recorded as
    seen, as for a single decision. ``only`` limits it to those candidates: the ones a
    confirmation listed, so a candidate that became undecided after it was shown (another
    reviewer undid its decision) is not accepted unseen.
    """
    accepted = 0
    with store.explained_write("accept-all"):
        run = _get_run(run_id)
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
                _resolve(candidate, state, "ACCEPT", None, settings)
            except CuratorError:
                continue
            state["flags_seen"] = seen_record(flags)
            state.update(decided_by=actor, decided_at=format_utc(now), state="reviewed")
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
    state = {name: prior.get(name) for name in DECISION_FIELDS}
    follows_rematch = after.get("rematch_action") == after["action"] and (
        after.get("rematch_target_id") == after.get("target_id")
    )
    verb = "ACCEPT" if follows_rematch else str(after["action"])
    target = None if follows_rematch else after.get("target_id")
    try:
        _resolve(candidate, state, verb, target, load_settings(store))
    except CuratorError:
        return False  # the decision needs the edit (a target gone…): undo both at once
    state["flags_seen"] = seen_record(_flags_now(flag_context(store), candidate, state))
    state.update(decided_by=after.get("decided_by"), decided_at=after.get("decided_at"))
    state["state"] = after.get("state")
    _record(candidate, decision_state(candidate), state, actor, "undo")
    DecisionEvent.update(undone=True).where(DecisionEvent.id == event.id).execute()
    DecisionEvent.create(
        candidate=candidate.id, actor=event.actor, at=event.at, before=prior, after=state
    )
    return True


def _undo_event(store: Store, event: DecisionEvent, actor: str, edit_first: bool = False) -> int:
    """Restore the state before ``event`` (inside store.write()); returns the candidate id.

    ``edit_first``: only the edit, when :func:`_undo_edit_only` can keep the decision."""
    if edit_first and _undo_edit_only(store, event, actor):
        return int(event.candidate_id)
    candidate = Candidate.get_by_id(event.candidate_id)
    before = decision_state(candidate)
    restored = {name: event.before.get(name) for name in DECISION_FIELDS}
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
    store: Store, run_id: int, actor: str = "human", *, edit_first: bool = False
) -> CandidateView | None:
    """Restore the decision state before the run's newest not-yet-undone decision.

    Repeated calls walk further back. Decisions of committed candidates are skipped (undo
    the commit for those). Returns the restored candidate, or None when nothing is left.
    ``edit_first``: see :func:`undo_decision`.
    """
    with store.explained_write("undo of the decision"):
        run = _get_run(run_id)
        if run.status != "staged":
            return None
        event = _open_decisions().where(Candidate.run == run_id).first()
        if event is None:
            return None
        candidate_id = _undo_event(store, event, actor, edit_first)
    return get_candidate(store, candidate_id)


def undo_decision(
    store: Store, candidate_id: int, actor: str = "human", *, edit_first: bool = False
) -> CandidateView | None:
    """Undo the newest decision of one candidate (the reviewer's row, not the run's last).

    The candidate returns to its state before that decision (an earlier decision of it,
    or undecided). None when the candidate has no decision left to undo; CuratorError
    when it cannot be decided any more (committed, or its run is not staged).

    ``edit_first`` (the window's keys): a decision made together with an edit (the edit
    dialog decides an undecided candidate) is taken back in two steps, the edit first
    and the decision on the next undo, as the reviewer made two choices in it.
    """
    with store.explained_write("undo of the decision"):
        _open_candidate(candidate_id)
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
