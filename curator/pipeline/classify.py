"""Step 0: label each episode constitutional / noise / uncategorized.

One episode per call, scored rather than sampled (see
:meth:`curator.llm.llama_cpp_backend.LlamaCppBackend.classify`): the label is the most
probable of the three under the model, so the answer can never be anything else and
never needs parsing. The prompt's constant part (instructions, axioms, examples) comes
first, the episode last, so the backend evaluates only the episode's tokens per call.

What is written, per episode, in one short transaction after its call:
``model_label``/``model_confidence``/``model_run``/``classify_truncated``; the label in
force (``label``/``label_by="model"``/``label_at``) only while no human label exists,
checked in the same UPDATE so a human relabel that lands meanwhile is never overwritten;
and the trace step. Episodes with a human label are not classified at all.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from curator.core.wording import plural
from curator.llm.backend import Backend, StopRequested, require_finite
from curator.llm.prompts import load_prompt, numbered
from curator.pipeline.calibrate import label_bias
from curator.pipeline.features import prepare_features, score_fields
from curator.pipeline.learn import relearn
from curator.pipeline.progress import Cancelled, Progress, TaskState
from curator.pipeline.run_history import FEATURES_MS
from curator.pipeline.runlog import (
    RunResult,
    TraceRecord,
    model_provenance,
    recorded_run,
    trace_fields,
)
from curator.store.db import Store
from curator.store.identity import current_identity
from curator.store.models import LABELS, Episode, TraceStep, utcnow

__all__ = ["RunResult", "classify_episodes", "pending_episode_ids"]

STEP = "classify"


def pending_episode_ids(
    store: Store, *, limit: int | None = None, episode_ids: Sequence[int] | None = None
) -> list[int]:
    """Episodes to classify, oldest first.

    Without ``episode_ids``: those with neither a model nor a human label. With them:
    exactly those (re-classification), except the ones a human has labelled.
    """
    query = Episode.select(Episode.id).where(Episode.human_label.is_null()).bind(store.db)
    if episode_ids is None:
        query = query.where(Episode.model_label.is_null())
    else:
        query = query.where(Episode.id.in_(list(episode_ids)))
    query = query.order_by(Episode.timestamp, Episode.id)
    if limit is not None:
        query = query.limit(max(0, int(limit)))
    return [int(row.id) for row in query]


def classify_episodes(
    store: Store,
    backend: Backend,
    state: TaskState,
    *,
    limit: int | None = None,
    episode_ids: Sequence[int] | None = None,
) -> RunResult:
    """Classify the pending episodes (or ``episode_ids``) and record a ``classify`` run.

    Returns normally when cancelled (status ``cancelled``; the episodes done so far keep
    their labels). Any other failure marks the run ``failed`` and is re-raised.
    """
    identity = current_identity(store)
    prompt = load_prompt("classify")
    system, user_start = prompt.render(
        {"axioms": numbered(list(identity.axioms)), "identity": identity.identity_text}
    )
    prefix = backend.chat_prefix(system, user_start)
    ids = pending_episode_ids(store, limit=limit, episode_ids=episode_ids)
    params: dict[str, Any] = {
        "limit": limit,
        "episode_ids": list(episode_ids) if episode_ids is not None else None,
        "labels": list(LABELS),
        "n_ctx": backend.n_ctx,
        "method": backend.scoring_method,
    }
    counts: dict[str, int] = {label: 0 for label in LABELS}
    counts.update(classified=0, truncated=0, skipped=0)
    total = len(ids)
    with recorded_run(
        store,
        "classify",
        backend=backend,
        prompts={"classify": prompt},
        identity=identity,
        params=params,
        state=state,
        stats=counts,  # the same dict: the run's stats are the counts as they stand
    ) as run:
        run.cancel_message = lambda: (
            f"cancelled after {counts['classified']:,} of {plural(total, 'episode')}"
        )
        _classify_all(store, backend, state, run.id, ids, prefix, prompt, counts)
    if run.status == "cancelled":
        return RunResult(run.id, "cancelled", counts, run.message)
    return RunResult(run.id, "done", counts, _summary(counts))


def _classify_all(
    store: Store,
    backend: Backend,
    state: TaskState,
    run_id: int,
    ids: list[int],
    prefix: str,
    prompt: Any,
    counts: dict[str, int],
) -> None:
    """The body of a classify run: every episode, then the features and the learned labels."""
    tokens_evaluated = 0
    seconds = 0.0
    total = len(ids)
    state.report(Progress(STEP, 0, total, message=f"{plural(total, 'episode')} to classify"))
    sha = str(model_provenance(backend)["model_sha256"])
    try:
        bias = label_bias(
            store,
            backend,
            prefix,
            answer_prefix=prompt.assistant,
            model_sha256=sha,
            should_stop=lambda: state.cancelled,
        )
    except StopRequested:
        raise Cancelled("cancelled while measuring the model's label bias") from None
    for done, episode_id in enumerate(ids, 1):
        state.check()
        episode = Episode.get_or_none(Episode.id == episode_id)
        if episode is None or episode.human_label is not None:
            counts["skipped"] += 1  # deleted or labelled by a person meanwhile
            continue
        try:
            scores = backend.classify(
                prefix,
                episode.text,
                LABELS,
                answer_prefix=prompt.assistant,
                should_stop=lambda: state.cancelled,
            )
        except StopRequested:
            raise Cancelled("cancelled during the prompt") from None
        # Checked here too, whatever the backend: a NaN confidence must never be stored.
        require_finite("label scores", [scores.confidence, *scores.probabilities.values()])
        fields = score_fields(store, scores.probabilities, bias, sha)
        _store_label(store, run_id, episode_id, scores, prompt, fields)
        counts[scores.label] += 1
        counts["classified"] += 1
        counts["truncated"] += int(scores.truncated)
        method = f"scored_{scores.method}"  # which scoring method each label came from
        counts[method] = counts.get(method, 0) + 1
        # The run's output, one line per episode as it lands (the window's output box).
        state.token(_output_line(episode_id, scores.label, scores.confidence, episode.text))
        tokens_evaluated += scores.tokens_in - scores.cached_tokens
        seconds += scores.seconds
        state.report(
            Progress(
                STEP,
                done,
                total,
                prompt_tokens_per_s=tokens_evaluated / seconds if seconds > 0 else 0.0,
                message=f"episode {episode_id}: {scores.label} ({scores.confidence:.0%})",
            )
        )
    # The features phase is timed for the next run's estimate (eta.measured_rates): it
    # embeds every classified episode, and at load it took a third of a run's time.
    started = time.monotonic()
    counts.update(
        prepare_features(
            store,
            backend,
            state,
            ids,
            prefix=prefix,
            answer_prefix=prompt.assistant,
            bias=bias,
            sha=sha,
        )
    )
    counts[FEATURES_MS] = round(1000 * (time.monotonic() - started))
    counts["learned"] = relearn(store, sha).predicted


def _store_label(
    store: Store, run_id: int, episode_id: int, scores: Any, prompt: Any, fields: dict[str, Any]
) -> None:
    now = utcnow()
    record = TraceRecord(
        step=STEP,
        episode_id=episode_id,
        prompt=prompt,
        raw_output=scores.label,
        parsed={
            "label": scores.label,
            "confidence": scores.confidence,
            "probabilities": scores.probabilities,
            "logprobs": scores.logprobs,
            "method": scores.method,
            "truncated": scores.truncated,
            "item_tokens": scores.item_tokens,
        },
        tokens_in=scores.tokens_in,
        tokens_out=0,
        cached_tokens=scores.cached_tokens,
        seconds=scores.seconds,
    )
    with store.write():
        Episode.update(
            model_label=scores.label,
            model_confidence=scores.confidence,
            model_run=run_id,
            classify_truncated=bool(scores.truncated),
            **fields,
        ).where(Episode.id == episode_id).execute()
        shown = fields["predicted_label"]  # the combination (curator.pipeline.learn)
        Episode.update(label=shown, label_by="model", label_at=now).where(
            (Episode.id == episode_id) & Episode.human_label.is_null()
        ).execute()
        TraceStep.create(**trace_fields(run_id, record))


OUTPUT_PREVIEW_CHARS = 90
"""How much of the episode's text follows its label in the streamed output line."""


def _output_line(episode_id: int, label: str, confidence: float, text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > OUTPUT_PREVIEW_CHARS:
        flat = flat[: OUTPUT_PREVIEW_CHARS - 1] + "…"
    return f"#{episode_id} {label} ({confidence:.0%})  {flat}\n"


def _summary(counts: dict[str, int]) -> str:
    parts = ", ".join(f"{counts[label]} {label}" for label in LABELS)
    text = f"classified {plural(counts['classified'], 'episode')}: {parts}"
    if counts["truncated"]:
        text += f" ({counts['truncated']} truncated to fit the context)"
    return text
