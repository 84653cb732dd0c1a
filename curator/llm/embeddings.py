"""Episode embeddings from the same GGUF, in a second llama.cpp context.

The generation context of :class:`~curator.llm.llama_cpp_backend.LlamaCppBackend` keeps
its KV cache for prefix reuse and produces logits; an embedding needs a context created
with ``embedding=True`` and a pooling type. So the embedder owns a second ``Llama`` over
the same file, created on first use, on the thread that calls it (the GUI's worker, the
CLI's main thread): a user who never learns from labels never pays for it.

Mean pooling over the episode's tokens, L2-normalised: a plain, deterministic summary
that a linear classifier can work with. A text longer than the context is cut to its
first ``n_ctx`` tokens (the head of an episode says what it is about).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from curator.llm.backend import StopCheck, StopRequested
from curator.llm.llama_log import one_load_at_a_time, quiet_llama_cpp
from curator.llm.thread_contention import ContentionGuard, for_context
from curator.llm.threads import default_threads

EMBED_CTX = 1024
"""Tokens per episode seen by the embedding (and the context size of the second Llama)."""


class LlamaEmbedder:
    """Lazily loaded embedding context over one GGUF file; one thread at a time."""

    def __init__(self, model_path: Path, *, n_threads: int | None = None, n_gpu_layers: int = -1):
        self.model_path = Path(model_path)
        self.n_threads = n_threads or default_threads()
        self.n_gpu_layers = n_gpu_layers
        self._llm: Any = None
        self.contention: ContentionGuard | None = None
        """Fewer threads while other processes take the cores (as the main context)."""
        self._busy = threading.Lock()
        self.evaluations = 0
        """Texts embedded so far (tests check that cached embeddings are not recomputed)."""

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def _load(self) -> Any:
        if self._llm is None:
            llama_cpp = quiet_llama_cpp()  # no "pooling_type" warning on the terminal

            with one_load_at_a_time():
                self._llm = llama_cpp.Llama(
                    model_path=str(self.model_path),
                    embedding=True,
                    pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                    n_ctx=EMBED_CTX,
                    n_batch=EMBED_CTX,
                    n_ubatch=EMBED_CTX,
                    n_gpu_layers=self.n_gpu_layers,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    verbose=False,
                )
            self.contention = for_context(self._llm, self.n_threads, self.n_threads)
        return self._llm

    def embed(
        self, texts: Sequence[str], *, should_stop: StopCheck | None = None
    ) -> npt.NDArray[np.float32]:
        """One L2-normalised row per text; :class:`StopRequested` if ``should_stop`` turns true."""
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("the embedding context is already in use on another thread")
        try:
            llm = self._load()
            rows: list[npt.NDArray[np.float32]] = []
            for text in texts:
                if should_stop is not None and should_stop():
                    raise StopRequested
                if self.contention is not None:
                    self.contention.check()
                vector = np.asarray(
                    llm.embed(text if text.strip() else " ", normalize=True, truncate=True),
                    dtype=np.float32,
                ).reshape(-1)
                self.evaluations += 1
                rows.append(vector)
            if not rows:
                return np.zeros((0, int(llm.n_embd())), dtype=np.float32)
            return np.vstack(rows)
        finally:
            self._busy.release()

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
