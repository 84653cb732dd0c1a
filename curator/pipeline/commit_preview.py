"""What a commit of a run would change: the plan the commit applies, and the preview of it.

The preview is what the reviewer accepts, so it says what the agent will get, not only
what the rows will hold: next to each UPDATE's stored importance old → new it gives the
effective importance (``importance * rate ** days``, :mod:`curator.core.scoring`) and the
pattern's rank in the prompt before → after, in or out of the top K, under the current
"UPDATE refreshes the decay clock" setting (:mod:`curator.store.decay_clock`). With the
clock kept, raising a pattern distilled 90 days ago from 0.38 to 1.00 leaves it at an
effective 0.010 where it was ranked; the preview says in words that such an UPDATE will
not move the pattern, and why. ADDs get their rank too, and the prompt patterns the
commit pushes out of the top K are listed (:class:`PromptEffect`).

The after-state is computed with the commit's own rules (:func:`after_reference`, the
same ``rank_key`` and ``merge_importance``) at one reference time, so at that time it
equals what the database holds after the commit (a property test holds it to that).

The fingerprint (:mod:`curator.pipeline.fingerprint`) covers the setting too: a preview
taken with the clock kept is not committed with the clock refreshed, or the other way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from curator.core.scoring import (
    as_utc,
    clamp01,
    days_between,
    decay_reference,
    effective_importance,
    merge_importance,
    rank_key,
    standing_key,
)
from curator.core.textsafety import SHOWS_NOTHING, pattern_line, visible
from curator.pipeline.commit_reads import read_open
from curator.pipeline.fingerprint import DecisionKey, decision_keys, fingerprint
from curator.pipeline.stale_adds import newer_matches
from curator.store.db import Store
from curator.store.decay_clock import update_refreshes_decay
from curator.store.models import Candidate, Pattern, Run, checked_importance, utcnow
from curator.store.settings import load_settings


@dataclass(frozen=True)
class FlaggedDecision:
    """A decided candidate whose text carried memory-poisoning flags when it was decided."""

    candidate_id: int
    action: str
    kinds: list[str]
    reasons: list[str]

    def describe(self) -> str:
        return f"candidate {self.candidate_id} {self.action} ({', '.join(self.kinds)})"


def _flagged_decision(c: Candidate) -> FlaggedDecision | None:
    seen = c.flags_seen or []
    if not seen:
        return None
    kinds = list(dict.fromkeys(str(f.get("kind", "")) for f in seen))
    return FlaggedDecision(c.id, str(c.action), kinds, [str(f.get("reason", "")) for f in seen])


# -- planning ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewAdd:
    candidate_id: int
    text: str
    importance: float
    category: str
    distilled_at: datetime | None = None  # imported knowledge keeps its date; None: now


@dataclass(frozen=True)
class PreviewUpdate:
    candidate_id: int
    pattern_id: int
    pattern_text: str
    old_importance: float
    new_importance: float
    new_text: str | None = None
    """The reviewer's edited wording that replaces ``pattern_text``; None keeps the text."""
    kept_edit: str | None = None
    """The reviewer's edited wording when they chose to keep the pattern's text instead."""


@dataclass(frozen=True)
class PreviewSkip:
    candidate_id: int
    pattern_id: int | None


@dataclass(frozen=True)
class Conflict:
    candidate_id: int
    pattern_id: int | None
    reason: str

    def describe(self) -> str:
        return f"candidate {self.candidate_id} ({self.reason})"


@dataclass(frozen=True)
class CommitPreview:
    """What a commit of the run would change now."""

    run_id: int
    run_status: str
    adds: list[PreviewAdd] = field(default_factory=list)
    updates: list[PreviewUpdate] = field(default_factory=list)
    skips: list[PreviewSkip] = field(default_factory=list)
    rejects: list[int] = field(default_factory=list)
    unreviewed: int = 0
    conflicts: list[Conflict] = field(default_factory=list)
    flagged: list[FlaggedDecision] = field(default_factory=list)
    decisions: tuple[DecisionKey, ...] = ()
    """The decision state this preview shows (:mod:`curator.pipeline.fingerprint`)."""
    fingerprint: str = ""
    """Its fingerprint: ``commit_run(expect=...)`` applies exactly this state or refuses."""
    refresh_clock: bool = False
    """The "UPDATE refreshes the decay clock" setting this preview (and its fingerprint)
    was computed under."""
    effect: PromptEffect | None = None
    """What the commit does to the prompt (:func:`with_effect`); None in the plan a
    commit reads under its write lock, which does not need it."""

    def counts(self) -> dict[str, int]:
        return {
            "ADD": len(self.adds),
            "UPDATE": len(self.updates),
            "SKIP": len(self.skips),
            "REJECT": len(self.rejects),
            "unreviewed": self.unreviewed,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_status": self.run_status,
            "fingerprint": self.fingerprint,
            "counts": self.counts(),
            "adds": [
                {
                    **vars(a),
                    "distilled_at": a.distilled_at.isoformat() if a.distilled_at else None,
                    **self._standing_json(
                        self.effect.adds.get(a.candidate_id) if self.effect else None
                    ),
                }
                for a in self.adds
            ],
            "updates": [
                {**vars(u), **self._standing_json(self.effect.patterns.get(u.pattern_id))}
                if self.effect is not None
                else vars(u)
                for u in self.updates
            ],
            "skips": [vars(s) for s in self.skips],
            "rejects": list(self.rejects),
            "conflicts": [vars(c) for c in self.conflicts],
            "flagged": [vars(f) for f in self.flagged],
            "prompt": self.effect.to_json() if self.effect is not None else None,
        }

    @staticmethod
    def _standing_json(standing: Standing | None) -> dict[str, Any]:
        return standing.to_json(with_ids=False) if standing is not None else {}


def candidate_importance(c: Candidate) -> float:
    """The importance a decision gives: the reviewer's, else the scored one (clamped)."""
    return clamp01(c.final_importance if c.final_importance is not None else c.importance)


def _expected_revision(c: Candidate) -> int | None:
    """The revision the reviewer's decision was based on (see curator.pipeline.review)."""
    if c.decision_target_revision is not None:
        return int(c.decision_target_revision)
    return c.target_revision


@dataclass
class Plan:
    """A run's open decisions read in one state: the preview, and what applying it needs."""

    run: Run
    preview: CommitPreview
    apply: list[Candidate]
    patterns: dict[int, Pattern]


def plan_commit(store: Store, run_id: int) -> Plan:
    """Read the run's open candidates and their targets; call inside one transaction."""
    run, open_candidates, patterns = read_open(run_id)
    apply = [c for c in open_candidates if c.action is not None]
    unreviewed = len(open_candidates) - len(apply)
    keys = decision_keys(open_candidates, patterns)
    refresh = update_refreshes_decay(store)
    preview = CommitPreview(
        run_id=run.id,
        run_status=run.status,
        unreviewed=unreviewed,
        decisions=keys,
        fingerprint=fingerprint(run.id, keys, refresh_clock=refresh),
        refresh_clock=refresh,
    )
    rewording: dict[int, tuple[int, str]] = {}  # pattern -> (candidate, edited text)
    stale = _decided_before_newer(store, run, [c for c in apply if c.action == "ADD"])
    for c in apply:
        flagged = _flagged_decision(c)
        if flagged is not None:
            preview.flagged.append(flagged)
        if c.id in stale:
            preview.conflicts.append(stale[c.id])
        elif c.action == "ADD":
            # one line, as the review showed it (a run staged before the rule may hold more)
            text = pattern_line(c.final_text if c.final_text is not None else c.text)
            if not visible(text):  # staged before the quality gate refused such a text
                preview.conflicts.append(Conflict(c.id, None, f"its text {SHOWS_NOTHING}"))
                continue
            preview.adds.append(
                PreviewAdd(c.id, text, candidate_importance(c), c.category, c.distilled_at)
            )
        elif c.action == "REJECT":
            preview.rejects.append(c.id)
        elif c.action in ("UPDATE", "SKIP"):
            conflict = _check_target(c, patterns)
            if conflict is not None:
                preview.conflicts.append(conflict)
                continue
            target = c.target_id
            if target is None:  # SKIP of a batch-internal duplicate: nothing to link
                preview.skips.append(PreviewSkip(c.id, None))
                continue
            p = patterns[target]
            if c.action == "SKIP":
                preview.skips.append(PreviewSkip(c.id, p.id))
                continue
            # The reviewer chose per candidate: their wording replaces the pattern's text,
            # or (keep_pattern_text) the edit only informed the decision and importance.
            keep = bool(c.keep_pattern_text)
            new_text = (
                pattern_line(c.final_text) if (c.final_text is not None and not keep) else None
            )
            kept_edit = c.final_text if (c.final_text is not None and keep) else None
            if new_text is not None and not visible(new_text):  # edited before the rule
                preview.conflicts.append(Conflict(c.id, p.id, f"its edit {SHOWS_NOTHING}"))
                continue
            if new_text is not None:
                other = rewording.setdefault(p.id, (c.id, new_text))
                if other[1] != new_text:
                    preview.conflicts.append(
                        Conflict(
                            c.id,
                            p.id,
                            f"candidate {other[0]} rewords pattern {p.id} differently; "
                            "keep one of the two edits",
                        )
                    )
                    continue
            new = merge_importance(p.importance, candidate_importance(c))
            preview.updates.append(
                PreviewUpdate(
                    c.id, p.id, p.text, p.importance, new, new_text=new_text, kept_edit=kept_edit
                )
            )
        else:
            preview.conflicts.append(Conflict(c.id, None, f"unknown action {c.action!r}"))
    return Plan(run=run, preview=preview, apply=apply, patterns=patterns)


def _decided_before_newer(store: Store, run: Run, adds: list[Candidate]) -> dict[int, Conflict]:
    """The ADDs decided before a pattern they now match was written (a stale proposal
    accepted: :mod:`curator.pipeline.stale_adds`), each as its conflict."""
    texts = [c.final_text if c.final_text is not None else c.text for c in adds]
    newer = newer_matches(run, texts, load_settings(store))
    conflicts = {}
    for c, match in zip(adds, newer, strict=True):
        decided = as_utc(c.decided_at) if c.decided_at is not None else None
        if match is not None and (decided is None or decided < match.written_at):
            conflicts[c.id] = Conflict(
                c.id, match.pattern_id, f"{match.describe()}; decide it again"
            )
    return conflicts


def _check_target(c: Candidate, patterns: dict[int, Pattern]) -> Conflict | None:
    expected = _expected_revision(c)
    target = c.target_id
    if target is None:
        if c.action == "UPDATE":
            return Conflict(c.id, None, "its target pattern was deleted")
        return None  # a SKIP with nothing to link (a duplicate within the run)
    p = patterns.get(target)
    if p is None:
        return Conflict(c.id, target, f"pattern {target} was deleted")
    if p.status != "active":
        return Conflict(c.id, p.id, f"pattern {p.id} is {p.status}")
    if expected is not None and p.revision != expected:
        return Conflict(c.id, p.id, f"pattern {p.id} changed: revision {expected} -> {p.revision}")
    return None


def preview_commit(store: Store, run_id: int, *, now: datetime | None = None) -> CommitPreview:
    """What :func:`~curator.pipeline.commit.commit_run` would change, conflicts included,
    with its effect on the prompt at ``now`` (default: the clock). Nothing is written."""
    with store.read():  # the plan's queries and the ranking see one committed state
        plan = plan_commit(store, run_id)
        return with_effect(store, plan.preview, now)


# -- the effect on the prompt -------------------------------------------------------------


@dataclass(frozen=True)
class Standing:
    """One pattern before → after the commit: stored and effective importance, prompt rank.

    ``pattern_id`` is None for a pattern the commit adds (it has no id yet); the "before"
    fields are None for it. Ranks are 1-based among the active patterns, in prompt order.
    """

    pattern_id: int | None
    candidate_ids: tuple[int, ...]
    importance_before: float | None
    importance_after: float
    effective_before: float | None
    effective_after: float
    rank_before: int | None
    rank_after: int
    in_prompt_before: bool
    in_prompt_after: bool
    words: str = ""
    """One sentence on what happens to the pattern in the prompt (and why it does not
    move, when it does not)."""

    @property
    def moves(self) -> bool:
        return self.rank_before != self.rank_after

    def to_json(self, *, with_ids: bool = True) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        if with_ids:
            doc["pattern_id"] = self.pattern_id
            doc["candidate_ids"] = list(self.candidate_ids)
            doc["importance_before"] = self.importance_before
            doc["importance_after"] = self.importance_after
        doc.update(
            effective_before=self.effective_before,
            effective_after=self.effective_after,
            rank_before=self.rank_before,
            rank_after=self.rank_after,
            in_prompt_before=self.in_prompt_before,
            in_prompt_after=self.in_prompt_after,
            moves=self.moves,
            words=self.words,
        )
        return doc


@dataclass(frozen=True)
class PromptEffect:
    """The commit's effect on the prompt at ``reference_time``, under the saved settings."""

    reference_time: datetime
    top_k: int
    decay_rate: float
    refresh_clock: bool
    patterns: dict[int, Standing] = field(default_factory=dict)
    """Every pattern an UPDATE touches, by id."""
    adds: dict[int, Standing] = field(default_factory=dict)
    """Every pattern an ADD creates, by candidate id."""
    leaving: list[Standing] = field(default_factory=list)
    """Patterns no decision touches that the commit pushes out of the top K."""

    def to_json(self) -> dict[str, Any]:
        return {
            "reference_time": self.reference_time.isoformat(),
            "top_k": self.top_k,
            "decay_rate": self.decay_rate,
            "update_refreshes_decay": self.refresh_clock,
            "leaving": [s.to_json() for s in self.leaving],
        }


def after_reference(distilled_at: datetime, now: datetime, refresh_clock: bool) -> datetime:
    """The decay reference an UPDATE leaves: the commit time with the clock refreshed, else
    the pattern's own (at most ``now``, :func:`curator.core.scoring.decay_reference`)."""
    return now if refresh_clock else decay_reference(distilled_at, now)


def add_reference(distilled_at: datetime | None, now: datetime) -> datetime:
    """The ``distilled_at`` an ADD gets: the commit time, or its own date (at most now)."""
    return now if distilled_at is None else decay_reference(distilled_at, now)


_Order = tuple[float, float, int]


def _order(key: float, reference: datetime, pattern_id: int) -> _Order:
    """The store's prompt order (:mod:`curator.store.knowledge`): key, newer, lower id."""
    return (-key, -reference.timestamp(), pattern_id)


def _ranks(orders: dict[int, _Order]) -> dict[int, int]:
    ranked = sorted(orders, key=orders.__getitem__)
    return {pid: rank for rank, pid in enumerate(ranked, 1)}


def _active_rows(store: Store) -> dict[int, tuple[float, datetime, float]]:
    """id -> (importance, distilled_at, stored key) of every active pattern.

    Plain SQL, not the query builder: at 20,000 patterns converting model rows took most
    of the preview's time.
    """
    parse = Pattern.distilled_at.python_value
    cursor = store.db.execute_sql(
        'SELECT "id", "importance", "distilled_at", "rank_key" FROM "pattern" WHERE "status" = ?',
        ("active",),
    )
    return {
        int(pid): (float(checked_importance(imp)), parse(when), float(key))
        for pid, imp, when, key in cursor
    }


def with_effect(store: Store, preview: CommitPreview, now: datetime | None = None) -> CommitPreview:
    """``preview`` with its :class:`PromptEffect` at ``now`` (call in a transaction).

    Reads every active pattern as plain tuples (id, importance, date, key) and ranks them
    twice, before and after, the way the store ranks them: the stored key for dates up to
    ``now``, :func:`~curator.core.scoring.standing_key` for a date in the future. A new
    pattern gets the id the insert will give it (after the largest id), which only
    matters for exact ties.
    """
    at = as_utc(now) if now is not None else utcnow()
    saved = load_settings(store)
    rate, k, refresh = saved.decay_rate, saved.top_k, preview.refresh_clock
    rows = _active_rows(store)
    at_ts = at.timestamp()
    before: dict[int, _Order] = {}
    for pid, (importance, distilled, stored_key) in rows.items():
        if distilled.timestamp() <= at_ts:
            before[pid] = (-stored_key, -distilled.timestamp(), pid)
        else:  # an older database's future date: ranked where its shown value is
            before[pid] = _order(standing_key(importance, distilled, at, rate), at, pid)
    after = dict(before)
    merged: dict[int, float] = {}
    candidates: dict[int, list[int]] = {}
    for u in preview.updates:
        merged[u.pattern_id] = merge_importance(
            merged.get(u.pattern_id, u.old_importance), u.new_importance
        )
        candidates.setdefault(u.pattern_id, []).append(u.candidate_id)
    references: dict[int, datetime] = {}
    for pid, importance in merged.items():
        references[pid] = after_reference(rows[pid][1], at, refresh)
        after[pid] = _order(rank_key(importance, references[pid], rate), references[pid], pid)
    next_id = int(Pattern.select(Pattern.id).order_by(Pattern.id.desc()).scalar() or 0) + 1
    new_ids: dict[int, int] = {}
    for offset, a in enumerate(preview.adds):
        pid = next_id + offset
        new_ids[a.candidate_id] = pid
        reference = add_reference(a.distilled_at, at)
        references[pid] = reference
        after[pid] = _order(rank_key(a.importance, reference, rate), reference, pid)
    rank_before, rank_after = _ranks(before), _ranks(after)

    def effective(importance: float, reference: datetime) -> float:
        return effective_importance(importance, reference, now=at, rate=rate)

    effect = PromptEffect(at, k, rate, refresh)
    for pid, importance in merged.items():
        old = rows[pid]
        standing = Standing(
            pattern_id=pid,
            candidate_ids=tuple(candidates[pid]),
            importance_before=old[0],
            importance_after=importance,
            effective_before=effective(old[0], old[1]),
            effective_after=effective(importance, references[pid]),
            rank_before=rank_before[pid],
            rank_after=rank_after[pid],
            in_prompt_before=rank_before[pid] <= k,
            in_prompt_after=rank_after[pid] <= k,
        )
        age = days_between(decay_reference(old[1], at), at)
        effect.patterns[pid] = _worded(standing, update_words(standing, k, refresh, age))
    for a in preview.adds:
        pid = new_ids[a.candidate_id]
        standing = Standing(
            pattern_id=None,
            candidate_ids=(a.candidate_id,),
            importance_before=None,
            importance_after=a.importance,
            effective_before=None,
            effective_after=effective(a.importance, references[pid]),
            rank_before=None,
            rank_after=rank_after[pid],
            in_prompt_before=False,
            in_prompt_after=rank_after[pid] <= k,
        )
        effect.adds[a.candidate_id] = _worded(standing, add_words(standing, k))
    for pid, rank in sorted(rank_before.items(), key=lambda item: item[1]):
        if rank > k:
            break
        if pid in merged or rank_after[pid] <= k:
            continue
        old = rows[pid]
        value = effective(old[0], old[1])
        effect.leaving.append(
            Standing(
                pattern_id=pid,
                candidate_ids=(),
                importance_before=old[0],
                importance_after=old[0],
                effective_before=value,
                effective_after=value,
                rank_before=rank,
                rank_after=rank_after[pid],
                in_prompt_before=True,
                in_prompt_after=False,
                words=f"leaves the prompt: rank {rank} → {rank_after[pid]} (top {k})",
            )
        )
    return _with(preview, effect)


def _worded(standing: Standing, words: str) -> Standing:
    return Standing(**{**vars(standing), "words": words})


def _with(preview: CommitPreview, effect: PromptEffect) -> CommitPreview:
    return CommitPreview(**{**vars(preview), "effect": effect})


def _place(rank: int, k: int) -> str:
    return "in the prompt" if rank <= k else f"outside the prompt (top {k})"


def update_words(s: Standing, k: int, refresh_clock: bool, age_days: float) -> str:
    """What an UPDATE does to its pattern in the prompt, and why when it does nothing."""
    assert s.rank_before is not None and s.importance_before is not None
    move = f"rank {s.rank_before} → {s.rank_after}"
    if s.in_prompt_after and not s.in_prompt_before:
        head = f"enters the prompt: {move} (top {k})"
    elif s.in_prompt_before and not s.in_prompt_after:
        head = f"leaves the prompt: {move} (top {k})"
    elif s.moves and s.rank_after > s.rank_before:
        head = (
            f"moves down: {move}, {_place(s.rank_after, k)}, below the patterns this commit "
            "adds or updates ahead of it"
        )
    elif s.moves:
        head = f"moves up: {move}, {_place(s.rank_after, k)}"
    else:
        head = f"will not move: stays at rank {s.rank_before}, {_place(s.rank_after, k)}"
    if s.moves and s.in_prompt_after:
        return head
    # Not moved, or moved but still outside the prompt: say what held it back.
    if s.importance_after <= s.importance_before and not refresh_clock:
        why = (
            f"the candidate's importance is not above the pattern's {s.importance_before:.2f}, "
            "and an UPDATE does not refresh the decay clock"
        )
    elif not refresh_clock:
        why = (
            f"its stored importance rises {s.importance_before:.2f} → "
            f"{s.importance_after:.2f}, but the decay clock is not refreshed, so after "
            f"{age_days:.0f} days of decay its effective importance only goes "
            f"{s.effective_before:.3f} → {s.effective_after:.3f}"
        )
    elif s.rank_after == 1:
        return head + " (it is already first)"
    else:
        why = (
            f"even refreshed, its effective importance {s.effective_after:.3f} is below "
            "the patterns ranked ahead of it"
        )
    return f"{head}: {why}"


def add_words(s: Standing, k: int) -> str:
    """Where a new pattern lands in the prompt."""
    if s.in_prompt_after:
        return f"enters the prompt at rank {s.rank_after} (top {k})"
    return f"lands at rank {s.rank_after}, outside the prompt (top {k})"
