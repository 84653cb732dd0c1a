"""The in-process backend's two decode loops: llama-cpp-python's sampling, and greedy
decoding that checks the grammar on the chosen token only.

Both end by the one rule of :class:`~curator.llm.generation.Generation` (cancel, loop,
budget, checked after every token), and a cancel is seen within one token's decode.
"""

from __future__ import annotations

import codecs
import ctypes
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from curator.llm.generation import Generation

if TYPE_CHECKING:
    from curator.llm.llama_cpp_backend import LlamaCppBackend

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
"""Memory layout of ``llama_token_data`` (id, logit, p)."""


class _Pieces:
    """Tokens to text for one generation: a UTF-8 character split over two tokens is
    given when complete."""

    def __init__(self, backend: LlamaCppBackend, gen: Generation) -> None:
        self._backend = backend
        self._gen = gen
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def token(self, token: int) -> str | None:
        """One generated (non end-of-generation) token: why to stop, or None."""
        return self._gen.take(self._decoder.decode(self._backend.piece(token)))

    def finish(self) -> None:
        self._gen.take(self._decoder.decode(b"", final=True), count=False)


def sampled(
    backend: LlamaCppBackend, tokens: list[int], compiled: Any, temp: float, gen: Generation
) -> str:
    """llama-cpp-python's own sampling loop (grammar, if any, on every step); returns
    the stop reason."""
    lib, vocab = backend.lib, backend.vocab
    pieces = _Pieces(backend, gen)
    reason = "length"
    generator = backend.llm.generate(
        tokens,
        temp=temp,
        top_k=40,
        top_p=0.95,
        min_p=0.05,
        repeat_penalty=gen.request.repeat_penalty,
        grammar=compiled,
    )
    try:
        for token in generator:
            if lib.llama_vocab_is_eog(vocab, token):
                reason = "stop"
                break
            if (why := pieces.token(token)) is not None:
                reason = why
                break
    finally:
        generator.close()
        pieces.finish()
    return reason


def greedy(backend: LlamaCppBackend, grammar: str | None, gen: Generation) -> str:
    """Greedy decoding that checks the grammar on the chosen token only; returns the
    stop reason.

    The same rule as llama.cpp's ``common/sampling.cpp``: pick the token without the
    grammar, check that one token against it, and only when it is rejected apply the
    grammar to the whole vocabulary and pick again.  For greedy decoding the result
    is the plain way's token by construction: penalties do not depend on the grammar,
    the grammar only masks tokens, so an allowed global maximum is also the maximum
    among the allowed tokens (ties: the lowest token id in both ways).  Masking the
    vocabulary costs far more than a decode step of a small model, and a model that
    follows the format almost never needs it.
    """
    lib, llm, vocab, n_vocab = backend.lib, backend.llm, backend.vocab, backend.n_vocab
    chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
    # The same arguments as llama-cpp-python's sampler chain (identical penalties).
    lib.llama_sampler_chain_add(
        chain,
        lib.llama_sampler_init_penalties(
            n_vocab, llm.last_n_tokens_size, gen.request.repeat_penalty, 0.0, 0.0
        ),
    )
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
    checker = None
    if grammar:
        checker = lib.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    candidates = (lib.llama_token_data * n_vocab)()
    view = np.frombuffer(candidates, dtype=_TOKEN_DATA)
    ids = np.arange(n_vocab, dtype=np.int32)
    whole = lib.llama_token_data_array(candidates, n_vocab, -1, False)
    single = (lib.llama_token_data * 1)()
    one = lib.llama_token_data_array(single, 1, -1, False)
    pieces = _Pieces(backend, gen)
    reason = "length"

    def pick(with_grammar: bool) -> int:
        view["id"] = ids
        view["logit"] = backend.logits(-1)
        view["p"] = 0.0
        whole.size, whole.selected, whole.sorted = n_vocab, -1, False
        if with_grammar:
            lib.llama_sampler_apply(checker, ctypes.byref(whole))
        lib.llama_sampler_apply(chain, ctypes.byref(whole))
        return int(candidates[whole.selected].id)

    try:
        while True:
            token = pick(False)
            if checker is not None:
                single[0].id, single[0].logit, single[0].p = token, 1.0, 0.0
                one.size, one.selected, one.sorted = 1, -1, False
                lib.llama_sampler_apply(checker, ctypes.byref(one))
                if math.isinf(single[0].logit):
                    backend.grammar_fallbacks += 1
                    token = pick(True)
                lib.llama_sampler_accept(checker, token)
            lib.llama_sampler_accept(chain, token)
            if lib.llama_vocab_is_eog(vocab, token):
                reason = "stop"
                break
            if (why := pieces.token(token)) is not None:
                reason = why
                break
            llm.eval([token])
    finally:
        lib.llama_sampler_free(chain)
        if checker is not None:
            lib.llama_sampler_free(checker)
        pieces.finish()
    return reason
