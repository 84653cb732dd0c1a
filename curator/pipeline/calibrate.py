"""The label bias of a model under the classify prompt, measured once and kept.

The bias (see :mod:`curator.core.calibration`) depends on the model file and on the
exact prompt (instructions, axioms, examples), so it is keyed by the model's SHA-256 and
the rendered prefix's SHA-256 and stored in ``label_bias``: a later run with the same
model and prompt reads it instead of scoring the content-free inputs again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from curator.core.calibration import calibrate, content_free_bias
from curator.llm.backend import Backend, StopCheck
from curator.store.db import Store
from curator.store.models import LABELS, LabelBias
from curator.store.settings import load_settings

CONTENT_FREE_INPUTS: tuple[str, ...] = (
    "N/A",
    "",
    "[the episode text is not available]",
    "Nothing happened.",
)
"""An empty episode, "N/A", and neutral fillers that say nothing about any label."""


def calibration_enabled(store: Store) -> bool:
    """Whether the calibrated label is shown while no learned classifier exists.

    Off by default: on the demo gold set the content-free correction did not beat the raw
    scores (README, "Learning from the reviewer").
    """
    return load_settings(store).calibrate_labels


def prompt_key(prefix: str, answer_prefix: str) -> str:
    """SHA-256 of the rendered prompt the labels are scored after."""
    return hashlib.sha256(f"{prefix}\x00{answer_prefix}".encode()).hexdigest()


def label_bias(
    store: Store,
    backend: Backend,
    prefix: str,
    *,
    answer_prefix: str,
    model_sha256: str,
    labels: Sequence[str] = LABELS,
    should_stop: StopCheck | None = None,
) -> dict[str, float]:
    """The cached bias for this model and prompt, measured on first use.

    The measurement is several full prompts (seconds on a CPU, before a run's first
    episode), so ``should_stop`` reaches each of them: a cancel stops it mid-prompt with
    :class:`~curator.llm.backend.StopRequested`, and nothing half-measured is kept."""
    key = prompt_key(prefix, answer_prefix)
    row = LabelBias.get_or_none(
        (LabelBias.model_sha256 == model_sha256) & (LabelBias.prompt_sha256 == key)
    )
    if row is not None and set(row.probabilities) == set(labels):
        return {k: float(row.probabilities[k]) for k in labels}
    distributions = [
        backend.classify(
            prefix, text, labels, answer_prefix=answer_prefix, should_stop=should_stop
        ).probabilities
        for text in CONTENT_FREE_INPUTS
    ]
    bias = content_free_bias(distributions)
    with store.write():
        LabelBias.insert(
            model_sha256=model_sha256,
            prompt_sha256=key,
            probabilities=bias,
            inputs=list(CONTENT_FREE_INPUTS),
        ).on_conflict(
            conflict_target=[LabelBias.model_sha256, LabelBias.prompt_sha256],
            preserve=[LabelBias.probabilities, LabelBias.inputs, LabelBias.created_at],
        ).execute()
    return bias


def calibrated(probabilities: Mapping[str, float], bias: Mapping[str, float]) -> dict[str, float]:
    """Re-exported so the pipeline imports calibration from one place."""
    return calibrate(probabilities, bias)
