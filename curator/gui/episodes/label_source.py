"""Which source decided an episode's label, and how sure it was, for the detail panel.

The label in force comes from a person (``human_label``) or, without one, from the
prediction in force: the learned classifier, the calibrated label scores or the model's
raw scores (``predicted_by``, written by classify and by every retrain). A reviewer
deciding whether to trust a label needs that source and its confidence next to it, so
the detail panel shows them as one "Decided by" row.

Kept apart from the pane so the pane calls one function: one primary-key read of a
single row (as cheap as the detail's own read) plus plain formatting.
"""

from __future__ import annotations

from dataclasses import dataclass

from curator.store.db import Store

SOURCE_TEXT = {
    "human": "a person",
    "learned": "the learned classifier",
    "calibrated": "the calibrated model scores",
    "model": "the model's scores",
}
"""How each ``predicted_by`` value (and a human label) is named to the user."""


@dataclass(frozen=True)
class LabelDecision:
    """The source of the label in force; confidence and margin are of the prediction."""

    label: str
    source: str  # a key of SOURCE_TEXT
    confidence: float | None
    margin: float | None
    predicted_label: str | None = None  # what the machine predicted, when a person decided


def fetch_label_decision(store: Store, episode_id: int) -> LabelDecision | None:
    """The decision for one episode; ``None`` when it has no label yet (or was deleted)."""
    found = store.execute(
        "SELECT human_label, predicted_label, predicted_by, predicted_confidence, "
        "predicted_margin, model_label, model_confidence FROM episode WHERE id = ?",
        (episode_id,),
    )
    if not found:
        return None
    human, predicted, by, confidence, gap, model_label, model_confidence = found[0]
    if by not in SOURCE_TEXT:  # classified before predictions were recorded
        predicted, by, confidence, gap = model_label, "model", model_confidence, None
    if human is not None:
        return LabelDecision(str(human), "human", None, None, predicted)
    if predicted is None:
        return None
    return LabelDecision(
        str(predicted),
        str(by),
        None if confidence is None else float(confidence),
        None if gap is None else float(gap),
    )


def decision_text(decision: LabelDecision) -> str:
    """One line, e.g. "the learned classifier: noise, confidence 0.83 (margin 0.41)"."""
    if decision.source == "human":
        text = f"{SOURCE_TEXT['human']}: {decision.label}"
        if decision.predicted_label is not None and decision.predicted_label != decision.label:
            text += f" (the machine predicted {decision.predicted_label})"
        return text
    text = f"{SOURCE_TEXT[decision.source]}: {decision.label}"
    if decision.confidence is not None:
        text += f", confidence {decision.confidence:.2f}"
        if decision.margin is not None:
            text += f" (margin {decision.margin:.2f})"
    return text


def label_decision_rows(store: Store, episode_id: int) -> list[tuple[str, str]]:
    """The detail panel's "Decided by" row (none for an episode without a label)."""
    decision = fetch_label_decision(store, episode_id)
    return [] if decision is None else [("Decided by", decision_text(decision))]
