"""Pieces of the Insights pane: the table columns and view helpers.

Kept apart from :mod:`curator.gui.insights.insights_pane` so the pane module is only its layout
and its reactions; nothing here computes a figure.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from curator.core.forecast import ForecastPattern
from curator.gui.insights.confusion_model import ConfusionModel
from curator.gui.insights.insights_charts import ForecastChart
from curator.gui.widgets.qt_models import FIT_ROWS, Column
from curator.pipeline.insights import Override


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


OVERRIDE_COLUMNS: list[Column[Override]] = [
    Column("Candidate", lambda o: o.candidate_id, align_right=True),
    Column("Run", lambda o: o.run_id, align_right=True),
    Column("Gate", lambda o: o.proposed),
    Column("Human", lambda o: o.human),
    Column("Ratio", lambda o: o.ratio, display=lambda o: f"{o.ratio:.3f}", align_right=True),
    Column("Text", lambda o: o.text, tooltip=lambda o: o.text),
]

ForecastRow = tuple[ForecastPattern, ForecastPattern]  # (keep clock, refresh clock)

FORECAST_COLUMNS: list[Column[ForecastRow]] = [
    Column("Rank", lambda r: r[0].rank, align_right=True),
    Column("Pattern", lambda r: r[0].id, align_right=True),
    Column("In prompt", lambda r: r[0].in_prompt, display=lambda r: "★" if r[0].in_prompt else ""),
    Column(
        "Now",
        lambda r: r[0].effective_now,
        display=lambda r: f"{r[0].effective_now:.3f}",
        align_right=True,
    ),
    Column(
        "Below floor",
        lambda r: r[0].below_floor,
        display=lambda r: ForecastChart.date(r[0].below_floor),
    ),
    Column(
        "Outranked", lambda r: r[0].outranked, display=lambda r: ForecastChart.date(r[0].outranked)
    ),
    Column(
        "Below floor (refresh)",
        lambda r: r[1].below_floor,
        display=lambda r: ForecastChart.date(r[1].below_floor),
    ),
    Column(
        "Outranked (refresh)",
        lambda r: r[1].outranked,
        display=lambda r: ForecastChart.date(r[1].outranked),
    ),
    Column("Text", lambda r: r[0].text, tooltip=lambda r: r[0].text),
]


def table_view(model: Any, name: str) -> QTableView:
    view = QTableView()
    view.setObjectName(name)
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setWordWrap(False)
    view.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)  # not one row per pattern
    return view


def matrix_view(model: ConfusionModel, name: str) -> QTableView:
    """A matrix whose rows and columns share the space (no empty area under it)."""
    view = table_view(model, name)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    view.setMaximumHeight(220)
    return view


def by_id(
    items: tuple[ForecastPattern, ...], order: tuple[ForecastPattern, ...]
) -> list[ForecastPattern]:
    """``items`` in the order of ``order`` (the refresh forecast ranks differently)."""
    found = {p.id: p for p in items}
    return [found[p.id] for p in order]
