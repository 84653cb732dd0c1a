"""Progress reporting and cancellation shared by the CLI and the desktop worker.

Modelled on Orange3's ``TaskState``: the work function receives one object through which
it reports progress and streamed tokens and learns that it should stop. The object is
pure Python (no Qt) so the same pipeline code runs under the CLI and on the GUI's worker
thread; the GUI forwards the callbacks as signals, the CLI draws a text bar.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from curator.llm.backend import GenerationRate

__all__ = ["Cancelled", "GenerationRate", "Progress", "TaskState", "speed_text"]


@dataclass(frozen=True)
class Progress:
    """One progress report: ``done`` of ``total`` items of ``step``, and the current speed."""

    step: str
    done: int
    total: int
    tokens_per_s: float = 0.0
    """Generation speed of the current model call (:class:`GenerationRate`); 0 when unknown."""
    message: str = ""
    within: float = 0.0
    """How far into the current item (the ``done + 1``-th), in [0, 1): an item that takes
    minutes (a distill batch: three generating calls) still moves the bar per step and
    per token instead of sitting at the same count."""
    prompt_tokens_per_s: float = 0.0
    """Prompt evaluation speed (prompt tokens evaluated / evaluation seconds), for steps
    that generate nothing (classification scores labels from one evaluation)."""

    @property
    def fraction(self) -> float:
        """Share done in [0, 1], the current item's part included (1.0 when nothing to do)."""
        if self.total <= 0:
            return 1.0
        within = min(max(self.within, 0.0), 1.0)
        return min(1.0, max(0.0, (self.done + within) / self.total))


def _shown(value: float, digits: int) -> str:
    """``value`` rounded, or "" when it is not a positive finite figure once rounded."""
    if not math.isfinite(value) or round(value, digits) <= 0:
        return ""
    return f"{value:.{digits}f}"


def speed_text(progress: Progress) -> str:
    """The speed as the CLI and the window show it, or "" when there is none to show.

    "12.3 tokens/s" is always generation (:class:`GenerationRate`), never a figure from
    zero generated tokens; a step that only evaluates prompts says "140 prompt tokens/s".
    """
    generated = _shown(progress.tokens_per_s, 1)
    if generated:
        return f"{generated} tokens/s"
    prompt = _shown(progress.prompt_tokens_per_s, 0)
    return f"{prompt} prompt tokens/s" if prompt else ""


class Cancelled(Exception):
    """Raised inside a work function when it sees the cancel flag.

    The pipeline catches it at the top, marks the run ``cancelled`` and returns normally,
    so callers see a result, not an exception.
    """


class TaskState:
    """The channel between a running pipeline step and whoever started it.

    ``cancel()`` may be called from any thread (it only sets a ``threading.Event``); the
    callbacks run on the thread doing the work, so a GUI must marshal them to its own
    thread (queued signals) and a callback must never block for long: generation waits
    for it between tokens.
    """

    def __init__(
        self,
        on_progress: Callable[[Progress], None] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> None:
        self._on_progress = on_progress
        self._on_token = on_token
        self._cancel = threading.Event()
        self.last: Progress | None = None
        self.tick: Callable[[], None] | None = None
        """Called on every report and check by the working thread (the run's heartbeat)."""

    def cancel(self) -> None:
        """Ask the work to stop; it stops within one generated token."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` if cancellation was requested (between items)."""
        if self.tick is not None:
            self.tick()
        if self._cancel.is_set():
            raise Cancelled("cancelled")

    def report(self, progress: Progress) -> None:
        self.last = progress
        if self.tick is not None:
            self.tick()
        if self._on_progress is not None:
            self._on_progress(progress)

    def token(self, text: str) -> None:
        """Forward a piece of streamed output of the current step."""
        if self._on_token is not None and text:
            self._on_token(text)
