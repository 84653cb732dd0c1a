"""Replay: measure a model or prompt on the human-labelled episodes before trusting it.

The gold set is every episode with a human label. :func:`replay_labels` classifies each
one again with the given backend and prompt version, exactly as the classify step does
(the same prompt rendering, the same ``backend.classify`` scoring of the three labels),
but writes **only** a run of kind ``replay`` and its trace: no episode column changes, so
the stored model labels and the human labels stay as they are. Its figures (accuracy and
kappa against the humans) are reported next to the current model labels' figures on the
same episodes, and the run appears in the Insights series like any classification run.

The gate's replay needs no model: the gate decides from the best-match ratio stored with
every candidate, so other thresholds are replayed with
:meth:`curator.pipeline.insights.Insights.what_if_at` (see :mod:`curator.core.whatif`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curator.core.agreement import Confusion, bootstrap_kappa, confusion
from curator.core.wording import plural
from curator.errors import CuratorError
from curator.llm.backend import Backend, StopRequested
from curator.llm.prompts import load_prompt, numbered
from curator.pipeline.progress import Cancelled, Progress, TaskState
from curator.pipeline.runlog import TraceRecord, recorded_run, trace_fields
from curator.store.db import Store
from curator.store.identity import current_identity
from curator.store.models import LABELS, TraceStep

__all__ = [
    "NO_GOLD",
    "ReplayResult",
    "gold_episode_ids",
    "has_gold",
    "replay_labels",
    "require_gold",
]

STEP = "classify"
"""Replay traces are classify steps (of a run of kind ``replay``): Insights reads both."""


@dataclass(frozen=True)
class ReplayResult:
    run_id: int
    status: str
    replay: Confusion  # humans vs the replayed labels
    current: Confusion  # humans vs the stored model labels, on the episodes that have one
    message: str

    def to_json(self) -> dict[str, Any]:
        def figures(c: Confusion) -> dict[str, Any]:
            interval = bootstrap_kappa(c.counts)
            return {**c.to_json(), "kappa_interval": interval.to_json()}

        return {
            "run_id": self.run_id,
            "status": self.status,
            "message": self.message,
            "replay": figures(self.replay),
            "current_model": figures(self.current),
        }


def gold_episode_ids(store: Store, limit: int | None = None) -> list[int]:
    """The human-labelled episodes, oldest first (the same order every replay)."""
    sql = "SELECT id FROM episode WHERE human_label IS NOT NULL ORDER BY timestamp, id"
    if limit is not None:
        sql += f" LIMIT {max(0, int(limit))}"
    return [int(r[0]) for r in store.execute(sql)]


NO_GOLD = "nothing to replay: no episode has a human label yet; label some, then replay"


def has_gold(store: Store) -> bool:
    """Whether any episode has a human label (a replay has something to classify)."""
    return bool(store.execute("SELECT 1 FROM episode WHERE human_label IS NOT NULL LIMIT 1"))


def require_gold(store: Store) -> None:
    """Refuse a replay without a gold set before a model is loaded or a run recorded:
    an empty replay run only took seconds of a model load and cluttered Insights."""
    if not has_gold(store):
        raise CuratorError(NO_GOLD)


def replay_labels(
    store: Store,
    backend: Backend,
    state: TaskState,
    *,
    limit: int | None = None,
    prompt_version: int | None = None,
) -> ReplayResult:
    """Classify the gold set again (see the module docstring); cancellable per episode.

    Without a gold set, :func:`require_gold`'s error (its callers check before loading
    the backend)."""
    require_gold(store)
    identity = current_identity(store)
    prompt = load_prompt("classify", prompt_version)
    system, user_start = prompt.render(
        {"axioms": numbered(list(identity.axioms)), "identity": identity.identity_text}
    )
    prefix = backend.chat_prefix(system, user_start)
    ids = gold_episode_ids(store, limit)
    humans: list[str] = []
    replayed: list[str] = []
    current_h: list[str] = []
    current_m: list[str] = []
    status, message = "done", ""
    with recorded_run(
        store,
        "replay",
        backend=backend,
        prompts={"classify": prompt},
        identity=identity,
        params={"limit": limit, "gold_episodes": len(ids), "labels": list(LABELS)},
        state=state,
    ) as run:
        run_id = run.id
        try:
            for done, episode_id in enumerate(ids, 1):
                state.check()
                rows = store.execute(
                    "SELECT text, human_label, model_label FROM episode WHERE id = ?", (episode_id,)
                )
                if not rows or rows[0][1] not in LABELS:
                    continue  # deleted or unlabelled meanwhile
                text, human, model = rows[0]
                try:
                    scores = backend.classify(
                        prefix,
                        text,
                        LABELS,
                        answer_prefix=prompt.assistant,
                        should_stop=lambda: state.cancelled,
                    )
                except StopRequested:
                    raise Cancelled("cancelled during the prompt") from None
                record = TraceRecord(
                    step=STEP,
                    episode_id=episode_id,
                    prompt=prompt,
                    raw_output=scores.label,
                    parsed={
                        "label": scores.label,
                        "confidence": scores.confidence,
                        "probabilities": scores.probabilities,
                        "human_label": human,
                        "method": scores.method,
                    },
                    tokens_in=scores.tokens_in,
                    cached_tokens=scores.cached_tokens,
                    seconds=scores.seconds,
                )
                with store.write():
                    TraceStep.create(**trace_fields(run_id, record))
                humans.append(str(human))
                replayed.append(scores.label)
                if model in LABELS:
                    current_h.append(str(human))
                    current_m.append(str(model))
                state.report(Progress("replay", done, len(ids), message=f"episode {episode_id}"))
        except Cancelled:
            status, message = (
                "cancelled",
                f"cancelled after {len(humans):,} of {plural(len(ids), 'episode')}",
            )
        replay = confusion(humans, replayed, LABELS)
        current = confusion(current_h, current_m, LABELS)
        run.stats = {
            "episodes": len(humans),
            "accuracy": replay.accuracy(),
            "kappa": replay.kappa(),
        }
        run.finish(status, message)
    if not message:
        message = (
            f"replayed {len(humans)} gold episodes: accuracy "
            f"{_pct(replay.accuracy())} (current model {_pct(current.accuracy())} on "
            f"{current.total})"
        )
    return ReplayResult(run.id, status, replay, current, message)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
