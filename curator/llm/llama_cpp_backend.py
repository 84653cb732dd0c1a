"""The :class:`~curator.llm.backend.Backend` over llama-cpp-python.

One :class:`LlamaCppBackend` owns one ``llama_cpp.Llama`` (model weights plus one context
with its KV cache). A llama.cpp context must never be used by two threads at once, so
every call takes a non-blocking lock and fails loudly on concurrent use; create the
backend on the thread that will use it (the GUI's worker thread, the CLI's main thread).
With ``CURATOR_DEBUG=1`` calls from any other thread than the creating one are refused
as well, to catch designs that hand the backend around.

KV cache reuse: before each call the prompt's tokens are compared with the tokens already
in the context; only the part after the longest common prefix is evaluated (the same
rule as ``Llama.generate``, done here so the prompt can be evaluated in chunks that can
be cancelled, and so the number of cached tokens can be reported). Prompts are built so
the constant prefix comes first, hence consecutive calls with the same prefix evaluate
only the episode.

Classification does not sample. After one forward pass over the prompt the log-softmax
of the next-token logits gives each label's first token; the remaining tokens of every
multi-token label are scored too, so the chosen label is the one with the highest
log-probability of its *full* token sequence (greedy or grammar-constrained sampling could
instead follow a likely short first token into a less probable label, and labels whose
first tokens collide are told apart). Labels are scored without an end-of-answer token,
so no label may be a token prefix of another.

Batches, and why they are the server's. llama.cpp's CPU kernels compute a batch of one
token by another path than a batch of two or more, with slightly different results (up
to about 0.5 in a log-probability on the demo model), while any split of a prompt into
batches of two or more tokens gives bit-identical results. So the batches here are the
ones llama-cpp-python's own server (``Llama.generate``) evaluates for the HTTP backend's
requests, and the two backends' label scores agree to the last bit
(``tests/llm/test_http_backend.py``): the prompt from the first token not reused, in
``n_batch`` batches (cut further between cancel checks into pieces sized by the
measured speed, never into a piece of one token: :mod:`curator.llm.llama_prompt`); then
each continuation token of a label alone, on top of the prompt and the label's tokens
before it (the server sees them one request at a time): one single-token
``llama_decode`` per continuation token, a few percent of a classification. A prompt
held in full has its last *two* tokens evaluated again (``Llama.generate`` re-evaluates
one; the HTTP backend makes the server evaluate two), so a score does not depend on what
the cache held before, short of a prompt whose rest after the reused part is one token
past a multiple of ``n_batch`` (the server evaluates that token alone; so does this).
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from curator.errors import CuratorError
from curator.llm.backend import (
    BackendSettings,
    Completion,
    LabelScores,
    NonFiniteOutput,
    StopCheck,
    StopRequested,
)
from curator.llm.chat import ChatTemplate, template_from_metadata
from curator.llm.generation import (
    Generation,
    GenerationBase,
    GenerationRequest,
    label_softmax,
)
from curator.llm.llama_decode import greedy, sampled
from curator.llm.llama_log import one_load_at_a_time, quiet_llama_cpp
from curator.llm.llama_prompt import PieceTimer, evaluate_pieces
from curator.llm.model_file import (
    ModelFileError,
    ModelInfo,
    model_sha256,
    read_gguf_info,
)
from curator.llm.model_trial import validate_model_file
from curator.llm.prompt_states import MIN_TOKENS, PromptStates
from curator.llm.thread_contention import ContentionGuard, for_context
from curator.llm.threads import (
    Tuning,
    cached_tuning,
    candidate_counts,
    default_threads,
    measure,
)

MIN_ITEM_TOKENS = 16
TRUNCATION_MARKER = "\n[...]\n"


class _Stopped(Exception):
    """should_stop() turned true while the prompt was being evaluated."""


def _log_softmax(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    values = logits.astype(np.float64)
    top = float(values.max())
    return values - (top + math.log(float(np.exp(values - top).sum())))


class LlamaCppBackend(GenerationBase):
    """A loaded GGUF model; see the module docstring for threading and caching rules."""

    def __init__(self, llm: Any, settings: BackendSettings, model_info: ModelInfo) -> None:
        import llama_cpp

        self.lib = llama_cpp
        self.llm = llm
        self.settings = settings
        self.model_info: ModelInfo | None = model_info
        self._path = model_info.path
        self._owner = threading.get_ident()
        self._busy = threading.Lock()
        self._debug = os.environ.get("CURATOR_DEBUG", "") not in ("", "0")
        model = llm._model
        self.vocab = model.vocab
        self.n_vocab = int(llm.n_vocab())
        bos = model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else ""
        eos = model.token_get_text(llm.token_eos()) if llm.token_eos() >= 0 else ""
        self.template: ChatTemplate = template_from_metadata(dict(llm.metadata), bos, eos)
        self._tail = self._special_tokens(self.template.tail)
        self._marker = self.tokenize(TRUNCATION_MARKER)
        self._prefix_cache: dict[str, list[int]] = {}
        self._label_cache: dict[tuple[str, ...], list[list[int]]] = {}
        self._last_index = 0  # batch index of the prompt's last token in the last decode
        #: Greedy decoding checks the grammar on the chosen token only (see
        #: :meth:`_greedy`); False: the grammar masks the vocabulary on every step.
        self.lazy_grammar = True
        #: Tokens the grammar rejected, so that the whole vocabulary had to be masked.
        self.grammar_fallbacks = 0
        #: The measured cost of a prompt token: sizes the pieces between cancel checks.
        self.piece_timer = PieceTimer()
        #: Thread counts measured for this model (None: fixed by the settings).
        self.tuning: Tuning | None = None
        #: Fewer threads while other processes take the cores (set by load_backend).
        self.contention: ContentionGuard | None = None
        self._embedder: Any = None  # curator.llm.embeddings.LlamaEmbedder, made on first embed()
        #: Prompt heads kept on disk between processes (None: never kept nor restored).
        self.prompt_states: PromptStates | None = None
        n_layer = int(llama_cpp.llama_model_n_layer(llm.model))
        if llama_cpp.llama_supports_gpu_offload():
            wanted = settings.n_gpu_layers
            on_gpu = n_layer if wanted < 0 else min(wanted, n_layer)
            self.offload = f"GPU: {on_gpu}/{n_layer} layers"
        else:
            self.offload = "CPU only (no GPU)"

    # -- Backend protocol ------------------------------------------------------------------

    @property
    def remote(self) -> dict[str, Any]:
        return {}  # a local file: model_info identifies it

    @property
    def scoring_method(self) -> str:
        return "label log-probabilities (full token sequences)"

    @property
    def n_ctx(self) -> int:
        return int(self.llm.n_ctx())

    def tokenize(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def chat_prefix(self, system: str, user_start: str) -> str:
        return self.template.prefix(system, user_start)

    def _score(
        self,
        prefix: str,
        item: str,
        labels: tuple[str, ...],
        answer_prefix: str,
        should_stop: StopCheck | None,
    ) -> LabelScores:
        with self._exclusive():
            try:
                return self._classify(prefix, item, labels, answer_prefix, should_stop)
            except _Stopped:
                raise StopRequested from None

    # -- extras ----------------------------------------------------------------------------

    def count_prompt_tokens(self, prefix: str) -> int:
        """Tokens of a rendered prefix plus the closing of the user turn."""
        return len(self._prefix_tokens(prefix)) + len(self._tail)

    def cached_tokens(self) -> list[int]:
        """The tokens currently held in the KV cache (for tests and benchmarks)."""
        return [int(t) for t in self.llm._input_ids]

    def evaluate(self, tokens: Sequence[int]) -> tuple[int, float]:
        """Evaluate ``tokens`` reusing the cached prefix: (cached tokens, seconds).

        The benchmark's "floor": what evaluating only the new tokens costs.
        """
        with self._exclusive():
            start = time.perf_counter()
            cached = self._sync(list(tokens), None)
            return cached, time.perf_counter() - start

    def retune(self) -> Tuning:
        """Measure the fastest thread counts for this model now, apply and save them.

        Empties the KV cache (the next call evaluates its whole prompt again).
        """
        with self._exclusive():
            self.tuning = measure(self.llm, self._path, candidate_counts())
            if self.contention is not None:
                self.contention.measured = (self.tuning.n_threads, self.tuning.n_threads_batch)
                self.contention.current = self.contention.measured
            return self.tuning

    def embed(
        self, texts: Sequence[str], *, should_stop: StopCheck | None = None
    ) -> npt.NDArray[np.float32]:
        """Mean-pooled, normalised embeddings of ``texts`` (a second context, made lazily)."""
        if self._embedder is None:
            from curator.llm.embeddings import LlamaEmbedder

            self._embedder = LlamaEmbedder(
                self._path,
                n_threads=self.settings.n_threads,
                n_gpu_layers=self.settings.n_gpu_layers,
            )
        return self._embedder.embed(texts, should_stop=should_stop)

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
        self.llm.close()

    # -- internals -------------------------------------------------------------------------

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        if self._debug and threading.get_ident() != self._owner:
            raise RuntimeError("LlamaCppBackend used from a thread other than its creator")
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("LlamaCppBackend is already running a call on another thread")
        try:
            yield
        finally:
            self._busy.release()

    def _special_tokens(self, text: str) -> list[int]:
        """Tokens of template text, where special tokens such as <|im_start|> are parsed."""
        if not text:
            return []
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _prefix_tokens(self, prefix: str) -> list[int]:
        tokens = self._prefix_cache.get(prefix)
        if tokens is None:
            if len(self._prefix_cache) > 16:
                self._prefix_cache.clear()
            tokens = self._special_tokens(prefix)
            self._prefix_cache[prefix] = tokens
        return tokens

    def _build(
        self, prefix: str, item: str, reserve: int, tail: list[int] | None = None
    ) -> tuple[list[int], bool, int]:
        """prefix + item + end-of-turn tokens, the item cut to fit ``reserve`` more tokens.

        The three parts are tokenized separately so the prefix's tokens never depend on
        the item; the item is tokenized without special tokens (an episode containing
        "<|im_end|>" cannot close the turn).
        """
        head = self._prefix_tokens(prefix)
        tail = self._tail if tail is None else tail
        body = self.tokenize(item)
        budget = self.n_ctx - len(head) - len(tail) - reserve
        if budget < MIN_ITEM_TOKENS:
            raise CuratorError(
                f"the prompt does not fit the context ({len(head)} prompt tokens, "
                f"{reserve} reserved for the answer, n_ctx {self.n_ctx}); raise n_ctx"
            )
        n_item = len(body)
        truncated = n_item > budget
        if truncated:
            keep = budget - len(self._marker)
            n_head = (keep * 2) // 3
            body = body[:n_head] + self._marker + body[n_item - (keep - n_head) :]
        return head + body + tail, truncated, n_item

    def _sync(self, tokens: list[int], should_stop: StopCheck | None, head: int = 0) -> int:
        """Make the context hold exactly ``tokens``; returns how many were not evaluated
        now (reused from the context, or restored from a kept state of the first ``head``
        tokens: :mod:`curator.llm.prompt_states`).

        At least the last two tokens are always evaluated, so the last one's logits are
        current and never come from a batch of one, and the batches are those of
        ``Llama.generate`` (see :func:`~curator.llm.llama_prompt.next_cut` and the module
        docstring), so a server holding the same cache computes the same values.
        """
        llm = self.llm
        if self.contention is not None:
            self.contention.check()
        held = np.asarray(llm._input_ids, dtype=np.int64)
        want = np.asarray(tokens, dtype=np.int64)
        n = min(len(held), len(want))
        diff = np.flatnonzero(held[:n] != want[:n])
        common = int(diff[0]) if diff.size else n
        reused = cached = min(common, max(0, len(tokens) - 2))
        timer = self.piece_timer if should_stop is not None else None
        # Evaluated whole from here, the prompt's last token is a batch of one exactly
        # when this holds; evaluated as a head and a rest it must be so too, and no
        # other token may be (the head's and the rest's batches start elsewhere).
        lone = (len(tokens) - reused) % llm.n_batch == 1
        parts: bool | None = None
        states = self.prompt_states
        if (
            states is not None
            and head >= MIN_TOKENS
            and head - reused >= 2
            and len(tokens) - head >= (3 if lone else 2)
        ):
            cached = self._head(states, tokens[:head], reused, timer, should_stop)
            reused = head
            parts = lone
        llm.n_tokens = reused  # eval() drops everything after n_tokens from the KV cache
        if not evaluate_pieces(
            tokens,
            reused,
            llm.n_batch,
            timer,
            llm.eval,
            self._decode_last,
            should_stop,
            lone=parts,
        ):
            raise _Stopped
        return cached

    def _head(
        self,
        states: PromptStates,
        head: list[int],
        reused: int,
        timer: PieceTimer | None,
        should_stop: StopCheck | None,
    ) -> int:
        """The context holds ``head`` afterwards: restored from a kept state, or evaluated
        alone (from ``reused`` on) and then kept. Returns how many of its tokens were not
        evaluated now."""
        llm = self.llm
        if states.restore(head):
            return len(head)
        reused = min(reused, llm.n_tokens)  # a refused state leaves the context empty
        llm.n_tokens = reused
        if not evaluate_pieces(
            head, reused, llm.n_batch, timer, llm.eval, llm.eval, should_stop, lone=False
        ):
            raise _Stopped
        states.keep(head)
        return reused

    def _decode_last(self, final: list[int]) -> None:
        """One llama_decode of ``final`` with the logits of its last token kept."""
        llm = self.llm
        n_past = llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llm._batch.set_batch(batch=final, n_past=n_past, logits_all=False)
        self._last_index = len(final) - 1
        try:
            llm._ctx.decode(llm._batch)
        finally:
            llm.input_ids[n_past : n_past + len(final)] = final
            llm.n_tokens = n_past + len(final)
            llm._requires_eval = False
        # Every prompt ends here: damaged weights show up as NaN/inf logits of its last
        # token, before anything is sampled or scored from them.
        if not np.isfinite(self.logits(self._last_index)).all():
            raise NonFiniteOutput("logits")

    def piece(self, token: int) -> bytes:
        """The bytes of one token (llama-cpp-python's helper pads to 32 bytes)."""
        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            n = self.lib.llama_token_to_piece(self.vocab, token, buffer, size, 0, False)
            if n >= 0:
                return buffer.raw[:n]
            size = -n

    def logits(self, index: int) -> npt.NDArray[np.float32]:
        pointer = self.lib.llama_get_logits_ith(self.llm.ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def _answer_start(self, answer_prefix: str) -> tuple[list[int], str]:
        """Tokens closing the user turn and opening the answer, and the label separator.

        After an answer prefix such as ``"Label:"`` each label follows a space, which most
        tokenizers fold into the label's first token (`` noise`` is one token in SmolLM2).
        """
        if not answer_prefix:
            return self._tail, ""
        sep = "" if answer_prefix[-1].isspace() else " "
        return self._special_tokens(self.template.tail + answer_prefix), sep

    def _label_tokens(self, labels: tuple[str, ...], answer_prefix: str) -> list[list[int]]:
        """Each label's tokens exactly as they follow the opening of the answer."""
        key = (*labels, "\x00" + answer_prefix)
        found = self._label_cache.get(key)
        if found is None:
            start, sep = self._answer_start(answer_prefix)
            start_text = self.template.tail + answer_prefix
            found = []
            for label in labels:
                joined = self._special_tokens(start_text + sep + label)
                if joined[: len(start)] == start and joined[len(start) :]:
                    seq = joined[len(start) :]
                else:  # the label merged with the answer's start: tokenize it alone
                    seq = self.tokenize(sep + label)
                if not seq:
                    raise ValueError(f"label {label!r} has no tokens")
                found.append(seq)
            for a, sa in zip(labels, found, strict=True):
                for b, sb in zip(labels, found, strict=True):
                    if a != b and sb[: len(sa)] == sa:
                        # Scored without an end-of-answer token, the shorter one would
                        # always win; such label sets are not supported.
                        raise ValueError(f"label {a!r} is a token prefix of {b!r}")
            self._label_cache[key] = found
        return found

    def _classify(
        self,
        prefix: str,
        item: str,
        labels: tuple[str, ...],
        answer_prefix: str,
        should_stop: StopCheck | None = None,
    ) -> LabelScores:
        start = time.perf_counter()
        label_tokens = self._label_tokens(labels, answer_prefix)
        answer_start, _ = self._answer_start(answer_prefix)
        longest = max(label_tokens, key=len)
        tokens, truncated, n_item = self._build(prefix, item, len(longest), answer_start)
        cached = self._sync(tokens, should_stop, len(self._prefix_tokens(prefix)))
        position = self.llm.n_tokens
        # Copied before any continuation's decode overwrites the logits buffer.
        first = _log_softmax(self.logits(self._last_index))
        logprobs: dict[str, float] = {}
        for label, seq in zip(labels, label_tokens, strict=True):
            total = float(first[seq[0]])
            if len(seq) > 1:
                total += self._continuation_logprob(position, seq)
            logprobs[label] = total
        probabilities = label_softmax(logprobs)
        label = max(labels, key=lambda k: (logprobs[k], -labels.index(k)))
        return LabelScores(
            label=label,
            confidence=probabilities[label],
            probabilities=probabilities,
            tokens_in=len(tokens),
            cached_tokens=cached,
            seconds=time.perf_counter() - start,
            logprobs=logprobs,
            truncated=truncated,
            item_tokens=n_item,
        )

    def _continuation_logprob(self, position: int, seq: list[int]) -> float:
        """log P(seq[1:] | context, seq[0]), one token per llama_decode (as a server
        sees them, see the module docstring); removed from the cache afterwards."""
        llm = self.llm
        total = 0.0
        try:
            for i, nxt in enumerate(seq[1:]):
                llm._batch.set_batch(batch=[seq[i]], n_past=position + i, logits_all=True)
                llm._ctx.decode(llm._batch)
                total += float(_log_softmax(self.logits(0))[nxt])
        finally:
            llm._ctx.kv_cache_seq_rm(-1, position, -1)
        # The logits buffer now belongs to the continuation: the next _sync always
        # re-evaluates at least one token, so nobody samples from it.
        return total

    def _generate(self, request: GenerationRequest) -> Completion:
        with self._exclusive():
            return self._complete(request)

    def _complete(self, request: GenerationRequest) -> Completion:
        lib, llm, grammar = self.lib, self.llm, request.grammar
        start = time.perf_counter()
        if grammar:
            # llama.cpp returns NULL for a grammar it cannot parse, and a NULL sampler in
            # the chain would crash the process: check first, fail as a Python error.
            probe = lib.llama_sampler_init_grammar(self.vocab, grammar.encode("utf-8"), b"root")
            if not probe:
                raise ValueError("invalid GBNF grammar (llama.cpp could not parse it)")
            lib.llama_sampler_free(probe)
        reserve = max(1, min(request.max_tokens, self.n_ctx // 2))
        tokens, truncated, n_item = self._build(request.prefix, request.item, reserve)
        gen = Generation(request, max(1, min(request.max_tokens, self.n_ctx - len(tokens))))
        cached = 0
        try:
            cached = self._sync(
                tokens, request.should_stop, len(self._prefix_tokens(request.prefix))
            )
        except _Stopped:
            reason = "cancelled"
        else:
            temp = self.settings.temperature if request.temperature is None else request.temperature
            llm.set_seed(self.settings.seed if request.seed is None else request.seed)
            if temp == 0.0 and self.lazy_grammar:
                reason = greedy(self, grammar, gen)
            else:
                compiled = lib.LlamaGrammar.from_string(grammar, verbose=False) if grammar else None
                reason = sampled(self, tokens, compiled, temp, gen)
        return gen.completion(
            reason,
            tokens_in=len(tokens),
            cached_tokens=cached,
            seconds=time.perf_counter() - start,
            truncated=truncated,
            item_tokens=n_item,
        )


def load_backend(settings: BackendSettings, *, validate: bool = True) -> LlamaCppBackend:
    """Validate the file (in a child process), then load it here.

    ``n_ctx`` is capped at the model's training context when the header states it.
    """
    info = (
        validate_model_file(settings.model_path)
        if validate
        else read_gguf_info(settings.model_path)
    )
    llama_cpp = quiet_llama_cpp()  # its log goes into memory, not onto the terminal

    # None: the counts measured for this model on this machine (curator.llm.threads),
    # measured now on a first load; the physical cores until then. ggml's worker
    # threads spin while they wait for each other, so one thread more than the cores
    # that are actually free makes prompt evaluation several times slower (measured:
    # 3-5x on a busy two-core machine).
    tuning = cached_tuning(info.path) if settings.n_threads is None else None
    threads = settings.n_threads or default_threads()
    batch_threads = threads
    if tuning is not None:
        threads, batch_threads = tuning.n_threads, tuning.n_threads_batch
    n_ctx = settings.n_ctx
    if info.context_length and (n_ctx <= 0 or n_ctx > info.context_length):
        n_ctx = info.context_length
    try:
        with one_load_at_a_time():
            llm = llama_cpp.Llama(
                model_path=str(info.path),
                n_gpu_layers=settings.n_gpu_layers,
                n_ctx=n_ctx,
                n_batch=settings.n_batch,
                n_threads=threads,
                n_threads_batch=batch_threads,
                flash_attn=settings.flash_attn,
                seed=settings.seed,
                verbose=False,
            )
    except (ValueError, RuntimeError) as exc:
        raise ModelFileError(f"{info.path}: llama.cpp cannot load it ({exc})") from exc
    backend = LlamaCppBackend(llm, settings, info)
    backend.prompt_states = PromptStates(
        llm,
        lambda: model_sha256(info.path),
        (n_ctx, settings.n_gpu_layers, bool(settings.flash_attn), settings.n_batch),
    )
    backend.contention = for_context(llm, threads, batch_threads)
    if settings.n_threads is None and tuning is None:
        tuning = backend.retune()
    backend.tuning = tuning
    return backend
