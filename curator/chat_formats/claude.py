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
    read_messages,
    type_name,
)

NAME = "claude"
DEFAULT_PER = "conversation"
_ROLES = {"human": "user", "assistant": "assistant"}


def looks_like(value: Any) -> bool:
    """An array whose first object has ``chat_messages`` and a ``uuid``."""
    first = (
        next((v for v in value if isinstance(v, dict)), None) if isinstance(value, list) else None
    )
    return first is not None and "chat_messages" in first and "uuid" in first


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
    pieces = [text] if text and text.strip() else _content_texts(message.get("content"), skipped)
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
