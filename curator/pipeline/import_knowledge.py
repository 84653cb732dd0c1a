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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.core.dedup import gate
from curator.core.quality import QualityGate
from curator.llm.backend import Backend, StopCheck
from curator.pipeline.guard import staging_guard
from curator.pipeline.runlog import model_provenance, trace_fields
from curator.store.db import Store
from curator.store.importer import LineError
from curator.store.knowledge_file import KnowledgeItem, read_knowledge
from curator.store.models import Candidate, Pattern, Run, TraceStep, utcnow
from curator.store.settings import load_settings
from curator.store.snapshot import tuples

RUN_KIND = "import"
CATEGORY = "uncategorized"


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
            f"{self.file} ({self.shape}): {self.read} patterns read, {self.staged} staged"
            f"{f' as run {self.run_id}' if self.run_id is not None else ''} ({actions}); "
            f"{len(self.dropped_quality)} dropped by the quality gate, {len(self.errors)} rejected"
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
    should_stop: StopCheck | None = None,
) -> KnowledgeImportReport:
    """Stage the patterns of a knowledge file as a run to review (see the module doc).

    ``backend`` is the model asked for its second opinion on each pattern (None: none
    asked, which the run records); ``should_stop`` cancels between its calls.
    """
    parsed = read_knowledge(path)
    report = KnowledgeImportReport(file=parsed.path, shape=parsed.shape, errors=parsed.errors)
    report.read = len(parsed.items)
    settings = load_settings(store)
    quality = QualityGate(settings.min_chars, settings.min_words)
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

    guard = staging_guard(store, settings, backend)
    guarded, calls = guard.judge([item.text for item in kept], should_stop)
    model: dict[str, Any] = {}
    if guard.opinion is not None:
        model = {
            **model_provenance(guard.opinion.backend),
            "prompts": {"guard": guard.opinion.prompt.provenance},
        }

    with store.write():
        active = tuples(
            Pattern.select(Pattern.id, Pattern.text, Pattern.revision)
            .where(Pattern.status == "active")
            .order_by(Pattern.id)
        )
        decisions = gate(
            [item.text for item in kept],
            [row[1] for row in active],
            skip=settings.skip_threshold,
            update=settings.update_threshold,
        )
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
                }
            )
            dedup_trace.append(
                {
                    "ordinal": ordinal,
                    "line": item.line,
                    "action": decision.action,
                    "ratio": decision.ratio,
                    "target_pattern": target,
                }
            )
            report.by_action[decision.action] = report.by_action.get(decision.action, 0) + 1
            report.undated += item.distilled_at is None
            report.default_importance += not item.importance_given
        for start in range(0, len(rows), 200):
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
