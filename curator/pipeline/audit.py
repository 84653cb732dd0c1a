"""Audit what is already stored: the flags over committed patterns, identity and axioms.

Knowledge committed before the flags existed (or with a flag a reviewer waved through)
is in the agent's prompt today. :func:`audit` runs the same detector over every active
pattern, with its provenance (source episodes and their sources, the run that created
it), and over the identity text and each axiom; :func:`retire_patterns` takes flagged
patterns out of the prompt as one undoable changeset (kind ``retire``; undone with
:func:`curator.pipeline.commit.undo_changeset` like a commit).

The identity and axioms are checked for every kind but ``identity`` (they *are* the
reference) and ``instruction`` when the text is an axiom: axioms are rules by design.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from curator.core.flag_type import Flag, short
from curator.core.flags import detect
from curator.errors import CuratorError
from curator.pipeline.commit import (
    ChangesetSummary,
    _insert_change_rows,
    _Recorder,
    _summary,
)
from curator.pipeline.flagging import flag_context, pattern_sources
from curator.store.db import Store
from curator.store.identity import current_identity
from curator.store.models import Changeset, Pattern, PatternEpisode, Run, utcnow
from curator.store.profile import reviewer_name
from curator.store.snapshot import tuples


@dataclass(frozen=True)
class AuditEntry:
    """One flagged item: a pattern (``pattern_id``) or the identity/an axiom (``where``)."""

    where: str  # "pattern" | "identity" | "axiom N"
    text: str
    flags: tuple[Flag, ...]
    pattern_id: int | None = None
    importance: float | None = None
    created_run_id: int | None = None
    created_run_kind: str | None = None
    episode_ids: tuple[int, ...] = ()
    sources: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "pattern_id": self.pattern_id,
            "text": self.text,
            "importance": self.importance,
            "flags": [f.to_json() for f in self.flags],
            "provenance": {
                "created_run_id": self.created_run_id,
                "created_run_kind": self.created_run_kind,
                "episode_ids": list(self.episode_ids),
                "sources": sorted(set(self.sources)),
            },
        }


@dataclass
class AuditReport:
    patterns_checked: int = 0
    identity_version: int = 0
    entries: list[AuditEntry] = field(default_factory=list)

    def pattern_flags(self) -> dict[int, tuple[Flag, ...]]:
        return {e.pattern_id: e.flags for e in self.entries if e.pattern_id is not None}

    def to_json(self) -> dict[str, Any]:
        return {
            "patterns_checked": self.patterns_checked,
            "identity_version": self.identity_version,
            "flagged": len(self.entries),
            "entries": [e.to_json() for e in self.entries],
        }


def audit(store: Store) -> AuditReport:
    """Every active pattern, the identity and the axioms that carry at least one flag."""
    flagger = flag_context(store)
    identity = current_identity(store)
    report = AuditReport(identity_version=identity.version)
    rows = tuples(
        Pattern.select(Pattern.id, Pattern.text, Pattern.importance, Pattern.created_run)
        .where(Pattern.status == "active")
        .order_by(Pattern.id)
    )
    report.patterns_checked = len(rows)
    names = pattern_sources(r[0] for r in rows)
    flagged: list[tuple[int, str, float, int | None, list[Flag]]] = []
    for pid, text, importance, run_id in rows:
        flags = flagger.flags(text, names[pid])
        if flags:
            flagged.append((pid, text, importance, run_id, flags))
    ids = [f[0] for f in flagged]
    episodes: dict[int, list[int]] = {i: [] for i in ids}
    for start in range(0, len(ids), 500):
        links = PatternEpisode.select(PatternEpisode.pattern, PatternEpisode.episode).where(
            PatternEpisode.pattern.in_(ids[start : start + 500])
        )
        for pid, eid in tuples(links):
            episodes[int(pid)].append(int(eid))
    run_ids = {r for f in flagged if (r := f[3]) is not None}
    kinds = dict(tuples(Run.select(Run.id, Run.kind).where(Run.id.in_(sorted(run_ids)))))
    for pid, text, importance, run_id, flags in flagged:
        report.entries.append(
            AuditEntry(
                where="pattern",
                text=text,
                flags=tuple(flags),
                pattern_id=pid,
                importance=importance,
                created_run_id=run_id,
                created_run_kind=kinds.get(run_id) if run_id is not None else None,
                episode_ids=tuple(sorted(episodes[pid])),
                sources=tuple(names[pid]),
            )
        )
    if identity.identity_text.strip():
        flags = [f for f in detect(identity.identity_text) if f.kind != "identity"]
        if flags:
            report.entries.append(AuditEntry("identity", identity.identity_text, tuple(flags)))
    for number, axiom in enumerate(identity.axioms, 1):
        flags = [f for f in detect(axiom) if f.kind not in ("identity", "instruction")]
        if flags:
            report.entries.append(AuditEntry(f"axiom {number}", axiom, tuple(flags)))
    return report


def retire_patterns(
    store: Store,
    pattern_ids: Sequence[int],
    actor: str = "human",
    reason: str = "audit",
    *,
    reviewer: str | None = None,
    shown: Mapping[int, str] | None = None,
) -> ChangesetSummary:
    """Retire active patterns (out of the prompt, kept for provenance) as one changeset.

    Undo it like a commit (:func:`curator.pipeline.commit.undo_changeset`). Refused, with
    nothing changed, when a pattern does not exist or is not active, or when ``shown``
    (each id's text as the person saw it) no longer holds: an id names another text once
    the pattern was reworded, or once it was removed and SQLite gave its id to the next
    one. ``actor`` is the channel, ``reviewer`` the person (None: :func:`reviewer_name`).
    """
    who = reviewer if reviewer is not None else reviewer_name()
    wanted = sorted(set(pattern_ids))
    if not wanted:
        raise CuratorError("give at least one pattern to retire")
    with store.explained_write("retirement"):
        found = {p.id: p for p in Pattern.select().where(Pattern.id.in_(wanted))}
        for pid in wanted:
            if pid not in found:
                raise CuratorError(f"there is no pattern {pid}")
            if found[pid].status != "active":
                raise CuratorError(f"pattern {pid} is {found[pid].status}, not active")
            if shown is not None and pid not in shown:
                raise CuratorError(f"pattern {pid} was not among those shown; nothing was retired")
            if shown is not None and shown[pid] != found[pid].text:
                raise CuratorError(
                    f"pattern {pid} is no longer the one shown: it now reads "
                    f"{short(found[pid].text, 80)!r}; nothing was retired, look again"
                )
        recorder = _Recorder(store)
        recorder.existing("pattern", [(pid,) for pid in wanted])
        now = utcnow()
        Pattern.update(status="retired", revision=Pattern.revision + 1, updated_at=now).where(
            Pattern.id.in_(wanted)
        ).execute()
        rows = recorder.rows()
        changeset = Changeset.create(
            run=None,
            kind="retire",
            actor=actor,
            reviewer=who,
            created_at=now,
            summary={
                "counts": {"retired": len(wanted), "rows": len(rows)},
                "patterns": wanted,
                "reason": reason,
            },
        )
        _insert_change_rows(store, changeset.id, rows)
        return _summary(changeset)
