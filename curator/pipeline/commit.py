"""Committing a reviewed run to Knowledge, and undoing a commit.

A commit applies every reviewed candidate of a run in ONE ``BEGIN IMMEDIATE`` transaction:
either all of the run's decisions reach Knowledge or none do, whatever happens to the
process (a kill, a full disk). Everything is read again under the write lock, so the
optimistic check (has a target pattern changed since the reviewer's basis?) and the
writes see the same state; a conflict stops the whole commit before anything is written.

Each commit is a :class:`~curator.store.models.Changeset` whose ChangeRows hold every
touched row before and after (see :mod:`curator.store.snapshot`). Undo writes the
``before`` states back, after checking that every row is still in its ``after`` state:
rows changed again later cannot be restored without losing that later change.

Decisions made here (see the README of the review):
- The episodes marked distilled (``distilled_at``/``distilled_run``) are the source
  episodes of the candidates this commit applies, REJECTed ones included: a person has
  reviewed what they yield. With ``reviewed_only`` the episodes of the candidates left
  unreviewed stay undistilled until the rest is committed. The commit that completes a
  run also marks the episodes listed in ``Run.stats["episode_ids"]`` (batches that
  yielded no candidate), so they are not distilled again and again.
- A run becomes ``committed`` when no unreviewed candidate is left; after a partial
  (``reviewed_only``) commit it stays ``staged`` so the rest can be reviewed and committed.
- UPDATE keeps ``distilled_at`` and raises the importance to the larger of the two
  (``merge_importance``, so the rank key follows the usual rule); with "UPDATE refreshes
  the decay clock" on (:mod:`curator.store.decay_clock`) ``distilled_at`` becomes the
  commit time. It keeps the pattern's text, unless the reviewer edited the candidate's
  text: then the pattern's text becomes the reviewer's wording (an edit accepted is an
  edit applied; the changeset holds the old text, so undo restores it exactly), unless
  the reviewer chose "keep the pattern's text" (``Candidate.keep_pattern_text``). Two
  candidates rewording the same pattern differently in one commit are a conflict. SKIP
  adds provenance only (no revision bump); REJECT changes nothing but the candidate's state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from curator.core.scoring import as_utc, merge_importance, rank_key
from curator.core.wording import plural
from curator.errors import ConflictError, CuratorError
from curator.pipeline.commit_preview import (
    CommitPreview,
    Conflict,
    FlaggedDecision,
    Plan,
    PreviewAdd,
    PreviewSkip,
    PreviewUpdate,
    PromptEffect,
    Standing,
    add_reference,
    after_reference,
    candidate_importance,
    plan_commit,
    preview_commit,
    with_effect,
)
from curator.pipeline.fingerprint import DecisionsChangedError, refuse_if_changed
from curator.pipeline.guard_learn import relearn_after_commit
from curator.pipeline.undo_dependents import dependents
from curator.store.db import Store
from curator.store.engine import in_chunks
from curator.store.models import (
    Candidate,
    CandidateEpisode,
    ChangeRow,
    Changeset,
    Episode,
    Pattern,
    PatternEpisode,
    Run,
    format_utc,
    utcnow,
)
from curator.store.profile import reviewer_name
from curator.store.settings import load_settings
from curator.store.snapshot import (
    PARENTS_FIRST,
    Key,
    Row,
    key_dict,
    key_from_dict,
    read_rows,
    tuples,
    write_rows,
)

__all__ = [
    "UNDOABLE_KINDS",
    "ChangesetSummary",
    "CommitPreview",
    "Conflict",
    "FlaggedDecision",
    "PreviewAdd",
    "PreviewSkip",
    "PreviewUpdate",
    "PromptEffect",
    "Standing",
    "UnreviewedError",
    "commit_run",
    "history",
    "last_commit",
    "preview_commit",
    "undo_changeset",
]
"""The preview and its parts live in :mod:`curator.pipeline.commit_preview`; they are
named here too, where the commit's callers look for them."""

UNDOABLE_KINDS = ("commit", "retire")
"""Changesets :func:`undo_changeset` restores: a run's commit, a retirement of patterns."""


class UnreviewedError(CuratorError):
    """The run still has unreviewed candidates (commit them with ``reviewed_only``)."""

    exit_code = 1


# -- summaries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangesetSummary:
    id: int
    run_id: int | None
    kind: str
    created_at: datetime
    counts: dict[str, int]
    actor: str = "human"
    reviewer: str | None = None
    """The person who committed (curator.store.profile); None: before names were kept."""
    undoes_id: int | None = None
    undone_by_id: int | None = None
    backup: str | None = None
    """The backup a commit of an earlier release took first; None since commits no longer
    copy the database (periodic backups, :mod:`curator.store.backup_schedule`)."""
    flagged: list[dict[str, Any]] = field(default_factory=list)
    """Committed decisions on flagged candidates (:class:`FlaggedDecision` as JSON)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "kind": self.kind,
            "created_at": self.created_at.isoformat(),
            "counts": dict(self.counts),
            "actor": self.actor,
            "reviewer": self.reviewer,
            "undoes_id": self.undoes_id,
            "undone_by_id": self.undone_by_id,
            "backup": self.backup,
            "flagged": list(self.flagged),
        }


def _summary(cs: Changeset) -> ChangesetSummary:
    summary = cs.summary or {}
    return ChangesetSummary(
        id=cs.id,
        run_id=cs.run_id,
        kind=cs.kind,
        created_at=cs.created_at,
        counts={k: int(v) for k, v in summary.get("counts", {}).items()},
        actor=cs.actor,
        reviewer=cs.reviewer,
        undoes_id=cs.undoes_id,
        undone_by_id=cs.undone_by_id,
        backup=summary.get("backup"),
        flagged=list(summary.get("flagged") or []),
    )


def last_commit(store: Store, run_id: int | None = None) -> ChangesetSummary | None:
    """The newest commit not undone yet: of ``run_id`` when it has one, else overall.

    What "Undo last commit" reverts (the window names it, with its run and time, first).
    """
    with store.read():
        query = Changeset.select().where(
            (Changeset.kind == "commit") & (Changeset.undone_by.is_null())
        )
        found: Changeset | None = None
        if run_id is not None:
            found = query.where(Changeset.run == run_id).order_by(Changeset.id.desc()).first()
        if found is None:
            found = query.order_by(Changeset.id.desc()).first()
        return _summary(found) if found is not None else None


def history(store: Store, limit: int = 100) -> list[ChangesetSummary]:
    """The newest changesets first (commits and undos)."""
    query = Changeset.select().order_by(Changeset.id.desc()).limit(limit).bind(store.db)
    return [_summary(cs) for cs in query]


def _refuse(plan: Plan, reviewed_only: bool) -> None:
    """Raise the reason a commit of this plan cannot proceed, if there is one."""
    preview = plan.preview
    if plan.run.status != "staged":
        raise CuratorError(f"run {plan.run.id} is {plan.run.status}, not staged: nothing to commit")
    if preview.unreviewed and not reviewed_only:
        raise UnreviewedError(
            f"run {plan.run.id} has {plural(preview.unreviewed, 'unreviewed candidate')}; "
            "review them or commit with --reviewed-only"
        )
    if reviewed_only and not plan.apply:
        raise CuratorError(f"run {plan.run.id} has no reviewed candidates to commit")
    if preview.conflicts:
        shown = _first_ten([c.describe() for c in preview.conflicts], "; ")
        raise ConflictError(
            f"conflict: {plural(len(preview.conflicts), 'candidate')} of run {plan.run.id} "
            f"no longer hold as decided: {shown}. Nothing was applied; decide them again "
            "(an explicit target takes a pattern as it is now)"
        )


def _first_ten(items: list[str], separator: str) -> str:
    """The first ten of ``items`` and how many more, for a one-line refusal."""
    more = f"{separator}and {len(items) - 10} more" if len(items) > 10 else ""
    return separator.join(items[:10]) + more


# -- committing ---------------------------------------------------------------------------


class _Recorder:
    """Collects the keys a changeset touches and their states before the writes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.before: dict[str, dict[Key, Row | None]] = {t: {} for t in PARENTS_FIRST}

    def existing(self, table: str, keys: list[Key]) -> None:
        fresh = [k for k in keys if k not in self.before[table]]
        self.before[table].update(read_rows(self.store, table, fresh))

    def created(self, table: str, keys: list[Key]) -> None:
        for key in keys:
            self.before[table].setdefault(key, None)

    def rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for table in PARENTS_FIRST:
            keys = list(self.before[table])
            after = read_rows(self.store, table, keys)
            for key in keys:
                if self.before[table][key] != after[key]:
                    rows.append(
                        {
                            "table": table,
                            "key": key_dict(table, key),
                            "before": self.before[table][key],
                            "after": after[key],
                        }
                    )
        return rows


def _insert_change_rows(store: Store, changeset_id: int, rows: list[dict[str, Any]]) -> None:
    """Bulk insert (thousands of rows per commit: plain executemany, not the query builder).

    The JSON is written exactly as ``JSONField`` writes it, so the models read it back.
    """
    field = ChangeRow.key  # any JSONField: the same serialisation for key, before, after
    store.db.cursor().executemany(
        'INSERT INTO "change_row" ("changeset_id", "table", "key", "before", "after") '
        "VALUES (?, ?, ?, ?, ?)",
        [
            (
                changeset_id,
                row["table"],
                field.db_value(row["key"]),
                field.db_value(row["before"]),
                field.db_value(row["after"]),
            )
            for row in rows
        ],
    )


def _sources(candidate_ids: list[int]) -> dict[int, list[int]]:
    sources: dict[int, list[int]] = {cid: [] for cid in candidate_ids}
    for chunk in in_chunks(candidate_ids):
        query = (
            CandidateEpisode.select(CandidateEpisode.candidate, CandidateEpisode.episode)
            .where(CandidateEpisode.candidate.in_(chunk))
            .order_by(CandidateEpisode.candidate, CandidateEpisode.episode)
        )
        for cid, eid in tuples(query):
            sources[cid].append(eid)
    return sources


def _apply(store: Store, plan: Plan, actor: str, now: datetime, reviewer: str) -> ChangesetSummary:
    run = plan.run
    rate = load_settings(store).decay_rate
    recorder = _Recorder(store)
    candidate_ids = [c.id for c in plan.apply]
    sources = _sources(candidate_ids)
    episode_ids = {e for eids in sources.values() for e in eids}
    if not plan.preview.unreviewed:
        # The run is done: every episode it processed counts as distilled, including the
        # batches that yielded no candidate (the pipeline lists them in its stats).
        listed = (run.stats or {}).get("episode_ids") or []
        episode_ids.update(int(e) for e in listed)
    recorder.existing("run", [(run.id,)])
    recorder.existing("candidate", [(cid,) for cid in candidate_ids])
    recorder.existing("episode", [(eid,) for eid in sorted(episode_ids)])
    updated = sorted({u.pattern_id for u in plan.preview.updates})
    recorder.existing("pattern", [(pid,) for pid in updated])

    linked: set[tuple[int, int]] = set()
    targets = sorted({t for c in plan.apply if (t := c.target_id) is not None})
    for chunk in in_chunks(targets):
        query = PatternEpisode.select(PatternEpisode.pattern, PatternEpisode.episode).where(
            PatternEpisode.pattern.in_(chunk)
        )
        linked.update((int(p), int(e)) for p, e in tuples(query))

    new_links: list[tuple[int, int]] = []

    def link(pattern_id: int, cid: int) -> None:
        for eid in sources[cid]:
            if (pattern_id, eid) not in linked:
                linked.add((pattern_id, eid))
                new_links.append((pattern_id, eid))

    importance: dict[int, float] = {pid: plan.patterns[pid].importance for pid in updated}
    texts: dict[int, str] = {}
    by_id = {c.id: c for c in plan.apply}
    cursor = store.db.cursor()
    # When the rows are written, under the write lock: ``now`` (the commit's time for
    # decay) may be a preview's, taken before. A pattern's written time orders it against
    # decisions (curator.pipeline.review, curator.pipeline.stale_adds): SQLite gives a
    # removed pattern's id to the next one, told apart by this time.
    written = utcnow()
    stamp = format_utc(written)
    for add in plan.preview.adds:
        # At most the commit's own time: a staged date can be ahead of this clock (a
        # run staged before the clock was set back, or by an older version), and decay
        # must never start in the future (see curator.core.scoring.decay_reference).
        distilled = add_reference(add.distilled_at, now)
        cursor.execute(
            'INSERT INTO "pattern" ("text", "importance", "distilled_at", "rank_key", '
            '"category", "status", "revision", "created_run_id", "updated_run_id", '
            '"created_at", "updated_at") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) '
            'RETURNING "id"',  # both engines: SQLite 3.35+ and PostgreSQL
            (
                add.text,
                add.importance,
                format_utc(distilled),
                rank_key(add.importance, distilled, rate=rate),
                add.category,
                "active",
                1,
                run.id,
                None,
                stamp,
                stamp,
            ),
        )
        pid = int(cursor.fetchone()[0])
        recorder.created("pattern", [(pid,)])
        link(pid, add.candidate_id)
    for upd in plan.preview.updates:
        importance[upd.pattern_id] = merge_importance(
            importance[upd.pattern_id], candidate_importance(by_id[upd.candidate_id])
        )
        if upd.new_text is not None:
            texts[upd.pattern_id] = upd.new_text
        link(upd.pattern_id, upd.candidate_id)
    for skip in plan.preview.skips:
        if skip.pattern_id is not None:
            link(skip.pattern_id, skip.candidate_id)
    refresh_clock = plan.preview.refresh_clock  # the setting the fingerprint covers
    for pid in updated:
        p = plan.patterns[pid]
        reference = after_reference(p.distilled_at, now, refresh_clock)
        Pattern.update(
            text=texts.get(pid, p.text),
            importance=importance[pid],
            distilled_at=reference,
            rank_key=rank_key(importance[pid], reference, rate=rate),
            revision=p.revision + 1,
            updated_run=run.id,
            updated_at=written,
        ).where(Pattern.id == pid).execute()
    cursor.executemany(
        'INSERT INTO "pattern_episode" ("pattern_id", "episode_id", "run_id") VALUES (?, ?, ?)',
        [(p, e, run.id) for p, e in new_links],
    )
    recorder.created("pattern_episode", new_links)
    ordered = sorted(episode_ids)
    for chunk in in_chunks(ordered):
        Episode.update(distilled_at=now, distilled_run=run.id).where(
            Episode.id.in_(chunk)
        ).execute()
    for chunk in in_chunks(candidate_ids):
        Candidate.update(state="applied").where(Candidate.id.in_(chunk)).execute()
    unreviewed = plan.preview.unreviewed
    if unreviewed:
        Run.update(
            status_reason=f"partly committed; {plural(unreviewed, 'candidate')} still to review"
        ).where(Run.id == run.id).execute()
    else:
        Run.update(status="committed", status_reason="").where(Run.id == run.id).execute()

    rows = recorder.rows()
    counts = plan.preview.counts()
    counts["rows"] = len(rows)
    summary: dict[str, Any] = {
        "counts": counts,
        "flagged": [vars(f) for f in plan.preview.flagged],
    }
    changeset = Changeset.create(
        run=run.id, kind="commit", actor=actor, reviewer=reviewer, created_at=now, summary=summary
    )
    _insert_change_rows(store, changeset.id, rows)
    return _summary(changeset)


def commit_run(
    store: Store,
    run_id: int,
    *,
    reviewed_only: bool = False,
    actor: str = "human",
    expect: str | None = None,
    now: datetime | None = None,
    reviewer: str | None = None,
) -> ChangesetSummary:
    """Apply the run's reviewed decisions to Knowledge, all at once, as one changeset.

    ``expect`` is the fingerprint of the preview the reviewer accepted: the decisions are
    compared with it under the write lock, so a decision written since (by another
    process or window) makes the commit refuse with DecisionsChangedError (a
    ConflictError carrying the fresh preview) instead of applying what nobody was shown.
    None commits the state as it is (scripts that decided everything themselves).

    Raises UnreviewedError if candidates are unreviewed (unless ``reviewed_only``),
    ConflictError naming the candidates whose target changed since the review (nothing is
    applied), CuratorError for anything else (also with nothing applied).

    No copy of the database is taken first: that made every commit cost O(database).
    The changeset is what undoes a commit; backups are taken periodically and on close
    (:mod:`curator.store.backup_schedule`, ``curator backup``).

    The committed decisions teach the learned guard, which then re-judges every candidate
    still waiting for review (:func:`curator.pipeline.guard_learn.relearn_after_commit`).

    ``now`` is the commit's time (default: the clock); a preview taken at the same time
    announced exactly the importances and ranks the commit leaves.

    ``reviewer`` is the person recorded on the changeset (None: the profile's name,
    :func:`curator.store.profile.reviewer_name`); ``actor`` stays the channel.
    """
    who = reviewer if reviewer is not None else reviewer_name()
    at = utcnow() if now is None else as_utc(now)
    with store.explained_write("commit"):
        # Read again under the write lock: this is the state the writes apply to.
        plan = plan_commit(store, run_id)
        if plan.run.status == "staged":  # else _refuse names the status, a plainer reason
            try:
                refuse_if_changed(plan.preview, expect)
            except DecisionsChangedError as exc:
                # the fresh preview is shown in place of the refused one: give it the
                # prompt's before → after like any preview (read under the same lock)
                exc.preview = with_effect(store, exc.preview, at)
                raise
        elif expect is not None:
            # A preview with a fingerprint was of a staged run: it has been committed or
            # cancelled since (by another window or program), a conflict like any other
            # change, so the loser of two racing commits exits 1, not as a usage error.
            raise ConflictError(
                f"run {plan.run.id} is {plan.run.status}, no longer staged as in the preview "
                f"with fingerprint {expect}; nothing was committed"
            )
        _refuse(plan, reviewed_only)
        summary = _apply(store, plan, actor, at, who)
    relearn_after_commit(store)
    return summary


# -- undo ---------------------------------------------------------------------------------


DERIVED_COLUMNS: dict[str, frozenset[str]] = {"pattern": frozenset({"rank_key"})}
"""Columns computed from others and from the settings: a new decay rate rewrites every
pattern's ``rank_key`` without being a change of that pattern, so an undo neither counts
them as a later change (which blocked every undo after a decay-rate change, with no
"later change" to undo) nor restores their old value (it recomputes them)."""


def _comparable(table: str, values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    derived = DERIVED_COLUMNS.get(table, frozenset())
    return {column: value for column, value in values.items() if column not in derived}


def _rerank_patterns(store: Store, pattern_ids: Sequence[int]) -> None:
    """Recompute the ranking key of restored patterns with the decay rate now in force."""
    if not pattern_ids:
        return
    rate = load_settings(store).decay_rate
    rows = list(Pattern.select().where(Pattern.id.in_(list(pattern_ids))))
    for row in rows:
        row.rank_key = rank_key(row.importance, row.distilled_at, rate=rate)
    Pattern.bulk_update(rows, fields=[Pattern.rank_key], batch_size=500)


def undo_changeset(
    store: Store, changeset_id: int, actor: str = "human", reviewer: str | None = None
) -> ChangesetSummary:
    """Restore every row a commit touched to its state before the commit, as a new changeset.

    Refused with nothing changed: CuratorError for an undo changeset; ConflictError (exit
    code 1, as for a commit) for a changeset already undone and when any touched row was
    changed again after the commit. ``reviewer``: as for :func:`commit_run`.
    """
    who = reviewer if reviewer is not None else reviewer_name()
    with store.explained_write("undo"):
        original = Changeset.get_or_none(Changeset.id == changeset_id)
        if original is None:
            raise CuratorError(f"there is no changeset {changeset_id}")
        if original.kind not in UNDOABLE_KINDS:
            undone = Changeset.get_or_none(Changeset.id == original.undoes_id)
            if undone is not None and undone.kind == "retire":
                redo = "retire those patterns again"
            elif original.run_id is not None:
                redo = f"commit run {original.run_id} again"
            else:
                redo = "make the change again"
            raise CuratorError(
                f"changeset {changeset_id} is an {original.kind}; only commits and retirements "
                f"can be undone (to redo what it took back, {redo})"
            )
        if original.undone_by_id is not None:
            raise ConflictError(
                f"changeset {changeset_id} was already undone by changeset {original.undone_by_id}"
            )
        change_rows = list(
            ChangeRow.select().where(ChangeRow.changeset == original.id).order_by(ChangeRow.id)
        )
        keyed: dict[str, list[tuple[Key, ChangeRow]]] = {t: [] for t in PARENTS_FIRST}
        for row in change_rows:
            keyed.setdefault(row.table, []).append((key_from_dict(row.table, row.key), row))
        changed: list[str] = []
        for table, items in keyed.items():
            current = read_rows(store, table, [k for k, _ in items])
            for key, row in items:
                if _comparable(table, current[key]) != _comparable(table, row.after):
                    changed.append(f"{table} {'/'.join(str(v) for v in key)}")
        if changed:
            raise ConflictError(
                f"cannot undo changeset {changeset_id}: {len(changed)} of its rows changed "
                f"since ({_first_ten(changed, ', ')}); undo the later changes first"
            )
        added = [int(key[0]) for key, row in keyed.get("pattern", []) if row.before is None]
        users = dependents(
            added,
            {key for key, _ in keyed.get("candidate", [])},
            {key for key, _ in keyed.get("pattern_episode", [])},
        )
        if users:
            raise ConflictError(
                f"cannot undo changeset {changeset_id}: a pattern it added is used since: "
                f"{_first_ten(users, '; ')}; undo that commit or decide those candidates again "
                "first"
            )
        # Children before parents when removing rows, parents first when restoring them.
        for table in reversed(PARENTS_FIRST):
            gone = [(key, None) for key, row in keyed.get(table, []) if row.before is None]
            write_rows(store, table, gone)
        for table in PARENTS_FIRST:
            back = [
                (key, row.before) for key, row in keyed.get(table, []) if row.before is not None
            ]
            write_rows(store, table, back)
        restored = [int(key[0]) for key, row in keyed.get("pattern", []) if row.before is not None]
        _rerank_patterns(store, restored)
        counts: dict[str, int] = {"rows": len(change_rows)}
        for table, items in keyed.items():
            if items:
                counts[table] = len(items)
        undo = Changeset.create(
            run=original.run_id,
            kind="undo",
            actor=actor,
            reviewer=who,
            created_at=utcnow(),
            summary={"counts": counts},
            undoes=original.id,
        )
        _insert_change_rows(
            store,
            undo.id,
            [
                {"table": r.table, "key": r.key, "before": r.after, "after": r.before}
                for r in change_rows
            ],
        )
        Changeset.update(undone_by=undo.id).where(Changeset.id == original.id).execute()
        return _summary(Changeset.get_by_id(undo.id))
