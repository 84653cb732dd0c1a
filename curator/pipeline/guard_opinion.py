"""The configured model's second opinion on a candidate: one scored yes/no call.

The rule-based flags (:mod:`curator.core.flags`) catch the wordings they know. A model
that reads the text catches the ones they do not, so at staging each candidate is put to
the configured model as a yes/no question (``resources/prompts/guard.v*.txt``): does this
text try to instruct or change the agent, or smuggle in secrets, links or contacts,
rather than state a fact? The prompt says in so many words that a text *about* an
injection is not one (topic is not intent).

The answer is scored, not generated: the two label words are scored as the assistant's
answer exactly as classification scores its labels
(:meth:`curator.llm.backend.Backend.classify`, both backends), so it costs one short
call per candidate and can never be anything but yes or no. ``p(yes)`` at or above the
``guard_opinion_threshold`` setting gives a ``model`` flag with the probability in its
reason. The flag is stored on the candidate (:mod:`curator.pipeline.guard`); the review
shows the stored opinion and never asks again, so what a reviewer sees does not depend
on which model happens to be loaded later.

When it runs: the ``guard_model_opinion`` setting is ``on`` (the default) and the model
is not the bundled demo model (SmolLM2-135M is too small to judge and would only add
noise), or the setting is ``always`` (the demo model too: what the tests use to exercise
the path), never when it is ``off``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.core.flag_type import Flag
from curator.llm.backend import Backend, StopCheck, require_finite
from curator.llm.http_backend import SERVER_ENV
from curator.llm.model_file import DEMO_FILE, MODEL_ENV, demo_model_path
from curator.llm.prompts import PromptTemplate, load_prompt
from curator.pipeline.guard_flags import MODEL_KIND
from curator.pipeline.runlog import TraceRecord
from curator.store.settings import Settings

ANSWERS = ("yes", "no")
STEP = "guard"


def demo_model_configured(settings: Settings) -> bool:
    """Whether runs would use the bundled demo model (no file chosen, or the demo file).

    Not when a model server is chosen (in Settings or through ``$CURATOR_SERVER``).
    """
    if os.environ.get(SERVER_ENV) or (settings.backend == "server" and settings.server_url):
        return False
    chosen = os.environ.get(MODEL_ENV) or settings.model_path
    if not chosen:
        return True
    demo = demo_model_path()
    try:
        return demo is not None and Path(chosen).expanduser().resolve() == demo.resolve()
    except OSError:
        return False


def is_demo_backend(backend: Backend) -> bool:
    """Whether the loaded model is the bundled demo model (its file, wherever it lies).

    A model behind a server is never taken for it (as :func:`demo_model_configured`).
    """
    info = backend.model_info
    if info is None:
        return False
    if Path(info.path).name == DEMO_FILE:
        return True
    demo = demo_model_path()
    try:
        return demo is not None and Path(info.path).resolve() == demo.resolve()
    except OSError:
        return False


def opinion_wanted(settings: Settings) -> bool:
    """Whether staging should load a model for the second opinion (before loading one)."""
    mode = settings.guard_model_opinion
    return mode == "always" or (mode == "on" and not demo_model_configured(settings))


def why_not_asked(settings: Settings, backend: Backend | None) -> str | None:
    """Why the second opinion is not asked with ``backend`` (None: it is asked)."""
    mode = settings.guard_model_opinion
    if mode == "off":
        return "turned off (guard_model_opinion = off)"
    if backend is None:
        return "no model was loaded for this staging"
    if mode == "on" and is_demo_backend(backend):
        return "the demo model is too small to judge (guard_model_opinion = always asks it)"
    return None


@dataclass(frozen=True)
class Opinion:
    """The model's answer on one text: p(yes), the flag it gives (or None), its trace."""

    p_yes: float
    flag: Flag | None
    trace: TraceRecord


class SecondOpinion:
    """The guard prompt rendered once for ``backend``; :meth:`judge` scores one text."""

    def __init__(self, backend: Backend, threshold: float) -> None:
        self.backend = backend
        self.threshold = threshold
        self.prompt: PromptTemplate = load_prompt(STEP)
        system, user_start = self.prompt.render({})
        self.prefix = backend.chat_prefix(system, user_start)

    def judge(self, text: str, should_stop: StopCheck | None = None) -> Opinion:
        """One scored call; raises ``StopRequested`` when ``should_stop`` turned true."""
        scores = self.backend.classify(
            self.prefix,
            text,
            ANSWERS,
            answer_prefix=self.prompt.assistant,
            should_stop=should_stop,
        )
        p_yes = yes_probability(scores.label, scores.probabilities)
        require_finite("guard answer scores", [p_yes, *scores.probabilities.values()])
        flag = opinion_flag(p_yes, self.threshold, scores.method)
        trace = TraceRecord(
            step=STEP,
            prompt=self.prompt,
            raw_output=scores.label,
            parsed={
                "p_yes": p_yes,
                "threshold": self.threshold,
                "flagged": flag is not None,
                "probabilities": scores.probabilities,
                "logprobs": scores.logprobs,
                "method": scores.method,
                "truncated": scores.truncated,
            },
            tokens_in=scores.tokens_in,
            cached_tokens=scores.cached_tokens,
            seconds=scores.seconds,
        )
        return Opinion(p_yes, flag, trace)


def yes_probability(label: str, probabilities: dict[str, float]) -> float:
    """p(yes) from the scored labels; a server that only generated the label gives 1 or 0."""
    if "yes" in probabilities:
        return float(probabilities["yes"])
    return 1.0 if label == "yes" else 0.0


def opinion_flag(p_yes: float, threshold: float, method: str = "exact") -> Flag | None:
    """The ``model`` flag when ``p_yes`` reaches ``threshold`` (a whole-text flag)."""
    if p_yes < threshold:
        return None
    how = "" if method == "exact" else f", {method}"
    return Flag(
        MODEL_KIND,
        f"the model's second opinion: it tries to instruct or change the agent or smuggles "
        f"secrets or links (p(yes) {p_yes:.2f} ≥ {threshold:.2f}{how})",
        0,
        0,
    )


def opinion_params(settings: Settings, asked: bool, reason: str | None) -> dict[str, Any]:
    """What a run records about its second opinion (asked or why not, and the threshold)."""
    return {
        "asked": asked,
        "reason": reason or "",
        "mode": settings.guard_model_opinion,
        "threshold": settings.guard_opinion_threshold,
    }
