"""The guard's judgements made at staging: stored on the candidate, shown as flags.

Two sources judge a candidate when its run is staged (distillation or imported
knowledge) and their flags are stored in ``Candidate.guard_flags``:

* the configured model's second opinion (:mod:`curator.pipeline.guard_opinion`), a
  ``model`` flag;
* the guard learned from the reviewer's rejections (:mod:`curator.pipeline.guard_learn`),
  a ``learned`` flag (rewritten for waiting candidates when it relearns).

The review shows them after the rule flags (:mod:`curator.pipeline.flagging`) exactly
as it shows those (the pane, ``curator review --json``, the Accept-all confirmation, the
flags a decision records as seen). Stored rather than recomputed: asking a model again
costs a call and could answer differently, and the reviewer must see the same thing each
time. Neither ever changes the gate's proposal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from curator.core.flag_type import Flag
from curator.llm.backend import Backend, StopCheck
from curator.pipeline.guard_flags import encode
from curator.pipeline.guard_learn import LearnedGuard, guard_examples, guard_status, train_guard
from curator.pipeline.guard_opinion import SecondOpinion, opinion_params, why_not_asked
from curator.pipeline.runlog import TraceRecord
from curator.store.db import Store
from curator.store.settings import Settings


@dataclass
class StagingGuard:
    """What judges the candidates of one staging: the model (or why not), the learned guard."""

    opinion: SecondOpinion | None
    learned: LearnedGuard | None
    params: dict[str, Any] = field(default_factory=dict)

    def judge(
        self, texts: Sequence[str], should_stop: StopCheck | None = None
    ) -> tuple[list[list[dict[str, Any]] | None], list[TraceRecord]]:
        """Each text's ``guard_flags`` value, and the model calls' trace records."""
        per_text: list[list[Flag]] = [[] for _ in texts]
        traces: list[TraceRecord] = []
        if self.opinion is not None:
            for index, text in enumerate(texts):
                answer = self.opinion.judge(text, should_stop)
                traces.append(answer.trace)
                if answer.flag is not None:
                    per_text[index].append(answer.flag)
        if self.learned is not None:
            for index, flag in enumerate(self.learned.flags(texts)):
                if flag is not None:
                    per_text[index].append(flag)
        return [encode(flags) for flags in per_text], traces


def staging_guard(store: Store, settings: Settings, backend: Backend | None) -> StagingGuard:
    """The guard for one staging: asks ``backend`` when the settings allow (see
    :func:`curator.pipeline.guard_opinion.why_not_asked`), learns from the store."""
    reason = why_not_asked(settings, backend)
    opinion = None
    if reason is None and backend is not None:
        opinion = SecondOpinion(backend, settings.guard_opinion_threshold)
    examples = guard_examples(store)
    learned = train_guard(examples)
    params = {
        "model_opinion": opinion_params(settings, opinion is not None, reason),
        "learned": guard_status(examples),
    }
    return StagingGuard(opinion, learned, params)
