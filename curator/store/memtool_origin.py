"""Where an item imported from another memory tool came from: its original ids and dates.

A person leaving Mem0 or Letta reviews what comes in against what the tool held: which
memory this was, when that tool wrote it, which core-memory block line. So each item
read by :mod:`curator.store.memtool_formats` carries an *origin*, a small JSON object
stored on its staged candidate (``Candidate.origin``) and shown by the review (the
window's detail panel, ``curator review RUN`` and its ``--json``):

* Mem0 / OpenMemory: ``{"tool": "mem0" | "openmemory", "id", "created_at", "updated_at"}``
* a Letta core-memory block line: ``{"tool": "letta", "block", "block_id", "line"}``
* a Letta archival passage: ``{"tool": "letta", "passage_id", "created_at"}``

Values are kept as the file wrote them (a date is the original string, not our
rewriting of it); a key the file did not have (or had as something else than a string
or a number) is left out, and a value is cut at :data:`MAX_VALUE_CHARS`, so a hostile
id cannot fill the review.
"""

from __future__ import annotations

from typing import Any

from curator.core.textsafety import escape_controls

MAX_VALUE_CHARS = 200
"""The longest id or date kept (real ones are UUIDs and ISO dates, under 40)."""

_TOOLS = {"mem0": "Mem0", "openmemory": "OpenMemory", "letta": "Letta"}


def origin(tool: str, **values: Any) -> dict[str, Any]:
    """The origin of one item: ``tool`` and each value that is a string or a number."""
    found: dict[str, Any] = {"tool": tool}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        if isinstance(value, str):
            if not value:
                continue
            value = value[:MAX_VALUE_CHARS]
        found[key] = value
    return found


def describe_origin(found: dict[str, Any] | None) -> str:
    """One line for the reviewer, e.g. ``Mem0 memory 5f2b…, created 2024-07-20T10:15:00Z``;
    empty for None (an item of our own format, or a plain list of strings)."""
    if not found:
        return ""
    tool = _TOOLS.get(str(found.get("tool")), str(found.get("tool", "another tool")))

    def shown(key: str) -> str:
        return " ".join(escape_controls(str(found[key])).split())  # one line, shown not obeyed

    if "block" in found or "block_id" in found:
        text = f"{tool} core-memory block {shown('block')!r}" if "block" in found else tool
        if "block_id" in found:
            text += f" ({shown('block_id')})"
        if "line" in found:
            text += f", line {shown('line')}"
    elif "passage_id" in found or tool == "Letta":
        text = f"{tool} archival passage"
        if "passage_id" in found:
            text += f" {shown('passage_id')}"
    else:
        text = f"{tool} memory"
        if "id" in found:
            text += f" {shown('id')}"
    for key, word in (("created_at", "created"), ("updated_at", "updated")):
        if key in found:
            text += f", {word} {shown(key)}"
    return text
