"""Claude data export: ``conversations.json``.

An array of conversations, each ``{"uuid", "name", "created_at", "chat_messages": [...]}``;
a message is ``{"uuid", "sender": "human" | "assistant", "text", "created_at",
"content": [...], "attachments": [...], "files": [...]}``.

Read: the sender (``human`` becomes the role ``user``), ``created_at``, the message
``text`` (or, when it is empty, the ``text`` items of ``content``). Named in the message
and counted: attachments and files (``[attachment: notes.pdf]``; their extracted content
is left out) and non-text content items (``[non-text content: tool_use]``). Left out and
counted: empty conversations and messages with no text and nothing attached.
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
    finished,
    ident,
    iso_time,
    list_field,
    looks_like_most,
    read_messages,
    type_name,
)

NAME = "claude"
DEFAULT_PER = "conversation"
_ROLES = {"human": "user", "assistant": "assistant"}


def looks_like(value: Any) -> bool:
    """An array at least half of whose first objects have ``chat_messages`` and a ``uuid``:
    one damaged conversation at the start does not make the whole export a file of
    episodes, and one episode holding those keys does not make a file of episodes an
    export."""
    return looks_like_most(value, lambda v: "chat_messages" in v and "uuid" in v)


def conversations(value: Any, file: str, skipped: Skipped) -> Iterator[Conversation | ElementError]:
    if not isinstance(value, list):
        raise BadExport(f"a Claude export is an array of conversations, not {type_name(value)}")
    for number, item in enumerate(value, 1):
        where = f"conversation {number}"
        if not isinstance(item, dict):
            yield ElementError(file, number, f"{where}: must be an object, not {type_name(item)}")
            continue
        try:
            chat = item.get("chat_messages")
            if not isinstance(chat, list):
                raise BadElement(f"'chat_messages' must be an array, not {type_name(chat)}")
            conv_id = ident(item.get("uuid"))
            name = item.get("name")
            title = clean(name.strip(), "the name") if isinstance(name, str) else ""
        except BadElement as exc:
            yield ElementError(file, number, f"{where}: {exc}")
            continue
        conversation = Conversation(
            number, conv_id, title or f"Claude {conv_id}".strip(), where=where
        )
        yield from read_messages(
            conversation, chat, _message, file, number, f"{where}, ", skipped=skipped
        )
        yield from finished(conversation, skipped, "empty conversations")


def _message(message: Any, position: str, skipped: Skipped) -> ChatMessage | None:
    if not isinstance(message, dict):
        raise BadElement(f"must be an object, not {type_name(message)}")
    sender = message.get("sender")
    if not isinstance(sender, str) or not sender.strip():
        raise BadElement(f"'sender' must be a string, not {type_name(sender)}")
    text = message.get("text")
    if text is not None and not isinstance(text, str):
        raise BadElement(f"'text' must be a string, not {type_name(text)}")
    if text and text.strip():
        pieces = [text]
        _count_unread(message.get("content"), skipped)
    else:
        pieces = _content_texts(message.get("content"), skipped)
    for key in ("attachments", "files"):
        items = list_field(message, key)
        for attached in items:
            label = attached.get("file_name") if isinstance(attached, dict) else None
            pieces.append(f"[attachment: {label}]" if isinstance(label, str) else "[attachment]")
            skipped["attachments (named, content left out)"] += 1
    content = clean("\n".join(pieces), "the message")
    if not content.strip():
        skipped["messages without text"] += 1
        return None
    return ChatMessage(
        id=ident(message.get("uuid")),
        role=_ROLES.get(sender.strip(), sender.strip()),
        content=content,
        timestamp=iso_time(message.get("created_at"), "created_at"),
        position=position,
    )


def _count_unread(content: Any, skipped: Skipped) -> None:
    """A message read from its ``text``: the items of its ``content`` that are not text
    (an artifact's ``tool_use``, a tool's result) are not in it; counted as left out, so
    the import's report says so (they vanished without a word before). Not added to the
    text: that would change the identity of every such message imported before."""
    if isinstance(content, list):
        unread = sum(1 for item in content if isinstance(item, dict) and item.get("type") != "text")
        if unread:
            skipped["non-text content beside the text (left out)"] += unread


def _content_texts(content: Any, skipped: Skipped) -> list[str]:
    if content is None:
        return []
    if not isinstance(content, list):
        raise BadElement(f"'content' must be an array, not {type_name(content)}")
    texts: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            raise BadElement(f"a 'content' item must be an object, not {type_name(item)}")
        if item.get("type") == "text" and isinstance(item.get("text"), str):
            if item["text"].strip():
                texts.append(item["text"])
        else:
            skipped["non-text content (named)"] += 1
            texts.append(f"[non-text content: {item.get('type')}]")
    return texts
