"""The Episodes pane's detail panel: one episode as HTML, speakers coloured, matches marked.

Apart from :mod:`curator.gui.episodes_pane` so the pane keeps to its filters, selection
and relabelling. The colours come from the palette (readable in dark mode) and a search's
matches are found with the search's own matching (:func:`highlight_spans`), so what the
panel marks is what made the episode match.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtGui import QColor, QPalette

from curator.gui.episode_model import format_time, label_in_force, model_label_text
from curator.store.episode_queries import EpisodeDetail, highlight_spans


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
