"""Existing knowledge comes in through the same gate as distilled patterns.

:func:`import_knowledge` reads a knowledge file (:mod:`curator.store.knowledge_file`) and
stages a run of kind ``import`` whose candidates went through the quality gate and the
dedup gate exactly as a distillation batch does (the pool grows with the file's own ADDs,
so a pattern listed twice is proposed once). The rule flags are computed when the run is
reviewed, like any candidate's; the guard's (the model's second opinion when a model is
given and the settings allow it, the learned guard) are judged before staging and stored
(:mod:`curator.pipeline.guard`). Nothing reaches Knowledge before a person reviews and
commits the run; a committed ADD keeps the file's importance and ``distilled`` date.

Everything is written in one transaction: a file is staged completely or not at all (the
model is asked before it, so a failing model leaves nothing behind).
Line errors and quality-gate drops are in the report (and the run's trace), never silent.

A file can hold a hundred thousand patterns and take many minutes to gate, so the gate
runs the way distillation runs it (:func:`curator.core.dedup.gate` on batches, each
against the active patterns plus the ADDs so far), which gives it points to report
progress and to stop; a text identical to one already seen is answered without any
search (a repeated line costs a dictionary lookup). The decisions are those of one
``gate`` call over the whole file; the time for lines that differ is the gate's own
(``benchmarks/RESULTS-import-knowledge.md``). Between batches the import reports progress
(``progress(done, total)`` in patterns gated) and asks ``cancelled()``; a cancel
raises :class:`~curator.store.importer.ImportCancelled` and nothing is written (the
gate runs before the write transaction; a cancel during the write rolls it back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.core.dedup import Action, Decision, gate, pair_ratio
from curator.core.quality import QualityGate
from curator.core.wording import plural
from curator.llm.backend import Backend
from curator.pipeline.guard import staging_guard
from curator.pipeline.runlog import model_provenance, trace_fields
from curator.store.db import Store
from curator.store.importer import ImportCancelled, LineError
from curator.store.knowledge_file import KnowledgeItem, read_knowledge
from curator.store.models import Candidate, Pattern, Run, TraceStep, utcnow
from curator.store.settings import load_settings
from curator.store.snapshot import tuples

RUN_KIND = "import"
CATEGORY = "uncategorized"

GATE_BATCH = 500
"""New texts per ``gate`` call: the pool's bound matrix is built once per batch, and a
batch's own ADDs are searched text by text, so neither a tiny nor a huge batch is fast."""

ProgressFn = Callable[[int, int], None]
CancelledFn = Callable[[], bool]


def _stop_if_cancelled(cancelled: CancelledFn | None, name: str) -> None:
    if cancelled is not None and cancelled():
        raise ImportCancelled(f"import of {name} cancelled; nothing of it was staged")


def gate_file(
    texts: Sequence[str],
    existing: Sequence[str],
    *,
    skip: float,
    update: float,
    progress: ProgressFn | None = None,
    cancelled: CancelledFn | None = None,
    name: str = "the file",
) -> list[Decision]:
    """``gate(texts, existing)`` for a whole file, in batches, with progress and cancel.

    Equal to the single call (same actions, targets and ratios): the pool is ``existing``
    then the ADDs in file order, and each batch is gated against the pool as it stands.
    A *copy* (a text seen before in the pool or the file) never reaches the gate:

    * a copy of a pool text is a SKIP of its first copy at ratio 1.0 (a ratio of 1.0
      means equal texts, so nothing earlier can tie or beat it);
    * a copy of a text that was not ADDed (a SKIP or UPDATE: best ratio at least
      ``update``) keeps that best unless a text ADDed since beats it strictly, so only
      those ADDs are searched.

    Copies are answered after the batch in front of them, against the pool as it stood at
    their own position; they ADD nothing, so nothing after them changes. Texts of 200+
    characters whose ratio with themselves is below 1.0 (difflib's autojunk heuristic)
    are never treated as copies.
    """
    if skip > 1.0:  # a copy (ratio 1.0) would not be a SKIP: no shortcut is sound
        _stop_if_cancelled(cancelled, name)
        return gate(texts, existing, skip=skip, update=update)
    pool = list(existing)
    first: dict[str, int] = {}
    for index, text in enumerate(pool):
        first.setdefault(text, index)
    settled: dict[str, tuple[Decision, int]] = {}  # not ADDed: decision, pool size it saw
    plain: dict[str, bool] = {}  # text -> its ratio with itself is 1.0
    out: list[Decision | None] = [None] * len(texts)
    pending: list[int] = []
    pending_texts: set[str] = set()
    copies: list[tuple[int, int]] = []  # (position, pending texts in front of it)
    done = 0

    def is_plain(text: str) -> bool:
        if len(text) < 200:
            return True
        if text not in plain:
            plain[text] = pair_ratio(text, text) == 1.0
        return plain[text]

    def report() -> None:
        if progress is not None:
            progress(done, len(texts))

    def answer_copy(text: str, seen: int) -> Decision:
        """The decision of a copy whose position saw the first ``seen`` pool texts."""
        known = first.get(text)
        if known is not None and known < seen:
            return Decision("SKIP", known, 1.0)
        before, size = settled[text]
        result = before
        if size < seen:
            (later,) = gate([text], pool[size:seen], skip=skip, update=update)
            if later.target is not None and later.ratio > before.ratio:
                action: Action = "SKIP" if later.ratio >= skip else "UPDATE"
                result = Decision(action, size + later.target, later.ratio)
        settled[text] = (result, seen)
        return result

    def flush() -> None:
        nonlocal done
        _stop_if_cancelled(cancelled, name)
        seen_after = [len(pool)]  # pool size in front of the k-th pending text
        if pending:
            decisions = gate([texts[i] for i in pending], pool, skip=skip, update=update)
            for position, decision in zip(pending, decisions, strict=True):
                out[position] = decision
                text = texts[position]
                if decision.action == "ADD":
                    first.setdefault(text, len(pool))
                    pool.append(text)
                elif is_plain(text):
                    settled[text] = (decision, seen_after[-1])
                seen_after.append(len(pool))
        for position, in_front in copies:
            out[position] = answer_copy(texts[position], seen_after[in_front])
        done += len(pending) + len(copies)
        pending.clear()
        pending_texts.clear()
        copies.clear()
        report()

    for position, text in enumerate(texts):
        if is_plain(text) and (text in first or text in settled or text in pending_texts):
            copies.append((position, len(pending)))
        else:
            pending.append(position)
            pending_texts.add(text)
        if len(pending) + len(copies) >= GATE_BATCH:
            flush()
    flush()
    return [d for d in out if d is not None]


@dataclass
class KnowledgeImportReport:
    file: str
    shape: str
    run_id: int | None = None
    read: int = 0
    staged: int = 0
    by_action: dict[str, int] = field(default_factory=dict)
    dropped_quality: list[dict[str, Any]] = field(default_factory=list)
    undated: int = 0
    default_importance: int = 0
    errors: list[LineError] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "shape": self.shape,
            "run_id": self.run_id,
            "read": self.read,
            "staged": self.staged,
            "by_action": dict(self.by_action),
            "dropped_quality": list(self.dropped_quality),
            "undated": self.undated,
            "default_importance": self.default_importance,
            "rejected": len(self.errors),
            "errors": [{"line": e.line, "reason": e.reason} for e in self.errors],
        }

    def describe(self) -> str:
        actions = ", ".join(f"{self.by_action.get(a, 0)} {a}" for a in ("ADD", "UPDATE", "SKIP"))
        text = (
            f"{self.file} ({self.shape}): {plural(self.read, 'pattern')} read, "
            f"{self.staged:,} staged"
            f"{f' as run {self.run_id}' if self.run_id is not None else ''} ({actions}); "
            f"{len(self.dropped_quality):,} dropped by the quality gate, "
            f"{len(self.errors):,} rejected"
        )
        if self.undated:
            text += f"; {self.undated} without a date (dated when committed)"
        if self.default_importance:
            text += f"; {self.default_importance} without an importance (0.5 used)"
        return text


def import_knowledge(
    store: Store,
    path: str | Path,
    *,
    backend: Backend | None = None,
    progress: ProgressFn | None = None,
    cancelled: CancelledFn | None = None,
    fmt: str = "auto",
) -> KnowledgeImportReport:
    """Stage the patterns of a knowledge file as a run to review (see the module doc).

    ``fmt`` forces the file's shape (:data:`curator.store.memtool_formats.FORMATS`); the
    id another memory tool gave an item is kept in the run's dedup trace (``source_id``).

    ``backend`` is the model asked for its second opinion on each pattern (None: none
    asked, which the run records). ``progress(done, total)`` counts patterns through the
    dedup gate; ``cancelled()`` True stops the import with :class:`ImportCancelled` and
    nothing staged (it also stops the model's calls between two of them).
    """
    parsed = read_knowledge(path, fmt=fmt)
    _stop_if_cancelled(cancelled, parsed.path)
    report = KnowledgeImportReport(file=parsed.path, shape=parsed.shape, errors=parsed.errors)
    report.read = len(parsed.items)
    settings = load_settings(store)
    quality = QualityGate(settings.min_chars, settings.min_words, settings.drop_degenerate)
    kept: list[KnowledgeItem] = []
    for item in parsed.items:
        verdict = quality.check(item.text)
        if verdict.ok:
            kept.append(item)
        else:
            report.dropped_quality.append(
                {"line": item.line, "text": item.text, "reasons": list(verdict.reasons)}
            )
    if not kept:
        return report
    from curator.pipeline.review import record_proposals

    # Gated before the write transaction, so a long gate neither holds the write lock
    # nor leaves anything behind when cancelled. A pattern changed meanwhile is caught
    # by the commit, which compares each target's revision with the one staged here.
    active = tuples(
        Pattern.select(Pattern.id, Pattern.text, Pattern.revision)
        .where(Pattern.status == "active")
        .order_by(Pattern.id)
        .bind(store.db)
    )
    decisions = gate_file(
        [item.text for item in kept],
        [row[1] for row in active],
        skip=settings.skip_threshold,
        update=settings.update_threshold,
        progress=progress,
        cancelled=cancelled,
        name=parsed.path,
    )
    guard = staging_guard(store, settings, backend)
    guarded, calls = guard.judge([item.text for item in kept], cancelled)
    _stop_if_cancelled(cancelled, parsed.path)
    model: dict[str, Any] = {}
    if guard.opinion is not None:
        model = {
            **model_provenance(guard.opinion.backend),
            "prompts": {"guard": guard.opinion.prompt.provenance},
        }

    with store.write():
        run = Run.create(
            kind=RUN_KIND,
            status="staged",
            finished_at=utcnow(),
            params={
                "file": parsed.path,
                "shape": parsed.shape,
                **{
                    k: getattr(settings, k)
                    for k in ("min_chars", "min_words", "skip_threshold", "update_threshold")
                },
                "guard": guard.params,
            },
            **model,
        )
        rows = []
        dedup_trace = []
        for ordinal, (item, decision) in enumerate(zip(kept, decisions, strict=True), 1):
            target = target_rev = None
            if decision.target is not None and decision.target < len(active):
                target, target_rev = active[decision.target][0], active[decision.target][2]
            rows.append(
                {
                    "run": run.id,
                    "ordinal": ordinal,
                    "text": item.text,
                    "importance": item.importance,
                    "category": CATEGORY,
                    "proposed_action": decision.action,
                    "proposed_target": target,
                    "proposed_ratio": float(decision.ratio),
                    "target_revision": target_rev,
                    "distilled_at": item.distilled_at,
                    "guard_flags": guarded[ordinal - 1],
                    "origin": item.origin,
                }
            )
            dedup_trace.append(
                {
                    "ordinal": ordinal,
                    "line": item.line,
                    "action": decision.action,
                    "ratio": decision.ratio,
                    "target_pattern": target,
                    **({"source_id": item.source_id} if item.source_id is not None else {}),
                }
            )
            report.by_action[decision.action] = report.by_action.get(decision.action, 0) + 1
            report.undated += item.distilled_at is None
            report.default_importance += not item.importance_given
        for start in range(0, len(rows), 200):
            if start % 10_000 == 0:
                _stop_if_cancelled(cancelled, parsed.path)  # rolls the transaction back
            Candidate.insert_many(rows[start : start + 200]).execute()
        TraceStep.create(
            run=run.id,
            step="quality",
            parsed={"kept": len(kept), "dropped": report.dropped_quality},
        )
        TraceStep.create(run=run.id, step="dedup", parsed=dedup_trace)
        for ordinal, call in enumerate(calls, 1):
            fields = trace_fields(run.id, call)
            TraceStep.create(**{**fields, "parsed": {"ordinal": ordinal, **call.parsed}})
        report.run_id = int(run.id)
        report.staged = len(rows)
        run.stats = {
            "candidates": len(rows),
            "read": report.read,
            "dropped_quality": len(report.dropped_quality),
            "rejected": len(report.errors),
            "guard_flagged": sum(flags is not None for flags in guarded),
            **report.by_action,
        }
        run.save()
        record_proposals(store, run.id)
    return report
