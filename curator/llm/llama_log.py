"""Where llama.cpp's own log goes: into memory, not onto the user's terminal.

llama.cpp logs every model load at length (the trial load of ``curator --check-model``
wrote 2,121 lines) and warns about things that are no news to us (the embedding
context's "model default pooling_type is [-1], but [1] was specified"). llama-cpp-python
filters its log with ``verbose=False``, but it numbers ggml's levels one off (its
"error" is ggml's warning), so warnings still reached stderr between the progress lines,
and its ``verbose=True`` prints everything.

So the project installs its own log callback, once per process, before the first model
is created (:func:`quiet_llama_cpp`): every message is kept in a bounded tail
(:meth:`LogSink.text`, for an error message that wants llama.cpp's reason) and none is
printed, with two exceptions:

* ``echo_errors``: error-level messages are copied to stderr as they come (to the
  stderr the process started with, even while llama-cpp-python points it at the null
  device). The model check child uses it, because a crash while loading kills it before
  it can report, and its parent then finds the reason in the child's stderr (which no
  user sees).
* ``CURATOR_DEBUG=1`` copies the whole log to stderr, as llama.cpp would print it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["KEEP_CHARS", "LogSink", "one_load_at_a_time", "quiet_llama_cpp", "silence"]

# ggml's enum ggml_log_level (ggml.h); llama-cpp-python's _logger.py has an older order.
NONE, DEBUG, INFO, WARN, ERROR, CONT = 0, 1, 2, 3, 4, 5

KEEP_CHARS = 20_000
"""How much of the most recent log is kept (a load's error lines come last)."""


class LogSink:
    """Receives llama.cpp's log messages; keeps the tail, echoes what it is told to.

    A ``CONT`` message continues the previous one and has its level. Thread-safe:
    llama.cpp may log from its worker threads.
    """

    def __init__(self, *, echo_errors: bool, echo_all: bool = False, stream_fd: int = 2) -> None:
        self.echo_errors = echo_errors
        self.echo_all = echo_all
        self.stream_fd = stream_fd
        self._tail = ""
        self._level = NONE
        self._lock = threading.Lock()

    def receive(self, level: int, data: bytes) -> None:
        with self._lock:
            if level != CONT:
                self._level = level
            self._tail = (self._tail + data.decode("utf-8", "replace"))[-KEEP_CHARS:]
            echo = self.echo_all or (self.echo_errors and self._level == ERROR)
        if echo and data:
            with contextlib.suppress(OSError):  # a closed stderr must not stop the model
                os.write(self.stream_fd, data)

    def text(self) -> str:
        """The most recent log (at most :data:`KEEP_CHARS` characters)."""
        with self._lock:
            return self._tail


_sink: LogSink | None = None
_callback: Any = None  # the ctypes function pointer: must live as long as the process
_SILENCE_LOCK = threading.Lock()
"""Taken to install the sink: threads that load their first models at once (the
window's jobs) must share one, not each install its own and leave the others deaf."""


def silence(*, echo_errors: bool = False) -> LogSink:
    """Route llama.cpp's log into one :class:`LogSink` for this process (idempotent).

    A later call only changes ``echo_errors``; the sink and its kept log stay.
    """
    import llama_cpp  # its import installs llama-cpp-python's callback: replace it after

    with _SILENCE_LOCK:
        return _installed(llama_cpp, echo_errors)


def _installed(llama_cpp: Any, echo_errors: bool) -> LogSink:
    """:func:`silence`'s work, under its lock."""
    global _sink, _callback
    if _sink is None:
        debug = os.environ.get("CURATOR_DEBUG", "") not in ("", "0")
        # A copy of stderr as it is now: llama-cpp-python points fd 2 at the null device
        # while it loads a model (verbose=False), exactly when a load error is logged.
        try:
            stream_fd = os.dup(2)
        except OSError:
            stream_fd = 2
        sink = LogSink(echo_errors=echo_errors, echo_all=debug, stream_fd=stream_fd)

        def forward(level: int, text: bytes | None, user_data: object) -> None:
            del user_data
            if text:
                sink.receive(int(level), bytes(text))

        _callback = llama_cpp.llama_log_callback(forward)
        llama_cpp.llama_log_set(_callback, None)
        _sink = sink
    _sink.echo_errors = echo_errors
    return _sink


_LOADING = threading.Lock()


@contextlib.contextmanager
def one_load_at_a_time() -> Iterator[None]:
    """Held while a ``llama_cpp.Llama`` is made. With ``verbose=False`` llama-cpp-python
    points file descriptors 1 and 2 at the null device while it loads a model and puts
    back the copies it took: two loads at once on two threads each took the other's null
    device for the original, and the process's stdout and stderr stayed on it for good
    (9 runs in 10 of two threads loading the demo model)."""
    with _LOADING:
        yield


def quiet_llama_cpp(*, echo_errors: bool = False) -> Any:
    """The ``llama_cpp`` module, with its log routed by :func:`silence`."""
    import llama_cpp

    silence(echo_errors=echo_errors)
    return llama_cpp
