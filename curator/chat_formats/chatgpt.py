"""ChatGPT data export: ``conversations.json``.

The file is an array of conversations. Each holds a tree of nodes (``mapping``: node id →
``{"message", "parent", "children"}``), because every edit of a prompt and every
regeneration of an answer starts a new branch. The conversation the person last saw is
the branch that ends at ``current_node``: it is read from there up through ``parent`` to
the root and then put in order. The other branches (abandoned regenerations and edits)
are not part of the conversation and are not read.

Read: the role (``author.role``; ``author.name`` for tools), ``create_time`` (seconds since
1970), the text parts of ``content.parts`` and the text of ``code`` and
``execution_output`` content. Left out, and counted: messages with no text (an empty
system prompt, a hidden context message), empty conversations, and non-text content,
which is named in the message instead (``[image]``, ``[non-text content:
tether_browsing_display]``) so a reader sees that something was there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from curator.chat_formats.common import (
    BadElement,
    BadExport,
    ChatMessage,
    Conversation,
    ElementError,
    Skipped,
    clean,
    epoch_time,
    finished,
    ident,
    looks_like_most,
    read_messages,
    type_name,
)

NAME = "chatgpt"
DEFAULT_PER = "conversation"
_TEXT_FIELD = {"code": "text", "execution_output": "text", "tether_quote": "text"}


def looks_like(value: Any) -> bool:
    """An array at least half of whose first objects have ``mapping`` and ``current_node``:
    one damaged conversation at the start does not make the whole export a file of
    episodes, and one episode holding those keys does not make a file of episodes an
    export."""
    return looks_like_most(value, lambda v: "mapping" in v and "current_node" in v)


def conversations(value: Any, file: str, skipped: Skipped) -> Iterator[Conversation | ElementError]:
    if not isinstance(value, list):
        raise BadExport(f"a ChatGPT export is an array of conversations, not {type_name(value)}")
    for number, item in enumerate(value, 1):
        where = f"conversation {number}"
        try:
            conversation, nodes = _conversation(item, number, where)
        except BadElement as exc:
            yield ElementError(file, number, f"{where}: {exc}")
            continue
        # A bad message is an error at its place; the rest of the branch is still read.
        yield from read_messages(
            conversation,
            nodes,
            lambda node, position, counted: _message(node[1], node[0], position, counted),
            file,
            number,
            prefix=f"{where}, ",
            skipped=skipped,
        )
        yield from finished(conversation, skipped, "empty conversations")


def branch(mapping: dict[str, Any], current: str) -> list[str]:
    """Node ids from the root down to ``current`` (:class:`BadElement` on a broken tree)."""
    path: list[str] = []
    seen: set[str] = set()
    node_id: Any = current
    while node_id is not None:
        if not isinstance(node_id, str):
            raise BadElement(f"a 'parent' must be a node id string, not {type_name(node_id)}")
        if node_id in seen:
            raise BadElement(f"the branch to 'current_node' loops at node {node_id[:40]!r}")
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            raise BadElement(f"node {node_id[:40]!r} on the branch to 'current_node' is missing")
        seen.add(node_id)
        path.append(node_id)
        node_id = node.get("parent")
    path.reverse()
    return path


def _conversation(item: Any, number: int, where: str) -> tuple[Conversation, list[tuple[str, Any]]]:
    """The conversation (no messages yet) and its branch's messages, as (node id, message)."""
    if not isinstance(item, dict):
        raise BadElement(f"must be an object, not {type_name(item)}")
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        raise BadElement(f"'mapping' must be an object, not {type_name(mapping)}")
    current = item.get("current_node")
    if current is None and not mapping:
        return Conversation(number, ident(item.get("id")), "", where=where), []
    if not isinstance(current, str):
        raise BadElement(f"'current_node' must be a node id string, not {type_name(current)}")
    title = item.get("title")
    title = clean(title.strip(), "the title") if isinstance(title, str) else ""
    conv_id = ident(item.get("conversation_id", item.get("id")))
    conversation = Conversation(number, conv_id, title or f"ChatGPT {conv_id}".strip(), where=where)
    # messages are numbered along the branch, from the root; the root holds none
    nodes = [(node_id, mapping[node_id].get("message")) for node_id in branch(mapping, current)]
    return conversation, [(node_id, message) for node_id, message in nodes if message is not None]


def _message(message: Any, node_id: str, position: str, skipped: Skipped) -> ChatMessage | None:
    if not isinstance(message, dict):
        raise BadElement(f"'message' must be an object, not {type_name(message)}")
    author = message.get("author")
    if not isinstance(author, dict) or not isinstance(author.get("role"), str):
        raise BadElement("'author' must be an object with a 'role' string")
    role = clean(author["role"].strip() or "unknown", "the role")
    name = author.get("name")
    name = clean(name, "the author name") if isinstance(name, str) and name.strip() else None
    content = message.get("content")
    if not isinstance(content, dict):
        raise BadElement(f"'content' must be an object, not {type_name(content)}")
    text = clean(_text(content, skipped), "the message")
    if not text.strip():
        skipped["messages without text"] += 1
        return None
    return ChatMessage(
        id=ident(message.get("id")) or node_id,
        role=role,
        content=text,
        name=name,
        timestamp=epoch_time(message.get("create_time"), "create_time"),
        position=position,
    )


def _text(content: dict[str, Any], skipped: Skipped) -> str:
    kind = content.get("content_type")
    if not isinstance(kind, str):
        raise BadElement(f"'content_type' must be a string, not {type_name(kind)}")
    if kind in _TEXT_FIELD and isinstance(content.get(_TEXT_FIELD[kind]), str):
        return str(content[_TEXT_FIELD[kind]])
    parts = content.get("parts")
    if kind in ("text", "multimodal_text") and isinstance(parts, list):
        texts: list[str] = []
        for part in parts:
            if isinstance(part, str):
                if part:
                    texts.append(part)
            elif isinstance(part, dict):
                what = part.get("content_type")
                skipped["non-text parts (named)"] += 1
                label = "image" if what == "image_asset_pointer" else f"non-text part: {what}"
                texts.append(f"[{label}]")
            else:
                raise BadElement(f"a part must be a string or an object, not {type_name(part)}")
        return "\n".join(texts)
    if kind == "text":
        raise BadElement(f"'parts' must be an array, not {type_name(parts)}")
    skipped["non-text content (named)"] += 1
    return f"[non-text content: {kind}]"
