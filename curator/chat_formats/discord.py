"""Discord channel export in DiscordChatExporter's JSON.

``{"guild": {"id", "name"}, "channel": {"id", "name", "category", ...}, "messages": [...]}``;
a message is ``{"id", "type", "timestamp", "timestampEdited", "content", "author": {"id",
"name", "nickname", "isBot"}, "attachments": [{"fileName", ...}], "embeds": [...],
"stickers": [...]}``.

Read: ordinary messages and replies (``type`` ``Default`` and ``Reply``), their content as
last edited, the author (``nickname`` over ``name``; a bot's role is ``assistant``, a
person's ``user``) and ``timestamp``. Named in the message and counted: attachments
(``[attachment: diagram.png]``), stickers and embeds. Left out and counted: system messages
(joins, pins, calls, thread and channel changes) and messages with nothing in them.
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

NAME = "discord"
DEFAULT_PER = "window 20"
_KEPT_TYPES = ("Default", "Reply")


def looks_like(value: Any) -> bool:
    """A ``guild`` and a ``channel`` with ids, and ``messages``: the exporter's shape."""
    if not isinstance(value, dict) or "messages" not in value:
        return False
    guild, channel = value.get("guild"), value.get("channel")
    return (
        isinstance(guild, dict)
        and "id" in guild
        and isinstance(channel, dict)
        and "id" in channel
        and "name" in channel
    )


def conversations(value: Any, file: str, skipped: Skipped) -> Iterator[Conversation | ElementError]:
    if not isinstance(value, dict):
        raise BadExport(f"a DiscordChatExporter file is an object, not {type_name(value)}")
    channel, guild, raw = value.get("channel"), value.get("guild"), value.get("messages")
    if not isinstance(channel, dict) or not isinstance(raw, list):
        raise BadExport("needs a 'channel' object and a 'messages' array")
    channel_name = channel.get("name")
    guild_name = guild.get("name") if isinstance(guild, dict) else None
    title = f"#{channel_name}" if isinstance(channel_name, str) else "#?"
    if isinstance(guild_name, str) and guild_name:
        title = f"{guild_name} {title}"
    try:
        conversation = Conversation(1, ident(channel.get("id")), clean(title, "the channel name"))
    except BadElement as exc:
        raise BadExport(str(exc)) from None
    conversation.where = f"channel {title}"
    yield from read_messages(conversation, raw, _message, file, None, skipped=skipped)
    yield from finished(conversation, skipped, "empty channels")


def _message(message: Any, position: str, skipped: Skipped) -> ChatMessage | None:
    if not isinstance(message, dict):
        raise BadElement(f"must be an object, not {type_name(message)}")
    kind = message.get("type", "Default")
    if not isinstance(kind, str):  # a wrong type is an error, not a kind left out
        raise BadElement(f"'type' must be a string, not {type_name(kind)}")
    if kind not in _KEPT_TYPES:
        skipped[f"system messages ({kind})"] += 1
        return None
    content = message.get("content", "")
    if not isinstance(content, str):
        raise BadElement(f"'content' must be a string, not {type_name(content)}")
    author = message.get("author")
    if not isinstance(author, dict):
        raise BadElement(f"'author' must be an object, not {type_name(author)}")
    pieces = [content] if content.strip() else []
    for key, label in (("attachments", "attachment"), ("stickers", "sticker")):
        items = list_field(message, key)
        for item in items:
            name = item.get("fileName", item.get("name")) if isinstance(item, dict) else None
            pieces.append(f"[{label}: {name}]" if isinstance(name, str) else f"[{label}]")
            skipped[f"{key} (named, content left out)"] += 1
    embeds = list_field(message, "embeds")
    if embeds:
        pieces.append(f"[{len(embeds)} embed{'s' if len(embeds) > 1 else ''}]")
        skipped["embeds (named, content left out)"] += len(embeds)
    text = clean("\n".join(pieces), "the message")
    if not text.strip():
        skipped["messages without content"] += 1
        return None
    nick, name = author.get("nickname"), author.get("name")
    speaker = nick if isinstance(nick, str) and nick else name if isinstance(name, str) else None
    return ChatMessage(
        id=ident(message.get("id")),
        role="assistant" if author.get("isBot") is True else "user",
        content=text,
        name=clean(speaker, "the author name") if speaker else None,
        timestamp=iso_time(message.get("timestamp"), "timestamp"),
        position=position,
    )
