"""The decay chart's samples: each pattern's effective importance at evenly spaced times.

Numbers only (NumPy over :mod:`curator.core.scoring`), apart from the widget that draws
them, so that the chart shows exactly what the prompt builder computes and a test can check
the samples without a plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from curator.core.scoring import decay_matrix, decay_series

FloatArray = npt.NDArray[np.float64]


def rows_of(arrays: Sequence[FloatArray]) -> FloatArray:
    """One row per array, NaN after the end of a shorter one (shape (0, 0): none)."""
    if not len(arrays):
        return np.empty((0, 0))
    widths = {len(a) for a in arrays}
    if len(widths) == 1:  # the grey curves of the Knowledge pane: all of one length
        return np.vstack(arrays).astype(float, copy=False)
    width = max(widths)
    matrix = np.full((len(arrays), width), np.nan)
    for row, values in enumerate(arrays):
        matrix[row, : len(values)] = values
    return matrix


def interpolated(
    xs: FloatArray, ys: FloatArray, x: float
) -> tuple[npt.NDArray[np.intp], FloatArray] | None:
    """The rows whose span holds ``x`` and their values there, linearly interpolated
    (each row's x increasing, NaN after its end): ``np.interp`` of every row at once."""
    if xs.size == 0:
        return None
    ends = (~np.isnan(xs)).sum(axis=1) - 1  # each row's last point (-1: an empty row)
    lasts = xs[np.arange(len(xs)), np.maximum(ends, 0)]
    with np.errstate(invalid="ignore"):  # an empty row's NaN compares false: left out
        rows = np.flatnonzero((ends >= 0) & (xs[:, 0] <= x) & (x <= lasts))
    if rows.size == 0:
        return None
    span_x, span_y = xs[rows], ys[rows]
    with np.errstate(invalid="ignore"):
        right = np.minimum((span_x <= x).sum(axis=1), ends[rows])  # the first point past x
    left = np.maximum(right - 1, 0)
    pick = np.arange(len(rows))
    x0, x1 = span_x[pick, left], span_x[pick, right]
    y0, y1 = span_y[pick, left], span_y[pick, right]
    width = x1 - x0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        share = np.where(width > 0, (x - x0) / width, 1.0)
        values = np.where(x >= x1, y1, y0 + share * (y1 - y0))
    return rows, values


def decay_curves(
    importances: Sequence[float],
    distilled_at: Sequence[datetime],
    now: datetime,
    until: datetime,
    rate: float,
    points: int,
) -> tuple[FloatArray, FloatArray]:
    """:func:`decay_curve` of many patterns at once, a row each (x, y): one matrix of
    :func:`curator.core.scoring.decay_matrix`, where a call per pattern cost 1,051 loops
    in Python on a Ctrl+A."""
    firsts = np.array([when.timestamp() for when in distilled_at], dtype=np.float64)
    ends = np.maximum(until.timestamp(), firsts + 1.0)
    steps = np.linspace(0.0, 1.0, points)
    xs = firsts[:, None] + (ends - firsts)[:, None] * steps[None, :]
    offsets = (xs - now.timestamp()) / 86400.0
    ys = decay_matrix(importances, list(distilled_at), offsets, now=now, rate=rate)
    return xs, np.asarray(ys, dtype=np.float64)


def decay_curve(
    importance: float,
    distilled_at: datetime,
    now: datetime,
    until: datetime,
    rate: float,
    points: int = 120,
    start: datetime | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Sampled effective importance from the distillation (or ``start``) to ``until``.

    The values come from :func:`curator.core.scoring.decay_series`, so the chart shows
    exactly what the prompt builder computes.
    """
    first = distilled_at.timestamp() if start is None else start.timestamp()
    end = max(until.timestamp(), first + 1.0)
    xs = np.linspace(first, end, points)
    offsets = (xs - now.timestamp()) / 86400.0
    ys = decay_series(importance, distilled_at, offsets, now=now, rate=rate)
    return xs, np.asarray(ys, dtype=np.float64)
