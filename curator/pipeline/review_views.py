"""Reading the review: the candidates, runs and patterns a reviewer looks at (no writes).

The read side of :mod:`curator.pipeline.review`, kept apart from the decisions so each
stays small: what a candidate looks like to a reviewer (:class:`CandidateView`, with
its shown target, re-match, quality reasons and memory-poisoning flags computed *now*),
how far a run's review is, what an edited text would get, which patterns are near a
text, which runs wait for review and what a candidate was distilled from.

:mod:`curator.pipeline.review` re-exports these names: the command line, the window
and scripts use that module as the one review API.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from peewee import fn

from curator.core.flag_type import Flag
from curator.core.quality import QualityGate
from curator.errors import CuratorError
from curator.pipeline.flagging import candidate_sources, flag_context
from curator.pipeline.stale_adds import NewerMatch, newer_matches
from curator.store.db import Store
from curator.store.engine import in_chunks
from curator.store.models import Candidate, CandidateEpisode, Episode, Pattern, Run
from curator.store.settings import Settings, load_settings
from curator.store.snapshot import tuples

TARGETED = ("SKIP", "UPDATE")
"""The actions that link a candidate to a pattern."""


def require_run(run_id: int) -> Run:
    """The run, or CuratorError naming the id that does not exist."""
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        raise CuratorError(f"there is no run {run_id}")
    return run


def quality_gate(settings: Settings) -> QualityGate:
    """The quality gate as the settings configure it (what an edited text must pass)."""
    return QualityGate(settings.min_chars, settings.min_words, settings.drop_degenerate)


@dataclass(frozen=True)
class CandidateView:
    """One candidate as the window and the command line show it.

    ``target_text``/``target_importance`` describe the pattern shown side by side *now*:
    the decided target for SKIP/UPDATE, else the re-match of an edited text, else the
    proposed target. ``rematch_*`` is the dedup gate's proposal for the edited text and
    ``quality_reasons`` what the quality gate says about it (empty: passes or not edited).
    ``flags`` are the memory-poisoning flags of the effective text, computed now (against
    the current axioms and trust settings); ``flags_seen`` what the reviewer was shown when
    deciding. ``distilled_at`` is the original date of imported knowledge (None otherwise);
    ``origin`` its original ids and dates in the other memory tool
    (:mod:`curator.store.memtool_origin`; None for our own candidates).
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
    """The reviewer's name (rows decided before names were kept: the channel)."""
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
    origin: dict[str, Any] | None = None
    decided_via: str | None = None
    """The channel of the decision: "human" (the window), "cli", "cli --accept-all"..."""
    newer_target_id: int | None = None
    """An ADD's stale proposal: the pattern written since staging that the gate would now
    SKIP it into or UPDATE (:mod:`curator.pipeline.stale_adds`); None: none."""
    newer_ratio: float | None = None
    newer_text: str | None = None

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
    for chunk in in_chunks(ids):
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
    settings = load_settings(store)
    gate_ = quality_gate(settings)
    flagger = flag_context(store)
    names = candidate_sources(ids)
    newer = _newer(candidates, settings)
    views = []
    for c in candidates:
        match = newer.get(c.id)
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
                origin=c.origin,
                decided_via=c.decided_via,
                newer_target_id=match.pattern_id if match else None,
                newer_ratio=match.ratio if match else None,
                newer_text=match.text if match else None,
            )
        )
    return views


def accepted_action(candidate: Candidate) -> str:
    """What accepting the candidate's proposal decides (its edit's re-match, if edited)."""
    if candidate.final_text is not None:
        return str(candidate.rematch_action or "ADD")
    return str(candidate.proposed_action)


def _newer(candidates: list[Candidate], settings: Settings) -> dict[int, NewerMatch]:
    """The open ADDs (decided, or to be by accepting) that a pattern written since their
    run was staged now matches."""
    adds: dict[int, list[Candidate]] = {}
    for c in candidates:
        action = c.action if c.action is not None else accepted_action(c)
        if c.state != "applied" and action == "ADD":
            adds.setdefault(int(c.run_id), []).append(c)
    found: dict[int, NewerMatch] = {}
    for run_id, group in adds.items():
        texts = [c.final_text if c.final_text is not None else c.text for c in group]
        for c, match in zip(
            group, newer_matches(Run.get_by_id(run_id), texts, settings), strict=True
        ):
            if match is not None:
                found[c.id] = match
    return found


def list_candidates(store: Store, run_id: int) -> list[CandidateView]:
    """The run's candidates in the pipeline's order."""
    require_run(run_id)
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
        require_run(run_id)
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
    verdict = quality_gate(settings).check(text)
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
