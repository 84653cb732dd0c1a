"""Evaluating a prompt in pieces short enough that a cancel is seen within a second.

A cancel can only be seen between two ``llama_decode`` calls, so the time one piece of
the prompt takes is the cancel's latency. A fixed piece size cannot bound it: 128 tokens
of the demo model took 0.1 s on an idle machine and 4.6-6.4 s on a busy two-core one
(where a cancel then took 2.5 s in the median, 7.5 s at worst). :class:`PieceTimer`
measures what each piece cost on this machine, for this model, and sizes the next one so
that it takes about :data:`CANCEL_PIECE_S`: large pieces where the machine is fast (few
checks, full batch efficiency), small ones where it is slow.

The pieces never change a result: they cut the batches ``Llama.generate`` (and so a
llama-cpp-python server) evaluates, ``n_batch`` tokens each from the first token not
reused, and never into a piece of one token (llama.cpp computes a batch of one token by
another path; see :mod:`curator.llm.llama_cpp_backend`). Any split into pieces of two or
more tokens gives bit-identical logits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from curator.llm.backend import StopCheck

CANCEL_PIECE_S = 0.2
"""Seconds one piece of prompt evaluation aims at (the cancel latency it allows)."""
FIRST_PIECE = 16
"""Tokens of the first piece, before anything was measured (a fraction of a second on
the slowest machine measured: 36 ms a token)."""
MIN_PIECE = 16
"""The smallest piece. Smaller pieces would bound a cancel tighter but cost throughput
on a busy machine, where every piece pays llama.cpp's fixed cost per batch and the
measured pace then shrinks the pieces further; 16 tokens take at most about 0.6 s on the
slowest machine measured (36 ms a token), within the one-second cancel."""


def next_cut(
    pos: int, start: int, end: int, n_batch: int, size: int, *, lone_end: bool = True
) -> int:
    """Where the piece that begins at ``pos`` ends, for tokens ``start:end``.

    At most ``size`` tokens (at least :data:`MIN_PIECE`), never across the end of one of
    ``Llama.generate``'s ``n_batch`` batches counted from ``start``, and never leaving a
    piece of one token before such an end (it joins this piece). A batch of the server's
    own of one token stays one token: the server evaluates it so; with ``lone_end``
    False it does not either (it joins this piece, or this piece leaves it a second
    token where it is a whole ``n_batch`` already).
    """
    batch_end = min(end, start + ((pos - start) // n_batch + 1) * n_batch)
    cut = min(pos + max(MIN_PIECE, size), batch_end)
    if batch_end - cut == 1:
        cut = batch_end
    if not lone_end and end - cut == 1:
        cut = end if cut - pos < n_batch else cut - 1
    return cut


def batch_bounds(start: int, end: int, n_batch: int, step: int) -> list[tuple[int, int]]:
    """The pieces that evaluate tokens ``start:end`` with pieces of ``step`` tokens (see
    :func:`next_cut`)."""
    bounds: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        cut = next_cut(pos, start, end, n_batch, step)
        bounds.append((pos, cut))
        pos = cut
    return bounds


class PieceTimer:
    """The measured cost of a prompt token, and the piece size that keeps a piece near
    ``target_s``.

    A slower piece takes effect at once (the machine just got busy, or the context grew
    and attention costs more a token); a faster one only halfway, so one lucky piece
    does not make the next one too long.
    """

    def __init__(self, target_s: float = CANCEL_PIECE_S) -> None:
        self.target_s = target_s
        self.per_token_s: float | None = None

    def size(self, n_batch: int) -> int:
        """Tokens for the next piece: at most ``n_batch``, at least :data:`MIN_PIECE`."""
        if self.per_token_s is None:
            return max(MIN_PIECE, min(FIRST_PIECE, n_batch))
        if self.per_token_s * n_batch <= self.target_s:  # no division: 1e-308 a token
            return max(MIN_PIECE, n_batch)
        return max(MIN_PIECE, int(self.target_s / self.per_token_s))

    def record(self, tokens: int, seconds: float) -> None:
        """What one piece of ``tokens`` tokens cost."""
        if tokens < 1 or not seconds >= 0:
            return
        rate = seconds / tokens
        old = self.per_token_s
        self.per_token_s = rate if old is None or rate >= old else (old + rate) / 2


def evaluate_pieces(
    tokens: Sequence[int],
    start: int,
    n_batch: int,
    timer: PieceTimer | None,
    evaluate: Callable[[Sequence[int]], None],
    decode_last: Callable[[list[int]], None],
    should_stop: StopCheck | None,
    *,
    lone: bool | None = None,
) -> bool:
    """Evaluate ``tokens[start:]`` piece by piece, checking ``should_stop`` before each.

    ``evaluate`` runs one piece, ``decode_last`` the last one (whose logits are kept).
    Without a ``timer`` (nobody can cancel) the pieces are whole ``n_batch`` batches.
    ``lone`` None: the batches of ``Llama.generate`` from ``start`` (its last token alone
    when they leave it alone); False: no piece of one token (at least two tokens to
    evaluate); True: none but the last token, evaluated alone (at least three). A
    prompt evaluated in two parts (a kept head, then the rest) so has exactly the one
    batch of one token it has when evaluated whole.
    Returns False when ``should_stop`` turned true (the context then holds the pieces
    evaluated so far), True when the whole prompt was evaluated.
    """
    end = len(tokens)
    split = end - 1 if lone else end
    pos = start
    while pos < end:
        if should_stop is not None and should_stop():
            return False
        size = n_batch if timer is None else timer.size(n_batch)
        if pos >= split:
            cut = end
        else:
            cut = next_cut(pos, start, split, n_batch, size, lone_end=lone is None)
        began = time.perf_counter()
        if cut == end:
            decode_last(list(tokens[pos:end]))
        else:
            evaluate(tokens[pos:cut])
        if timer is not None:
            timer.record(cut - pos, time.perf_counter() - began)
        pos = cut
    return True
