"""What every backend shares: the calls, and the rule that ends a generation.

:class:`GenerationBase` holds the signatures of
:meth:`~curator.llm.backend.Backend.complete` and
:meth:`~curator.llm.backend.Backend.classify` once, for both backends; each implements
:meth:`GenerationBase._generate` on a :class:`GenerationRequest` and
:meth:`GenerationBase._score`, and turns label log-probabilities into probabilities with
:func:`label_softmax`. :class:`Generation` is the one place a generated piece of
text is counted, streamed, watched for a loop and checked against cancel and budget
(:func:`~curator.llm.backend.stop_after_token`), whichever decode loop produced it: the
in-process greedy and sampling loops and the HTTP stream alike, so they cannot drift
apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from curator.core.degenerate import LoopWatch
from curator.llm.backend import (
    Completion,
    LabelScores,
    StopCheck,
    TokenCallback,
    require_finite,
    stop_after_token,
)


@dataclass(frozen=True)
class GenerationRequest:
    """The arguments of one :meth:`~curator.llm.backend.Backend.complete` call."""

    prefix: str
    item: str
    max_tokens: int
    grammar: str | None = None
    on_token: TokenCallback | None = None
    should_stop: StopCheck | None = None
    temperature: float | None = None
    seed: int | None = None
    repeat_penalty: float = 1.0
    stop_loops: bool = True


class Generation:
    """One generation's output so far, and whether it must stop (see the module)."""

    def __init__(self, request: GenerationRequest, budget: int) -> None:
        self.request = request
        self.budget = budget
        self.watch = LoopWatch() if request.stop_loops else None
        self.pieces: list[str] = []
        self.produced = 0

    def take(self, text: str, *, count: bool = True) -> str | None:
        """One generated piece of text: why generation stops now, or None to go on.

        ``count`` is False for a piece that is not a token of its own (the text a UTF-8
        decoder held back, given at the end).
        """
        if count:
            self.produced += 1
        if text:
            self.pieces.append(text)
            if self.request.on_token is not None:
                self.request.on_token(text)
            if self.watch is not None:
                self.watch.feed(text)
        return self.check() if count else None

    def check(self) -> str | None:
        """Why generation stops now (cancel, loop, budget), or None to go on."""
        return stop_after_token(self.produced, self.budget, self.request.should_stop, self.watch)

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def completion(
        self,
        reason: str,
        *,
        tokens_in: int,
        cached_tokens: int,
        seconds: float,
        truncated: bool,
        item_tokens: int,
    ) -> Completion:
        """The result, with the loop that was found when the loop ended it."""
        loop = self.watch.loop if reason == "loop" and self.watch is not None else None
        return Completion(
            text=self.text,
            tokens_in=tokens_in,
            tokens_out=self.produced,
            cached_tokens=cached_tokens,
            seconds=seconds,
            stop_reason=reason,
            truncated=truncated,
            item_tokens=item_tokens,
            loop=loop,
        )


def label_softmax(logprobs: dict[str, float]) -> dict[str, float]:
    """The labels' probabilities among themselves (they sum to 1), from their
    log-probabilities; non-finite scores are refused (:class:`NonFiniteOutput`)."""
    require_finite("label scores", list(logprobs.values()))
    top = max(logprobs.values())
    weights = {k: math.exp(v - top) for k, v in logprobs.items()}
    norm = sum(weights.values())
    return {k: w / norm for k, w in weights.items()}


class GenerationBase:
    """:meth:`complete` and :meth:`classify` once for every backend (the protocol's
    signatures and meaning); a backend implements :meth:`_generate` and :meth:`_score`."""

    def complete(
        self,
        prefix: str,
        item: str = "",
        *,
        max_tokens: int,
        grammar: str | None = None,
        on_token: TokenCallback | None = None,
        should_stop: StopCheck | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        repeat_penalty: float = 1.0,
        stop_loops: bool = True,
    ) -> Completion:
        """See :meth:`curator.llm.backend.Backend.complete`."""
        return self._generate(
            GenerationRequest(
                prefix,
                item,
                max_tokens,
                grammar,
                on_token,
                should_stop,
                temperature,
                seed,
                repeat_penalty,
                stop_loops,
            )
        )

    def classify(
        self,
        prefix: str,
        item: str,
        labels: Sequence[str],
        *,
        answer_prefix: str = "",
        should_stop: StopCheck | None = None,
    ) -> LabelScores:
        """See :meth:`curator.llm.backend.Backend.classify`."""
        if len(set(labels)) != len(labels) or not labels:
            raise ValueError("labels must be distinct and non-empty")
        return self._score(prefix, item, tuple(labels), answer_prefix, should_stop)

    def _generate(self, request: GenerationRequest) -> Completion:
        raise NotImplementedError

    def _score(
        self,
        prefix: str,
        item: str,
        labels: tuple[str, ...],
        answer_prefix: str,
        should_stop: StopCheck | None,
    ) -> LabelScores:
        raise NotImplementedError
