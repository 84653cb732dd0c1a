"""Evaluated prompt heads kept on disk, so a new process does not evaluate them again.

Every classification prompt starts with the same few hundred tokens (the instructions,
the axioms, the examples); only the episode after them changes. Within one process the
KV cache already reuses that head from one episode to the next, but every new process
(a ``curator classify`` from cron, a ``curator watch --classify-every``, the window's
first run, an MCP-launched CLI) evaluated it again: on the demo model about 550 tokens,
four to five seconds of a two-core machine before the first episode's own tokens, and
minutes for a seven-billion-parameter model on a CPU. llama.cpp's own tools keep such a
state for the same reason (the server's ``--slot-save-path``, the CLI's ``--prompt-cache``).

So the first time a backend evaluates a prompt head of at least :data:`MIN_TOKENS` tokens
it evaluates the head alone, then keeps the head's KV cells (llama.cpp's per-sequence
state, no logits) in the user cache; a later backend whose context holds nothing of that
head restores the cells instead of evaluating them. The rest of the prompt is evaluated
as before. A split of a prompt into batches of two or more tokens gives bit-identical
results (see :mod:`curator.llm.llama_cpp_backend`), and the cells restored are the very
values computed, so scores and generations are the same to the last bit with or without
a kept state (``tests/llm/test_prompt_states.py``).

A state is only valid for the computation that made it, so its key is everything that
decides the values: the model file's SHA-256, the head's tokens, llama-cpp-python's
version, the CPU features llama.cpp was built for and the context settings that change
the arithmetic (context size, GPU layers, flash attention, batch size). The files are signed like
every derived file (:mod:`curator.core.derived_cache`): llama.cpp trusts the bytes it is
handed, so a damaged or foreign file is never passed to it, and a signed file llama.cpp
still refuses is dropped and the head evaluated. At most :data:`KEEP` states, together
below :data:`TOTAL_BYTES`, are kept (the least recently used go first), none larger than
:data:`MAX_BYTES`. A missing, stale or unwritable cache costs only the time it saves.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import time
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from curator.core import derived_cache

__all__ = ["KEEP", "MAX_BYTES", "MIN_TOKENS", "TOTAL_BYTES", "PromptStates"]

MIN_TOKENS: Final = 64
"""Shorter heads are not kept: evaluating them costs less than reading a file."""
KEEP: Final = 32
"""States kept per cache folder; the least recently used beyond it are deleted. One
person's work alone uses about ten heads (classify's; extract, refine and importance for
each category distilled; the guard's opinion), more with a second identity or model: at
8 the heads evicted each other and every new process evaluated some again (the test
suite, 14 heads and more in one cache, ended each run with exactly 8 kept). The size
bound (:data:`TOTAL_BYTES`) is what limits a large model's states."""
MAX_BYTES: Final = 512 * 1024 * 1024
"""A larger state (a long head on a large model) is not kept."""
TOTAL_BYTES: Final = 1024 * 1024 * 1024
"""The states kept together stay below this (the least recently used go first)."""
_PREFIX: Final = "prompt-state-"
_SUFFIX: Final = ".bin"
_FORMAT: Final = b"curator prompt state 1"
_OVERHEAD: Final = 1024
"""More than a signed file's header and signature take beside the state."""
_PART_AGE_S: Final = 3600.0
"""A part file this old was left by a writer that was killed: no write takes so long."""


class PromptStates:
    """Keeps and restores the KV cells of prompt heads for one loaded ``Llama``.

    ``model_digest()`` gives the model file's SHA-256; called only when a state is first
    looked up or kept (hashing a large model file the first time costs seconds).
    """

    def __init__(self, llm: Any, model_digest: Any, settings: Sequence[object]) -> None:
        self._llm = llm
        self._digest = model_digest
        self._settings = repr(tuple(settings)).encode("utf-8")
        self._base: bytes | None = None
        self.restored = 0
        """Heads restored from the cache so far (tests and traces)."""

    def _key(self, tokens: Sequence[int]) -> bytes:
        if self._base is None:
            import llama_cpp

            self._base = hashlib.sha256(
                b"\0".join(
                    (
                        _FORMAT,
                        str(self._digest()).encode("ascii"),
                        llama_cpp.__version__.encode("ascii"),
                        llama_cpp.llama_print_system_info(),
                        platform.machine().encode("ascii"),
                        self._settings,
                    )
                )
            ).digest()
        body = np.asarray(tokens, dtype=np.int64).tobytes()
        return hashlib.sha256(self._base + body).digest()

    @staticmethod
    def _name(key: bytes) -> str:
        return f"{_PREFIX}{key[:16].hex()}{_SUFFIX}"

    def restore(self, tokens: Sequence[int]) -> bool:
        """Make the context hold exactly ``tokens`` from a kept state; False when there is
        none (or llama.cpp refused it: the context is then left empty)."""
        key = self._key(tokens)
        name = self._name(key)
        body = derived_cache.load(name, key, MAX_BYTES + _OVERHEAD)
        if body is None:
            return False
        import llama_cpp

        llm = self._llm
        llm._ctx.kv_cache_clear()
        buffer = (ctypes.c_uint8 * len(body)).from_buffer_copy(body)
        read = llama_cpp.llama_state_seq_set_data(llm.ctx, buffer, len(body), 0)
        if read != len(body):
            llm._ctx.kv_cache_clear()
            llm.n_tokens = 0
            _forget(name)
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        self.restored += 1
        with contextlib.suppress(OSError):
            os.utime(derived_cache.cache_dir() / name)  # recently used: kept longest
        return True

    def keep(self, tokens: Sequence[int]) -> None:
        """Keep the context's cells for ``tokens`` (which it must hold exactly)."""
        import llama_cpp

        llm = self._llm
        size = int(llama_cpp.llama_state_seq_get_size(llm.ctx, 0))
        if size <= 0 or size > MAX_BYTES:
            return
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_seq_get_data(llm.ctx, buffer, size, 0))
        if written <= 0:
            return
        key = self._key(tokens)
        derived_cache.store(self._name(key), key, bytes(buffer)[:written])
        _evict()


def _forget(name: str) -> None:
    with contextlib.suppress(OSError):
        (derived_cache.cache_dir() / name).unlink()


def _evict() -> None:
    """Delete the least recently used states beyond :data:`KEEP` or :data:`TOTAL_BYTES`,
    and the part files of writers killed before they finished."""
    folder = derived_cache.cache_dir()
    found: list[tuple[float, int, str]] = []
    stale = time.time() - _PART_AGE_S
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("." + _PREFIX) and entry.name.endswith(".part"):
                # left by a writer killed while it wrote (store removes its own)
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < stale:
                        _forget(entry.name)
            elif entry.name.startswith(_PREFIX) and entry.name.endswith(_SUFFIX):
                with contextlib.suppress(OSError):
                    status = entry.stat()
                    found.append((status.st_mtime, status.st_size, entry.name))
    found.sort(reverse=True)
    total = 0
    for count, (_, size, name) in enumerate(found):
        total += size
        if count >= KEEP or total > TOTAL_BYTES:
            _forget(name)
