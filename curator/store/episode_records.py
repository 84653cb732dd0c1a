"""One episode record read from a file: its fields checked, its identity computed.

What an import, a chat export's converter and the MCP server's intake all agree on: which
keys an episode record has (:data:`EPISODE_KEYS`; any other is said, not lost without a
word), how its time, messages, source and metadata are checked (every refusal raises
``_BadLine`` with one sentence, which the caller numbers with its file and line), how a
message list reads as text, and the identity of an episode (:func:`content_hash`).
Reading files and writing episodes is :mod:`curator.store.importer`'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from curator.core.redact import one_line
from curator.core.textsafety import NAME_BREAKERS, control_name, visible
from curator.core.wording import plural
from curator.store.json_source import _BadLine, _check_depth_and_text, _type_name
from curator.store.models import format_utc, parse_iso_utc

MAX_EPISODE_CHARS = 1_000_000
"""Longer episodes are rejected: a model context holds a few thousand tokens at most."""


@dataclass(frozen=True)
class ParsedEpisode:
    line: int
    external_id: str | None
    text: str
    messages: list[dict[str, str]] | None
    timestamp: datetime
    source: str
    metadata: dict[str, Any]
    content_hash: str
    unread: tuple[str, ...] = ()
    """The record's keys no episode keeps (a ``created_at``, a ``tags``): said, not lost
    without a word."""


def _parse_timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _BadLine(f"'timestamp' must be an ISO 8601 string, not {_type_name(value)}")
    try:
        return parse_iso_utc(value)
    except ValueError:
        raise _BadLine(f"'timestamp' {value[:40]!r} is not ISO 8601") from None
    except OverflowError:
        raise _BadLine(
            f"'timestamp' {value[:40]!r} is outside the range 0001-01-01 to 9999-12-31 in UTC"
        ) from None


def _parse_messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise _BadLine(f"'messages' must be an array, not {_type_name(value)}")
    if not value:
        raise _BadLine("'messages' is empty")
    messages: list[dict[str, str]] = []
    for i, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise _BadLine(f"message {i} must be an object, not {_type_name(item)}")
        role, content, name = item.get("role"), item.get("content"), item.get("name")
        if not isinstance(role, str) or not role.strip():
            raise _BadLine(f"message {i} needs a 'role' string")
        if not isinstance(content, str):
            raise _BadLine(f"message {i} needs a 'content' string, not {_type_name(content)}")
        message = {"role": role.strip(), "content": content}
        if name is not None:
            if not isinstance(name, str):
                raise _BadLine(f"message {i} 'name' must be a string, not {_type_name(name)}")
            message["name"] = name
        messages.append(message)
    return messages


def render_messages(messages: Sequence[dict[str, str]]) -> str:
    """Plain text of a chat: one ``speaker: content`` block per message."""
    return "\n".join(_block(m, roles_shown=True) for m in messages)


def _block(message: Mapping[str, str], *, roles_shown: bool) -> str:
    """One message as ``speaker: content``, or (``roles_shown`` False) its content alone
    where the speaker is the message's own role, and an account name as its bare name
    (see :func:`detector_text`)."""
    name = message.get("name")
    speaker = name or message["role"]
    if not roles_shown:
        if not name and speaker.casefold() in CHAT_ROLES:
            return message["content"]
        account = _ACCOUNT_NAME.fullmatch(name) if name else None
        if account:
            speaker = account[1] if account[2] is None else f"{account[1]} {account[2]}"
    return f"{speaker}: {message['content']}"


#: A sender's account name as chat platforms write it: an optional ``@``, a name of word
#: characters and dashes, and an optional Discord discriminator (``kel#1234``).
#: :func:`detector_text` shows the detector ``kel`` and ``kel 1234``: the name and its
#: digits stay (a PIN shaped as a discriminator is still read as one; look-alike digits
#: do not match and stay as written). A name with a dot is left as written:
#: ``@deals.shop`` may be a domain as much as a handle.
_ACCOUNT_NAME = re.compile(r"@?(\w[\w\-]{0,63})(?:#([0-9]{4}))?")


#: The roles chat formats and agent frameworks give their turns: shown as a speaker they
#: are the rendering's structure (see :func:`detector_text`).
CHAT_ROLES = frozenset({"user", "assistant", "system", "developer", "tool", "function", "model"})


def detector_text(messages: Sequence[Mapping[str, str]]) -> str:
    """What the poisoned-memory detector reads of a chat: :func:`render_messages`'s text
    without the speakers the curator itself writes (a message's own role, as
    ``assistant: ``), which are the layout of a chat, not anything anyone sent.

    Read with them, every recorded chat with an assistant turn was flagged as holding a
    chat-template token; and those flags, dropped afterwards, had kept the learned reader
    from reading the chat at all. A speaker taken from a message's ``name``, or a role
    no chat format uses, is the sender's own text and stays; a role line inside a
    message's content is content, and is read as such. A sender's account name is shown
    without its ``@`` and its ``#`` (``kel#1234`` as ``kel 1234``): as the speaker of its
    own message it is who wrote, not a contact point pushed at the agent, and read as a
    handle it flagged 126 of the demo's 203 chats as a link. A name that is a domain, an
    address or a link is still one; a handle pointed at inside a message still is too.
    What this gives up: a sender whose only destination is their own handle ("add me on
    the other app" from ``@lina_xx_1994``) is no longer flagged for it."""
    return "\n".join(_block(m, roles_shown=False) for m in messages)


def content_hash(body: Any, source: str, timestamp: str | None) -> str:
    canonical = json.dumps(
        {"body": body, "source": source, "timestamp": timestamp},
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def stored_size(text: str, messages: Sequence[Mapping[str, str]] | None = None) -> int:
    """The characters an episode stores, as :data:`MAX_EPISODE_CHARS` counts them: its
    text, or its messages' every value where that is more (the rendered text names a
    speaker by 'name' and leaves its 'role' out, so a megabyte role once passed a limit
    that measured the text only). Every intake measures with this one function."""
    if not messages:
        return len(text)
    return max(len(text), sum(sum(map(len, m.values())) for m in messages))


EPISODE_KEYS = frozenset({"content", "text", "messages", "id", "timestamp", "source", "metadata"})
"""The keys of an episode record; any other is read and left out (and said)."""
_TIME_KEYS = frozenset(
    {"timestamp", "created_at", "createdat", "created", "time", "ts", "date", "datetime"}
)
"""Keys that usually hold a record's time (``timestamp`` is the one read)."""
_NAMED_KEYS = 8
"""How many left-out keys a note names."""


def unread_note(counts: Mapping[str, int]) -> str:
    """The note on keys no episode keeps: the commonest first, with their records."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(
        f"{one_line(key)[:40] or repr(key)} ({plural(n, 'record')})"
        for key, n in ranked[:_NAMED_KEYS]
    )
    more = len(ranked) - _NAMED_KEYS
    note = f"keys no episode keeps were left out: {named}" + (
        f" and {plural(more, 'other key')}" if more > 0 else ""
    )
    if any(key.casefold() in _TIME_KEYS for key in counts):
        note += "; an episode's time is read from 'timestamp' only (without it: the import's)"
    return note + "; keep other fields under 'metadata'"


def episode_from_object(obj: Any, line: int, now: datetime) -> ParsedEpisode:
    """Validate one decoded JSON value as an episode (raises ``_BadLine``)."""
    if not isinstance(obj, dict):
        raise _BadLine(f"expected a JSON object, found {_type_name(obj)}")
    _check_depth_and_text(obj, "the episode")
    bodies = [k for k in ("content", "text", "messages") if k in obj]
    if not bodies:
        raise _BadLine("needs 'content', 'text' or 'messages'")
    if len(bodies) > 1:
        raise _BadLine(f"has both {bodies[0]!r} and {bodies[1]!r}; give exactly one")
    key = bodies[0]
    messages: list[dict[str, str]] | None = None
    if key == "messages":
        messages = _parse_messages(obj["messages"])
        if not any(visible(m["content"]) for m in messages):
            raise _BadLine("every message's 'content' is empty")
        text = render_messages(messages)
        body: Any = messages
        size = stored_size(text, messages)
    else:
        value = obj[key]
        if not isinstance(value, str):
            raise _BadLine(f"{key!r} must be a string, not {_type_name(value)}")
        if not visible(value):
            raise _BadLine(f"{key!r} is empty")
        text = body = value
        size = len(text)
    if size > MAX_EPISODE_CHARS:
        raise _BadLine(f"episode is {size:,} characters, over the {MAX_EPISODE_CHARS:,} limit")

    raw_id = obj.get("id")
    if raw_id is not None and (not isinstance(raw_id, str | int) or isinstance(raw_id, bool)):
        raise _BadLine(f"'id' must be a string or an integer, not {_type_name(raw_id)}")
    source = obj.get("source", "")
    if not isinstance(source, str):
        raise _BadLine(f"'source' must be a string, not {_type_name(source)}")
    breaker = NAME_BREAKERS.search(source.strip())
    if breaker is not None:  # a source is one name on one line, shown as it reads
        raise _BadLine(
            f"'source' holds {control_name(breaker.group())}: a source is a name on one "
            "line, without line breaks, tabs or direction marks"
        )
    metadata = obj.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _BadLine(f"'metadata' must be an object, not {_type_name(metadata)}")

    if obj.get("timestamp") is None:
        timestamp, stamp_for_hash = now, None
    else:
        timestamp = _parse_timestamp(obj["timestamp"])
        stamp_for_hash = format_utc(timestamp)
    return ParsedEpisode(
        line=line,
        external_id=None if raw_id is None else str(raw_id),
        text=text,
        messages=messages,
        timestamp=timestamp,
        source=source.strip(),
        metadata=metadata,
        content_hash=content_hash(body, source.strip(), stamp_for_hash),
        unread=tuple(key for key in obj if key not in EPISODE_KEYS),
    )
