"""A real SQLite file for the learning figures: scored episodes with stored embeddings.

The episodes are written the way classify leaves them (raw and calibrated label scores,
the model's hash, a prediction and its source) and each gets an ``episode_embedding`` row
under the model of the latest classify run, which is what
:func:`curator.pipeline.learn.load_features` reads. The embeddings are test data: a
seeded point near its label's centre (the classes overlap, so the classifier learns
something but not everything, and accuracy and kappa differ); no model
is loaded. Human labels go through the real ``relabel``.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import numpy as np

from curator.pipeline.labels import relabel
from curator.pipeline.learn import vector_to_blob
from curator.store.db import Store
from curator.store.models import LABELS, Episode, EpisodeEmbedding, Run, utcnow

SHA = "ab" * 32
DIM = 16


def build_learning(
    store: Store, humans: dict[str, int], *, unlabelled: int = 12, learned: int = 5
) -> list[int]:
    """``humans[label]`` episodes of each label carry a human label; ``unlabelled`` more
    do not, the first ``learned`` of those predicted by the learned classifier, the rest
    by the calibrated scores. Returns the episode ids, labelled ones first."""
    rng = np.random.default_rng(7)
    centres = {k: rng.normal(size=DIM) * 0.6 for k in LABELS}
    plan = [k for k in LABELS for _ in range(humans.get(k, 0))]
    plan += [LABELS[i % len(LABELS)] for i in range(unlabelled)]
    n_human = sum(humans.values())
    now = utcnow()
    ids: list[int] = []
    with store.write():
        run = Run.create(kind="classify", status="done", model_name="m.gguf", model_sha256=SHA)
        for i, truth in enumerate(plan):
            raw = {k: 0.2 for k in LABELS}
            raw["uncategorized"] = 0.6  # the small model's favourite label, whatever the input
            # near uniform, as calibration leaves the demo model's scores: little signal
            calibrated = {k: 1.0 / len(LABELS) + float(rng.uniform(0, 0.05)) for k in LABELS}
            total = sum(calibrated.values())
            calibrated = {k: v / total for k, v in calibrated.items()}
            source = "learned" if 0 <= i - n_human < learned else "calibrated"
            e = Episode.create(
                content_hash=uuid.uuid4().hex,
                text=f"episode {i}",
                timestamp=now - timedelta(minutes=len(plan) - i),
                model_label="uncategorized",
                model_confidence=0.6,
                model_run=run.id,
                model_scores=raw,
                calibrated_scores=calibrated,
                scores_model_sha256=SHA,
                predicted_label=truth,
                predicted_by=source,
                predicted_confidence=max(calibrated.values()),
                predicted_margin=0.1,
                label=truth,
                label_by="model",
            )
            vector = centres[truth] + rng.normal(size=DIM)
            EpisodeEmbedding.create(
                episode=e.id, model_sha256=SHA, dim=DIM, vector=vector_to_blob(vector)
            )
            ids.append(int(e.id))
    start = 0
    for label in LABELS:
        count = humans.get(label, 0)
        if count:
            relabel(store, ids[start : start + count], label)
        start += count
    return ids
