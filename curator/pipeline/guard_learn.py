"""The guard learns from the reviewer: candidates like the ones you rejected get flagged.

Every committed review decision is a label the rules never see: a REJECT says "this must
not enter the agent's memory", an accepted ADD or UPDATE says "this is fine". As the
label classifier learns from relabels (:mod:`curator.pipeline.learn`), the guard learns
from these: character n-gram TF-IDF (2 to 4 characters within words, so inflections,
other languages and obfuscated spellings still share features) and a class-balanced
logistic regression with a fixed seed, trained on the staged text of each rejected
candidate against the committed text of each accepted one. A candidate is flagged when
the model finds it more likely rejected than accepted *and* it is close to one rejected
text (:data:`MIN_SIMILARITY`): it is meant for attacks that come back reworded, not for
new kinds of attack (the rules and the model's second opinion are for those).

It predicts only once there are :data:`MIN_PER_CLASS` committed examples of both (below
that one odd rejection would flag half of every run); :func:`guard_status` says how far
it is. Training takes milliseconds, so nothing is persisted but its predictions: a
candidate's ``learned`` flag is written when it is staged and rewritten for every
candidate still waiting for review by :func:`relearn_guard` (after each commit and on
``curator classify --relearn``), the same way the label learner stores its predictions
rather than a model. The flag says how sure it is and which rejected text is closest.

Like every flag it is advice: it never changes the gate's SKIP / UPDATE / ADD proposal.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from curator.core.flag_type import Flag
from curator.core.redact import redact
from curator.pipeline.guard_flags import LEARNED_KIND, replace_kind
from curator.store.db import Store
from curator.store.models import Candidate, Run
from curator.store.snapshot import tuples

log = logging.getLogger(__name__)

MIN_PER_CLASS = 5
"""Committed rejections and acceptances each needed before the learned guard flags."""

THRESHOLD = 0.5
"""Probability of "rejected" from which a candidate is flagged."""

MIN_SIMILARITY = 0.3
"""And the cosine similarity (TF-IDF) to the closest rejected text it must reach: the
flag says "resembles", so it must. Measured (``benchmarks/bench_learned_guard.py``), it
cuts the false flags on benign texts by about two thirds at 1:1 rejections to acceptances;
the guard is for recurring attacks, the rules and the model for new ones."""

ACCEPTED = ("ADD", "UPDATE")
SEED = 0


@dataclass(frozen=True)
class GuardExamples:
    """The committed decisions the guard learns from: texts rejected and accepted."""

    rejected: tuple[str, ...]
    accepted: tuple[str, ...]

    @property
    def enough(self) -> bool:
        return min(len(self.rejected), len(self.accepted)) >= MIN_PER_CLASS


def guard_examples(store: Store) -> GuardExamples:
    """Rejected (staged text) and accepted (committed text) candidates of committed runs.

    Only committed decisions count: a decision still open can be undone at any moment.
    """
    with store.read():
        rows = tuples(
            Candidate.select(Candidate.action, Candidate.text, Candidate.final_text)
            .where((Candidate.state == "applied") & Candidate.action.in_(["REJECT", *ACCEPTED]))
            .order_by(Candidate.id)
            .bind(store.db)
        )
    rejected = tuple(str(text) for action, text, _ in rows if action == "REJECT")
    accepted = tuple(
        str(final if final is not None else text)
        for action, text, final in rows
        if action in ACCEPTED
    )
    return GuardExamples(rejected, accepted)


def guard_status(examples: GuardExamples) -> str:
    """One line: whether the learned guard flags, and what it learned from or still needs."""
    counts = f"{len(examples.rejected):,} rejected, {len(examples.accepted):,} accepted"
    if not examples.enough:
        return (
            f"the learned guard waits for more committed decisions ({counts}; "
            f"{MIN_PER_CLASS} of each needed)"
        )
    return f"the learned guard flags candidates like the ones you rejected ({counts})"


class LearnedGuard:
    """A fitted TF-IDF + logistic regression; :meth:`flags` judges texts."""

    def __init__(self, examples: GuardExamples) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self.examples = examples
        texts = [*examples.rejected, *examples.accepted]
        labels = [1] * len(examples.rejected) + [0] * len(examples.accepted)
        self.vectorizer = TfidfVectorizer(
            analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, lowercase=True
        )
        features = self.vectorizer.fit_transform(texts)
        self.model = LogisticRegression(class_weight="balanced", C=10.0, random_state=SEED)
        self.model.fit(features, labels)
        self.rejected_features = features[: len(examples.rejected)]

    def flags(self, texts: Sequence[str]) -> list[Flag | None]:
        """The ``learned`` flag of each text (None: not like the rejected ones)."""
        import numpy as np  # on use: listing a run with no learned guard needs no numpy

        if not texts:
            return []
        features = self.vectorizer.transform(list(texts))
        probs = self.model.predict_proba(features)[:, 1]
        similar: Any = features @ self.rejected_features.T
        result: list[Flag | None] = []
        for row, p in enumerate(probs):
            sims = np.asarray(similar[row].todense()).ravel()
            nearest = int(np.argmax(sims))
            if not (p >= THRESHOLD and sims[nearest] >= MIN_SIMILARITY):
                result.append(None)
                continue
            closest = self.examples.rejected[nearest]
            result.append(learned_flag(float(p), self.examples, closest, float(sims[nearest])))
        return result


def learned_flag(p: float, examples: GuardExamples, closest: str, similarity: float) -> Flag:
    """The flag; the closest rejected text is quoted redacted (it may carry a secret)."""
    flat = " ".join(redact(closest).split())
    short = flat if len(flat) <= 60 else flat[:59] + "…"
    return Flag(
        LEARNED_KIND,
        f"resembles texts you rejected (p {p:.2f}, learned from "
        f"{len(examples.rejected):,} rejected and {len(examples.accepted):,} accepted; "
        f"closest, similarity {similarity:.2f}: “{short}”)",
        0,
        0,
    )


def train_guard(examples: GuardExamples) -> LearnedGuard | None:
    """The guard trained on ``examples``, or None while too few (or, texts that share
    no character n-gram at all, e.g. only blanks: nothing to learn from)."""
    if not examples.enough:
        return None
    try:
        return LearnedGuard(examples)
    except ValueError:  # scikit-learn: "empty vocabulary"
        return None


@dataclass(frozen=True)
class GuardReport:
    """What one relearning did: trained or not, and how many waiting candidates it flags."""

    trained: bool
    rejected: int
    accepted: int
    pending: int
    flagged: int
    status: str

    def summary(self) -> str:
        if not self.trained:
            return self.status
        return f"{self.status}; {self.flagged} of {self.pending} waiting candidates flagged"


def relearn_guard(store: Store) -> GuardReport:
    """Retrain on the committed decisions and rewrite the ``learned`` flag of every
    undecided candidate of a staged run (removed everywhere while too few examples)."""
    examples = guard_examples(store)
    guard = train_guard(examples)
    with store.read():
        pending = tuples(
            Candidate.select(Candidate.id, Candidate.text, Candidate.guard_flags)
            .join(Run)
            .where((Run.status == "staged") & Candidate.action.is_null())
            .order_by(Candidate.id)
            .bind(store.db)
        )
    found = guard.flags([row[1] for row in pending]) if guard is not None else []
    flagged = 0
    with store.write():
        for index, (candidate_id, _, stored) in enumerate(pending):
            flag = found[index] if guard is not None else None
            flagged += flag is not None
            new = replace_kind(stored, LEARNED_KIND, flag)
            if new != stored:
                Candidate.update(guard_flags=new).where(
                    (Candidate.id == candidate_id) & Candidate.action.is_null()
                ).execute()
    return GuardReport(
        trained=guard is not None,
        rejected=len(examples.rejected),
        accepted=len(examples.accepted),
        pending=len(pending),
        flagged=flagged,
        status=guard_status(examples),
    )


def relearn_after_commit(store: Store) -> GuardReport | None:
    """:func:`relearn_guard` after a commit, which has already succeeded whatever happens
    here: a failure is logged (the waiting candidates keep their learned flags, and the
    next staging or ``curator classify --relearn`` learns again), never raised."""
    try:
        return relearn_guard(store)
    except Exception as exc:  # the commit is done: it must not be reported as failed
        # one line (a traceback after "committed" read as a failed commit); the chain
        # for whoever turns debug logging on
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        log.warning("the learned guard could not relearn after the commit: %s", reason)
        log.debug("the relearning's failure", exc_info=True)
        return None
