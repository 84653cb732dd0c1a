"""The learned classifier's inputs, computed as part of classify and kept in the database.

Two things per episode and model: the label scores (raw and calibrated; the human-labelled
episodes are scored too, without touching their labels, because they are the training
set) and the embedding (a BLOB in ``episode_embedding`` keyed by episode and model hash).
Only what is missing is computed, in small transactions, so a cancelled or killed run
resumes where it stopped and a second run with the same model evaluates nothing again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from curator.llm.backend import Backend, StopCheck, StopRequested
from curator.pipeline.calibrate import calibrated
from curator.pipeline.learn import enough_labels, score_prediction, vector_to_blob
from curator.pipeline.progress import Cancelled, Progress, TaskState
from curator.store.db import Store
from curator.store.models import LABELS, Episode, EpisodeEmbedding

STEP = "features"
EMBED_BATCH = 8
"""Episodes embedded per transaction (and between two cancel checks)."""


@runtime_checkable
class Embedder(Protocol):
    """A backend that can embed text (the llama.cpp one can; a plain chat server may not)."""

    def embed(
        self, texts: Sequence[str], *, should_stop: StopCheck | None = None
    ) -> npt.NDArray[np.float32]: ...


def score_fields(
    store: Store, probabilities: Mapping[str, float], bias: Mapping[str, float], sha: str
) -> dict[str, Any]:
    """The columns one scoring writes: raw and calibrated scores and the prediction."""
    raw = {k: float(probabilities[k]) for k in LABELS}
    fixed = calibrated(raw, bias)
    label, source, confidence, gap = score_prediction(store, raw, fixed)
    return {
        "model_scores": raw,
        "calibrated_scores": fixed,
        "scores_model_sha256": sha,
        "predicted_label": label,
        "predicted_by": source,
        "predicted_confidence": confidence,
        "predicted_margin": gap,
    }


def missing_embeddings(episode_ids: Sequence[int], sha: str) -> list[int]:
    have = {
        int(row.episode_id)  # type: ignore[attr-defined]
        for row in EpisodeEmbedding.select(EpisodeEmbedding.episode).where(
            (EpisodeEmbedding.model_sha256 == sha) & EpisodeEmbedding.episode.in_(list(episode_ids))
        )
    }
    return [i for i in episode_ids if i not in have]


def prepare_features(
    store: Store,
    backend: Backend,
    state: TaskState,
    episode_ids: Sequence[int],
    *,
    prefix: str,
    answer_prefix: str,
    bias: Mapping[str, float],
    sha: str,
) -> dict[str, int]:
    """Score the human-labelled episodes and embed ``episode_ids`` plus those, if missing.

    The human-labelled episodes are included only once every label has enough of them
    to train on (:data:`curator.pipeline.learn.MIN_PER_CLASS`).

    Raises :class:`Cancelled` when the state is cancelled; what was stored stays.
    """
    labelled = list(
        Episode.select(Episode.id, Episode.human_label)
        .where(Episode.human_label.is_null(False))
        .order_by(Episode.id)
    )
    # The training set's features are only worth computing once it can train.
    trainable = enough_labels(str(row.human_label) for row in labelled)
    human = [int(row.id) for row in labelled] if trainable else []
    unscored = [
        int(row.id)
        for row in Episode.select(Episode.id).where(
            Episode.id.in_(human)
            & (Episode.scores_model_sha256.is_null() | (Episode.scores_model_sha256 != sha))
        )
    ]
    wanted = list(dict.fromkeys([*episode_ids, *human]))
    to_embed = missing_embeddings(wanted, sha) if isinstance(backend, Embedder) else []
    total = len(unscored) + len(to_embed)
    done = 0
    state.report(Progress(STEP, 0, total, message=f"{total} feature computations"))
    for episode_id in unscored:
        state.check()
        episode = Episode.get_or_none(Episode.id == episode_id)
        if episode is None:
            continue
        try:
            scores = backend.classify(
                prefix,
                episode.text,
                LABELS,
                answer_prefix=answer_prefix,
                should_stop=lambda: state.cancelled,
            )
        except StopRequested:
            raise Cancelled("cancelled while scoring") from None
        fields = score_fields(store, scores.probabilities, bias, sha)
        with store.write():
            Episode.update(**fields).where(Episode.id == episode_id).execute()
        done += 1
        state.report(Progress(STEP, done, total, message=f"episode {episode_id}: scored"))
    for start in range(0, len(to_embed), EMBED_BATCH):
        state.check()
        chunk = to_embed[start : start + EMBED_BATCH]
        texts = {
            int(row.id): str(row.text)
            for row in Episode.select(Episode.id, Episode.text).where(Episode.id.in_(chunk))
        }
        present = [i for i in chunk if i in texts]
        assert isinstance(backend, Embedder)
        try:
            vectors = backend.embed(
                [texts[i] for i in present], should_stop=lambda: state.cancelled
            )
        except StopRequested:
            raise Cancelled("cancelled while embedding") from None
        with store.write():
            EpisodeEmbedding.insert_many(
                [
                    {"episode": i, "model_sha256": sha, "dim": len(v), "vector": vector_to_blob(v)}
                    for i, v in zip(present, vectors, strict=True)
                ]
            ).on_conflict(
                conflict_target=[EpisodeEmbedding.episode, EpisodeEmbedding.model_sha256],
                preserve=[EpisodeEmbedding.dim, EpisodeEmbedding.vector],
            ).execute()
        done += len(chunk)
        state.report(Progress(STEP, done, total, message=f"{done} of {total} features"))
    return {"scored": len(unscored), "embedded": len(to_embed)}
