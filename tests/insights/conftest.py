"""A real SQLite file with labelled episodes and reviewed candidates, for Insights.

The rows are written the way the pipeline writes them (a classify run with one ``classify``
trace step per episode; a staged distill run whose candidates carry the real dedup gate's
proposal and ratio) and the human side goes through the real ``relabel`` and ``decide``,
so the figures are checked on what the application stores, without the language model.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from curator.core.dedup import gate
from curator.core.scoring import rank_key
from curator.pipeline.labels import relabel
from curator.pipeline.review import decide
from curator.store.db import Store
from curator.store.episode_records import content_hash
from curator.store.models import (
    Candidate,
    CandidateEpisode,
    Episode,
    Pattern,
    Run,
    TraceStep,
    format_utc,
    utcnow,
)

# (model label, confidence, human label or None): rows human, columns model
EPISODES = (
    [("constitutional", 0.9, "constitutional")] * 4
    + [("noise", 0.8, "constitutional")] * 1
    + [("noise", 0.95, "noise")] * 5
    + [("uncategorized", 0.6, "noise")] * 2
    + [("uncategorized", 0.7, "uncategorized")] * 3
    + [("constitutional", 0.55, "uncategorized")] * 1
    + [("noise", 0.9, None)] * 4
)
"""Expected label matrix (human rows, model columns): [[4,1,0],[0,5,2],[1,0,3]]."""

PATTERNS = (
    "The operator prefers short status updates in the morning before standup.",
    "Retry network calls to the billing API with exponential backoff and jitter.",
    "Never delete user files without an explicit confirmation from the operator.",
)

# candidate text, human decision ("ACCEPT" takes the proposal)
CANDIDATES = (
    ("The operator prefers short status updates in the morning before standup.", "ACCEPT"),
    ("The operator prefers short status updates in the morning before the standup.", "SKIP"),
    ("Retry network calls to the billing API with exponential backoff.", "ADD"),
    ("Never delete user files without explicit confirmation from the operator!", "ACCEPT"),
    ("Keep a changelog of every deployment with the commit hash and time.", "ACCEPT"),
    ("Summarise weekly reports in five bullet points on Friday afternoon.", "REJECT"),
)


@dataclass(frozen=True)
class Reviewed:
    path: Path
    classify_run: int
    distill_run: int
    episode_ids: list[int]
    candidate_ids: list[int]


def build(store: Store) -> Reviewed:
    now = utcnow()
    with store.write():
        run = Run.create(
            kind="classify",
            status="done",
            model_name="demo.gguf",
            prompts={"classify": {"version": 1, "sha256": "x"}},
        )
        ids: list[int] = []
        for i, (model, conf, _human) in enumerate(EPISODES):
            text, when = f"episode {i}: the agent did some work", now - timedelta(days=30 - i)
            e = Episode.create(
                # the importer's identity, so a gold export of these rows matches them
                content_hash=content_hash(text, "", format_utc(when)),
                text=text,
                timestamp=when,
                model_label=model,
                model_confidence=conf,
                model_run=run.id,
                label=model,
                label_by="model",
            )
            TraceStep.create(
                run=run.id,
                step="classify",
                episode=e.id,
                raw_output=model,
                parsed={"label": model, "confidence": conf},
            )
            ids.append(int(e.id))
        for j, text in enumerate(PATTERNS):
            when = now - timedelta(days=10 + j)
            Pattern.create(
                text=text,
                importance=0.5 + 0.1 * j,
                distilled_at=when,
                rank_key=rank_key(0.5 + 0.1 * j, when),
            )
    for eid, (_m, _c, human) in zip(ids, EPISODES, strict=True):
        if human is not None:
            relabel(store, [eid], human)
    texts = [c[0] for c in CANDIDATES]
    decisions = gate(texts, list(PATTERNS))
    with store.write():
        drun = Run.create(kind="distill", status="staged", model_name="demo.gguf")
        cids: list[int] = []
        for ordinal, (text, d) in enumerate(zip(texts, decisions, strict=True)):
            target = d.target + 1 if d.target is not None and d.target < len(PATTERNS) else None
            c = Candidate.create(
                run=drun.id,
                ordinal=ordinal,
                text=text,
                importance=0.6,
                proposed_action=d.action,
                proposed_target=target,
                proposed_ratio=d.ratio,
                target_revision=1 if target else None,
            )
            CandidateEpisode.create(candidate=c.id, episode=ids[0])
            cids.append(int(c.id))
        TraceStep.create(
            run=drun.id,
            step="quality",
            parsed={
                "kept": texts,
                "dropped": [
                    {"text": "ok", "reasons": ["2 characters"]},
                    {"text": "User likes tea", "reasons": ["14 characters"]},
                ],
            },
        )
    for cid, (_text, action) in zip(cids, CANDIDATES, strict=True):
        decide(store, cid, action)
    return Reviewed(store.path, int(run.id), int(drun.id), ids, cids)


@pytest.fixture
def reviewed(tmp_path: Path) -> Iterator[tuple[Store, Reviewed]]:
    store = Store(tmp_path / "curator.sqlite")
    try:
        yield store, build(store)
    finally:
        store.close()
