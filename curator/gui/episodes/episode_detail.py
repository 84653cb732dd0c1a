"""The Episodes pane's detail panel: one episode as HTML, speakers coloured, matches marked.

Apart from :mod:`curator.gui.episodes.episodes_pane` so the pane keeps to its filters, selection
and relabelling. The episode is read in the background (:class:`DetailReader`): on the
GUI thread a read waits on any writer (the command line, a backup) with the window frozen.
The colours come from the palette (readable in dark mode) and a search's matches are found
with the search's own matching (:func:`highlight_spans`), so what the panel marks is what
made the episode match.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QTextEdit

from curator.chat_formats.common import describe_import
from curator.core.wording import plural
from curator.gui.episodes.episode_model import format_time, label_in_force, model_label_text
from curator.gui.episodes.label_source import label_decision_rows
from curator.gui.runtime.operations import StoreOps
from curator.store.db import Store
from curator.store.episode_queries import EpisodeDetail, fetch_detail, highlight_spans


def role_colors(palette: QPalette) -> dict[str, QColor]:
    """Speaker colors derived from the palette, so they stay readable in dark mode."""
    dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
    return {
        "user": QColor("#6cb4ff" if dark else "#0b5cad"),
        "assistant": QColor("#7fd48a" if dark else "#1d7a30"),
        "system": palette.color(QPalette.ColorRole.PlaceholderText),
        "tool": QColor("#e0b35c" if dark else "#8a5a00"),
    }


MATCH_STYLE = "background-color:#ffe066;color:#000000"
"""How a search match is marked in the detail panel."""


def marked(text: str, query: str) -> str:
    """``text`` as HTML with the search's matches of ``query`` highlighted."""
    parts: list[str] = []
    done = 0
    for start, end in highlight_spans(text, query):
        parts.append(html.escape(text[done:start]))
        parts.append(f"<span style='{MATCH_STYLE}'>{html.escape(text[start:end])}</span>")
        done = end
    parts.append(html.escape(text[done:]))
    return "".join(parts)


def render_detail(
    detail: EpisodeDetail,
    palette: QPalette,
    query: str = "",
    extra: Sequence[tuple[str, str]] = (),
) -> str:
    """HTML for the side panel: metadata, then the messages by speaker (or the plain text).

    Matches of the search ``query`` are highlighted (the same matching as the search);
    ``extra`` rows go under the labels (the source that decided the label).
    """
    row = detail.row
    colors = role_colors(palette)
    meta = [
        ("Time", format_time(row.timestamp)),
        ("Source", row.source or "—"),
        ("Label in force", label_in_force(row)),
        ("Model label", model_label_text(row)),
        ("Human label", row.human_label or "—"),
        *extra,
        ("Distilled", "yes" if row.distilled else "no"),
    ]
    if detail.imported is not None:
        meta.append(("Imported from", describe_import(detail.imported)))
    if detail.classify_truncated:
        meta.append(("Note", "text was truncated for classification"))
    parts = ["<table cellspacing='0' cellpadding='2'>"]
    for name, value in meta:
        parts.append(f"<tr><td><b>{name}</b></td><td>{html.escape(value)}</td></tr>")
    parts.append("</table><hr/>")
    if detail.messages:
        for message in detail.messages:
            role = str(message.get("role", ""))
            who = message.get("name")
            speaker = f"{role} ({who})" if who else role
            color: str = colors.get(role, palette.color(QPalette.ColorRole.Text)).name()
            content = marked(str(message.get("content", "")), query).replace("\n", "<br/>")
            parts.append(
                f"<p><b style='color:{color}'>{html.escape(speaker)}</b><br/>{content}</p>"
            )
    else:
        parts.append("<p style='white-space:pre-wrap'>" + marked(detail.text, query) + "</p>")
    return "".join(parts)


DETAIL_KEY = "episodeDetail"
"""The detail panel's read key: a newer selection's read supersedes an older one."""

READING = "Reading…"
"""What the detail panel says while a newly selected episode is read."""

Detail = tuple[EpisodeDetail, list[tuple[str, str]]]


def read_detail(store: Store, episode_id: int) -> Detail | None:
    """One episode and the rows naming what decided its label (on a worker thread)."""
    detail = fetch_detail(store, episode_id)
    if detail is None:
        return None
    return detail, label_decision_rows(store, episode_id)


class DetailReader:
    """Shows the selection in ``view``, reading one episode through ``ops.query``.

    A newly selected episode shows :data:`READING` until its answer comes; the episode
    already shown, read again (after a reload or a relabel), keeps its text meanwhile
    instead of flickering. An answer for a selection that changed meanwhile is dropped:
    the read runs on a worker thread, and the person may click on faster than it.
    ``query_text`` gives the search whose matches are marked when the answer is shown.
    """

    def __init__(self, view: QTextEdit, ops: StoreOps, query_text: Callable[[], str]) -> None:
        self.view = view
        self.ops = ops
        self.query_text = query_text
        self._waiting: int | None = None  # the episode being read
        self._shown: int | None = None  # the episode whose detail the view shows

    @property
    def loading(self) -> bool:
        """An episode was asked for and its answer has not arrived yet."""
        return self._waiting is not None

    def show(self, ids: list[int], count: int) -> None:
        """Show ``ids`` (the selection; ``count`` rows in all): one is read, more are
        counted, none clears the panel."""
        if count != 1 or len(ids) != 1:
            self._waiting = self._shown = None
            self.view.setHtml(
                "" if not count else f"<p><i>{plural(count, 'episode')} selected.</i></p>"
            )
            return
        (episode_id,) = ids
        if episode_id != self._shown:
            self._shown = None
            self.view.setHtml(f"<p><i>{READING}</i></p>")
        self._waiting = episode_id
        self.ops.query(
            DETAIL_KEY,
            lambda ctx: read_detail(ctx.store, episode_id),
            lambda found: self._read(episode_id, found),
            lambda message: self._failed(episode_id, message),
        )

    def _read(self, episode_id: int, found: Detail | None) -> None:
        if self._waiting != episode_id:
            return  # stale: the selection changed while it was read
        self._waiting = None
        if found is None:
            self._shown = None
            self.view.setHtml("<p><i>This episode was deleted.</i></p>")
            return
        detail, decided = found
        self._shown = episode_id
        self.view.setHtml(render_detail(detail, self.view.palette(), self.query_text(), decided))

    def _failed(self, episode_id: int, message: str) -> None:
        if self._waiting != episode_id:
            return
        self._waiting = self._shown = None
        said = html.escape(f"This episode could not be read: {message}")
        self.view.setHtml(f"<p><i>{said}</i></p>")
