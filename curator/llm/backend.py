"""What the pipeline needs from a language model, independent of llama.cpp.

Every prompt is split in two: a constant ``prefix`` (already rendered with the chat
template: system turn plus the instructions that open the user turn) and a variable
``item`` (the episode or the batch) that comes last. The backend appends the item, closes
the user turn and opens the assistant turn itself. Keeping the prefix constant lets the
backend reuse the KV cache of the prefix from one call to the next, which is most of the
cost of classifying short episodes one at a time.

An item too long for the context is truncated *by tokens* (its head and tail are kept)
and the result says so, so the pipeline can record it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from curator.core.degenerate import Loop, LoopWatch
from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.llm.model_file import ModelInfo

TokenCallback = Callable[[str], None]
StopCheck = Callable[[], bool]


class StopRequested(Exception):
    """``should_stop`` turned true before an answer existed (nothing to return)."""


class NonFiniteOutput(CuratorError):
    """The model computed NaN or infinite logits or scores.

    A model whose weights are damaged still loads and still "answers": argmax over NaN
    picks the first label, sampling picks arbitrary tokens. Nothing derived from such
    output may be stored, so this fails the whole run (exit code 2).
    """

    exit_code = 2

    def __init__(self, what: str) -> None:
        super().__init__(
            f"the model produced non-finite {what} (NaN or infinity): the model file is "
            "probably damaged; nothing from this call was stored"
        )


def require_finite(what: str, values: Sequence[float]) -> None:
    """Raise :class:`NonFiniteOutput` unless every value is a finite number."""
    if not all(math.isfinite(v) for v in values):
        raise NonFiniteOutput(what)


def stop_after_token(
    produced: int, budget: int, should_stop: StopCheck | None, watch: LoopWatch | None = None
) -> str | None:
    """Why generation stops after its ``produced``-th token, or None to go on.

    The one rule for every backend's generation loop: a cancel wins, then a loop (the
    ``watch`` the backend feeds every piece of text found one: a small model that loops
    would otherwise spend the whole budget, minutes, repeating itself), then the token
    budget. ``produced`` is counted by the caller, never taken from the model or the
    server, so a server that ignores ``max_tokens`` is still cut off at it.
    """
    if should_stop is not None and should_stop():
        return "cancelled"
    if watch is not None and watch.loop is not None:
        return "loop"
    if produced >= budget:
        return "length"
    return None


@dataclass
class BackendSettings:
    """How to load the model (the saved settings of the same names, overridable per run)."""

    model_path: Path
    n_gpu_layers: int = -1  # all layers; a CPU-only build ignores it
    n_ctx: int = 4096
    n_threads: int | None = None  # None: measured, the physical cores until then (load_backend)
    flash_attn: bool = False
    seed: int = 42
    temperature: float = 0.0
    n_batch: int = 512
    """Prompt tokens a llama.cpp batch holds. Not a saved setting: 512 (llama.cpp's own
    default) everywhere; the batch split's edge cases (a token evaluated alone past a
    multiple of it) are the same at any size, so tests reach them with shorter prompts."""


def backend_settings(settings: Any, model_path: Path) -> BackendSettings:
    """The one place the saved (or overridden) settings become llama.cpp load settings.

    ``settings`` is anything with the attributes of the same names (the store's
    ``Settings``); ``llm`` does not import the store.
    """
    return BackendSettings(
        model_path=model_path,
        n_gpu_layers=int(settings.n_gpu_layers),
        n_ctx=int(settings.n_ctx),
        n_threads=settings.n_threads,
        flash_attn=bool(settings.flash_attn),
        seed=int(settings.seed),
        temperature=float(settings.temperature),
    )


@dataclass(frozen=True)
class Completion:
    """The result of one generation call.

    ``stop_reason`` is ``"stop"`` (end of turn, or the grammar completed), ``"length"``
    (hit ``max_tokens``), ``"loop"`` (the output ended in a loop: ``loop`` says what
    repeated and where it began in ``text``) or ``"cancelled"`` (``should_stop``
    returned true). ``cached_tokens`` is how many prompt tokens were served from the KV
    cache.
    """

    text: str
    tokens_in: int
    tokens_out: int
    cached_tokens: int
    seconds: float
    stop_reason: str
    truncated: bool = False
    item_tokens: int = 0
    loop: Loop | None = None


class GenerationRate:
    """Generated tokens per second of generation, for one model call.

    The figure is (tokens after the first) / (time from the first token to the latest).
    The first token marks the start: it comes out only after the prompt has been
    evaluated (and the model loaded), so any clock started earlier would count prompt
    processing as generation (one token after a 5-second prompt read "0.2 tokens/s").
    Before a second token there is no generation time to divide by: the figure is 0,
    which :func:`curator.pipeline.progress.speed_text` shows as nothing.
    """

    def __init__(self) -> None:
        self.tokens = 0
        self._first: float | None = None
        self._last: float | None = None

    def token(self, now: float | None = None) -> None:
        """Count one generated token at ``now`` (``time.perf_counter()`` by default)."""
        stamp = time.perf_counter() if now is None else now
        if self._first is None:
            self._first = stamp
        self._last = stamp
        self.tokens += 1

    @property
    def per_s(self) -> float:
        if self._first is None or self._last is None or self.tokens < 2:
            return 0.0
        span = self._last - self._first
        value = (self.tokens - 1) / span if span > 0 else 0.0
        return value if math.isfinite(value) else 0.0  # a span too small to divide by


@dataclass(frozen=True)
class LabelScores:
    """The scoring of a fixed set of labels after one prompt.

    ``logprobs`` are the model's log-probabilities of each label's full token sequence
    as the assistant's answer; ``probabilities`` is their softmax over the labels only
    (they sum to 1), and ``confidence`` is the chosen label's share.
    """

    label: str
    confidence: float
    probabilities: dict[str, float]
    tokens_in: int
    cached_tokens: int
    seconds: float
    logprobs: dict[str, float] = field(default_factory=dict)
    truncated: bool = False
    item_tokens: int = 0
    method: str = "exact"
    """How the labels were scored: ``exact`` (each label's full token sequence, the
    model's own values), ``first-token-approx`` (a model server returned only its top N
    and a label token was outside it: bounded by the smallest returned log-probability)
    or ``unscored`` (a server without log-probabilities: the label was generated under
    constraint; no probabilities, the confidence is 1)."""


@runtime_checkable
class Backend(Protocol):
    """A loaded model. Implementations are used from one thread at a time.

    ``model_info`` is the local model file (None for a model behind a server, which then
    describes itself in ``remote``: url without credentials, model id, server kind);
    ``offload`` says in a few words where the model runs (shown in the status bar).
    """

    model_info: ModelInfo | None
    offload: str

    @property
    def remote(self) -> dict[str, Any]:
        """What identifies a model on a server (empty for a local file)."""
        ...

    @property
    def scoring_method(self) -> str:
        """How :meth:`classify` scores labels, in words (recorded in the run's params)."""
        ...

    def close(self) -> None:
        """Free the model (or the connection); the backend is unusable afterwards."""
        ...

    @property
    def n_ctx(self) -> int:
        """The context size in tokens (prompt plus output must fit)."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """Tokens of plain text (no special tokens parsed, no BOS added)."""
        ...

    def chat_prefix(self, system: str, user_start: str) -> str:
        """The constant prompt part rendered with the model's chat template."""
        ...

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
        """Generate the assistant's answer to ``prefix + item``.

        Streams each piece of text to ``on_token``; checks ``should_stop`` between tokens
        (and between prompt chunks) and returns early with ``stop_reason="cancelled"``.
        ``grammar`` is GBNF text: the output is then guaranteed to match it unless it was
        cut by ``max_tokens`` or a cancel. ``repeat_penalty`` > 1 discourages the loops
        small models fall into in free text (leave it at 1 with a grammar: it would
        penalise the JSON punctuation). ``stop_loops`` ends the call with
        ``stop_reason="loop"`` once the output ends in a loop
        (:mod:`curator.core.degenerate`); turn it off for output that is meant to repeat
        its shape, such as a list of numbers.
        """
        ...

    def classify(
        self,
        prefix: str,
        item: str,
        labels: Sequence[str],
        *,
        answer_prefix: str = "",
        should_stop: StopCheck | None = None,
    ) -> LabelScores:
        """Score each label as the complete answer and choose the most probable one.

        ``answer_prefix`` (e.g. ``"Label:"``) opens the assistant's answer; the labels are
        then scored as its continuation, after a space. ``should_stop`` is checked between
        chunks of the prompt evaluation (a long episode takes seconds on a CPU);
        :class:`StopRequested` is raised when it turned true.
        """
        ...
