"""Telegram Desktop export: ``result.json`` (machine-readable JSON).

Either one chat (``{"name", "type", "id", "messages": [...]}``) or the full export
(``{"chats": {"list": [chat, ...]}, "left_chats": {"list": [...]}, ...}``). A message is
``{"id", "type": "message" | "service", "date", "date_unixtime", "from", "from_id",
"text", "edited", ...}``; ``text`` is a string or a list of strings and entities
(``{"type": "bold", "text": "..."}``), joined in order.

Read: the sender's name (``from``; the role is ``user``), the time (``date_unixtime``, else
``date`` taken as UTC), the text, the last edited version as exported. Named in the message
and counted: media (``[photo]``, ``[file: report.pdf]``, ``[sticker 😀]``, ``[voice_message]``)
and polls, locations and contacts (``[poll]``...). Left out and counted: service messages
(joins, pins, calls, title changes), messages with no text and no media, empty chats.
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
    iso_time,
    read_messages,
    type_name,
)

NAME = "telegram"
DEFAULT_PER = "window 20"
_NAMED = ("poll", "location_information", "contact_information", "game_information")


CHAT_TYPES = frozenset(
    {
        "personal_chat", "bot_chat", "saved_messages", "replies", "verification_codes",
        "private_group", "private_supergroup", "public_supergroup",
        "private_channel", "public_channel",
    }
)  # fmt: skip


def looks_like(value: Any) -> bool:
    """The full export (``chats.list``), or one chat: a Telegram chat ``type``, or messages
    dated the way Telegram dates them. An episode line that merely has ``type`` and
    ``messages`` keys is not one."""
    if not isinstance(value, dict):
        return False
    chats = value.get("chats")
    if isinstance(chats, dict) and "list" in chats:
        return True
    messages = value.get("messages")
    if not isinstance(messages, list):
        return False
    if isinstance(value.get("type"), str) and value["type"] in CHAT_TYPES:
        return True
    first = messages[0] if messages else None
    return isinstance(first, dict) and "date_unixtime" in first


def conversations(value: Any, file: str, skipped: Skipped) -> Iterator[Conversation | ElementError]:
    if not isinstance(value, dict):
        raise BadExport(f"a Telegram export is an object, not {type_name(value)}")
    if "chats" in value:
        chats: list[Any] = []
        for key in ("chats", "left_chats"):
            group = value.get(key)
            if group is None:
                continue
            if not isinstance(group, dict) or not isinstance(group.get("list"), list):
                raise BadExport(f"'{key}' must be an object with a 'list' array")
            chats.extend(group["list"])
    else:
        chats = [value]
    for number, chat in enumerate(chats, 1):
        where = f"chat {number}"
        try:
            if not isinstance(chat, dict):
                raise BadElement(f"must be an object, not {type_name(chat)}")
            raw = chat.get("messages")
            if not isinstance(raw, list):
                raise BadElement(f"'messages' must be an array, not {type_name(raw)}")
            chat_id = ident(chat.get("id"))
            name = chat.get("name")
            title = clean(name.strip(), "the chat name") if isinstance(name, str) else ""
        except BadElement as exc:
            yield ElementError(file, number, f"{where}: {exc}")
            continue
        conversation = Conversation(
            number, chat_id, title or f"Telegram {chat_id}".strip(), where=where
        )
        yield from read_messages(
            conversation, raw, _message, file, number, f"{where}, ", skipped=skipped
        )
        yield from finished(conversation, skipped, "empty chats")


def text_of(value: Any) -> str:
    """A message's ``text``: a string, or a list of strings and ``{"text": ...}`` entities."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise BadElement(f"'text' must be a string or an array, not {type_name(value)}")
    pieces: list[str] = []
    for entity in value:
        if isinstance(entity, str):
            pieces.append(entity)
        elif isinstance(entity, dict) and isinstance(entity.get("text"), str):
            pieces.append(entity["text"])
        else:
            raise BadElement("a 'text' entity must be a string or an object with a 'text' string")
    return "".join(pieces)


def _message(message: Any, position: str, skipped: Skipped) -> ChatMessage | None:
    if not isinstance(message, dict):
        raise BadElement(f"must be an object, not {type_name(message)}")
    kind = message.get("type", "message")
    if not isinstance(kind, str):  # a wrong type is an error, not a service message
        raise BadElement(f"'type' must be a string, not {type_name(kind)}")
    if kind != "message":
        skipped["service messages"] += 1
        return None
    pieces = [text_of(message.get("text", ""))]
    media = _media(message)
    if media:
        skipped["media (named, content left out)"] += 1
        pieces.append(media)
    content = clean("\n".join(p for p in pieces if p), "the message")
    if not content.strip():
        skipped["messages without text"] += 1
        return None
    sender = message.get("from")
    stamp = epoch_time(message.get("date_unixtime"), "date_unixtime")
    if stamp is None:
        stamp = iso_time(message.get("date"), "date")
    return ChatMessage(
        id=ident(message.get("id")),
        role="user",
        content=content,
        name=clean(sender, "the sender") if isinstance(sender, str) and sender else None,
        timestamp=stamp,
        position=position,
    )


def _media(message: dict[str, Any]) -> str:
    if "photo" in message:
        return "[photo]"
    kind = message.get("media_type")
    if kind == "sticker":
        emoji = message.get("sticker_emoji")
        return f"[sticker {emoji}]" if isinstance(emoji, str) else "[sticker]"
    if isinstance(kind, str):
        return f"[{kind}]"
    if "file" in message:
        name = message.get("file_name")
        return f"[file: {name}]" if isinstance(name, str) else "[file]"
    for key in _NAMED:
        if key in message:
            return f"[{key.removesuffix('_information')}]"
    return ""
