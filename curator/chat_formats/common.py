"""What every chat-export reader shares: messages, conversations, granularity, limits.

A reader turns one export into :class:`Conversation` objects (a conversation, a channel or
a chat, with its messages in order) and :class:`ElementError` for the elements it cannot
read. :func:`episodes` then cuts each conversation into the importer's ``ParsedEpisode``
objects at the granularity asked for, so every format follows the same rules: the source
is the conversation's name, the identity is the importer's :func:`content_hash` over the
messages, source and timestamp (a re-import adds nothing), and the provenance (format,
file, conversation id, message ids) goes into the episode's ``metadata`` field.

Nothing is dropped silently: a reader counts what it leaves out on purpose (a join
message, an empty conversation, an abandoned ChatGPT regeneration is not counted: it is
not part of the conversation) in :class:`Skipped`, and the import reports the counts.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from curator.core.textsafety import as_one_line, control_problem, escape_controls, visible
from curator.core.wording import plural
from curator.store.episode_records import (
    MAX_EPISODE_CHARS,
    ParsedEpisode,
    content_hash,
    render_messages,
    stored_size,
)
from curator.store.importer import LineError
from curator.store.models import format_utc, parse_iso_utc


@dataclass(frozen=True)
class ElementError(LineError):
    """A bad element of an export, numbered by its place in the file.

    ``line`` holds the number of the outer element (the conversation, the CSV line); the
    reason starts with the full position (``conversation 3, message 7: ...``), so the
    text reads ``conversations.json: conversation 3, message 7: ...``."""

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


class BadElement(ValueError):
    """One element's problem, worded for the user (its position is added by the caller)."""


class BadExport(ValueError):
    """The file as a whole is not a readable export of the format; nothing of it is read."""


@dataclass(frozen=True)
class ChatMessage:
    id: str
    role: str
    content: str
    name: str | None = None
    timestamp: datetime | None = None
    position: str = ""
    """Where the message is in the file (``message 7``), for errors."""


@dataclass
class Conversation:
    number: int
    id: str
    title: str
    messages: list[ChatMessage] = field(default_factory=list)
    where: str = ""
    """Its position in the file (``conversation 3``; ``channel general``)."""


Skipped = Counter
"""What a reader left out on purpose, by kind (``"join messages"``: 4)."""


def read_messages(
    conversation: Conversation,
    messages: list[Any],
    read: Callable[[Any, str, Skipped], ChatMessage | None],
    file: str,
    number: int | None,
    prefix: str = "",
    *,
    skipped: Skipped,
) -> Iterator[ElementError]:
    """Read each message into ``conversation``: a bad one is an error at its position
    (``{prefix}message {index}``) and the others are still read, as bad lines are.

    ``number`` is the element the errors are counted under (the conversation's); None
    counts them under the message's own index (a file that is one channel). ``read``
    counts what it leaves out of a message in the counter it is given, which joins
    ``skipped`` only when the message is read: a refused message's parts are not
    reported as left out of what was imported.
    """
    for index, message in enumerate(messages, 1):
        position = f"{prefix}message {index}"
        counted: Skipped = Counter()
        try:
            parsed = read(message, position, counted)
        except BadElement as exc:
            yield ElementError(file, index if number is None else number, f"{position}: {exc}")
            continue
        skipped.update(counted)
        if parsed is not None:
            conversation.messages.append(parsed)


def finished(conversation: Conversation, skipped: Skipped, empty: str) -> Iterator[Conversation]:
    """The conversation, unless it holds no message: then it is counted as ``empty``."""
    if conversation.messages:
        yield conversation
    else:
        skipped[empty] += 1


@dataclass(frozen=True)
class Granularity:
    """How a conversation is cut into episodes: ``message``, ``conversation`` or
    ``window`` of ``size`` consecutive messages."""

    kind: str
    size: int = 0

    def __str__(self) -> str:
        return f"window {self.size}" if self.kind == "window" else self.kind


MESSAGE = Granularity("message")
CONVERSATION = Granularity("conversation")


def parse_granularity(text: str) -> Granularity:
    """``message``, ``conversation``, ``window N`` (also ``window:N``, ``window=N``)."""
    words = text.strip().lower().replace(":", " ").replace("=", " ").split()
    if words in (["message"], ["messages"]):
        return MESSAGE
    if words in (["conversation"], ["conversations"]):
        return CONVERSATION
    if words and words[0] == "window":
        if len(words) == 2 and words[1].isdigit() and 1 <= int(words[1]) <= 100_000:
            return Granularity("window", int(words[1]))
        raise ValueError("window needs a size from 1 to 100000 (for example 'window:20')")
    raise ValueError(f"{text!r} is not message, conversation or window:N")


# -- small readers for the fields every format has -------------------------------------------


LOOKED_AT = 20
"""How many of an array's first objects recognising a format reads."""


def looks_like_most(value: Any, test: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether at least half of the first :data:`LOOKED_AT` objects of an array (and at
    least one) pass ``test``."""
    if not isinstance(value, list):
        return False
    objects = list(itertools.islice((v for v in value if isinstance(v, dict)), LOOKED_AT))
    passing = sum(1 for v in objects if test(v))
    return passing > 0 and 2 * passing >= len(objects)


def type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def load_json(data: bytes) -> Any:
    """Strict UTF-8 JSON (a BOM allowed); a problem is one :class:`BadExport`."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadExport(f"invalid UTF-8 at byte {exc.start + 1}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_one_each)
    except RecursionError:
        raise BadExport("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        # Within the last few characters: a cut may fall inside a \uXXXX escape.
        ended = exc.pos >= len(text.rstrip()) - 6 or exc.msg.startswith("Unterminated")
        cut = " (file cut off?)" if ended else ""
        where = "line" if exc.msg.endswith(" at") else "at line"
        raise BadExport(
            f"invalid JSON: {exc.msg} {where} {exc.lineno} column {exc.colno}{cut}"
        ) from None
    except ValueError as exc:
        raise BadExport(f"invalid JSON: {exc}") from None


def _one_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (a key given twice lost its first value
    unsaid: a conversation's first list of messages), as an episode file's lines are."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {twice!r} is given twice in one object")
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def need(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``obj[key]`` of the given type, or :class:`BadElement` naming the field."""
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadElement(f"'{key}' must be {what}, not {type_name(value)}")
    return value


def optional_text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadElement(f"'{key}' must be a string, not {type_name(value)}")
    return value


def list_field(obj: dict[str, Any], key: str) -> list[Any]:
    """``obj[key]`` as a list: absent or null is empty, anything but an array is an error
    (an object there is not "no attachments": it is a file we do not understand)."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadElement(f"'{key}' must be an array, not {type_name(value)}")
    return value


def ident(value: Any) -> str:
    """An id given as a string or an integer, as text ('' when absent)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BadElement(f"id must be a string or an integer, not {type_name(value)}")
    return str(value)


def epoch_time(value: Any, key: str) -> datetime | None:
    """Seconds since 1970 (a number, or a string as Slack and Telegram write them)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise BadElement(f"'{key}' {value[:30]!r} is not a number of seconds") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadElement(f"'{key}' must be a number of seconds, not {type_name(value)}")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise BadElement(f"'{key}' {value} is out of range") from None


def iso_time(value: Any, key: str) -> datetime | None:
    """An ISO 8601 time; one without a zone is taken as UTC (the store's rule)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadElement(f"'{key}' must be an ISO 8601 string, not {type_name(value)}")
    try:
        return parse_iso_utc(value)
    except ValueError:
        raise BadElement(f"'{key}' {value[:40]!r} is not an ISO 8601 time") from None
    except OverflowError:  # 0001-01-01 at +01:00 is before year 1 in UTC
        raise BadElement(
            f"'{key}' {value[:40]!r} is outside the range 0001-01-01 to 9999-12-31 in UTC"
        ) from None


def clean(text: str, what: str) -> str:
    """``text`` if it can be stored (UTF-8, no hiding control characters), else the reason
    as :class:`BadElement` (the intake policy of :mod:`curator.core.textsafety`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadElement(f"{what} contains a lone surrogate (not valid Unicode)") from None
    problem = control_problem(text, what)
    if problem is not None:
        raise BadElement(problem)
    if len(text) > MAX_EPISODE_CHARS:
        raise BadElement(
            f"{what} is {len(text):,} characters, over the {MAX_EPISODE_CHARS:,} limit"
        )
    return text


# -- conversations into episodes --------------------------------------------------------------


def episodes(
    conversations: Iterable[Conversation | ElementError],
    *,
    per: Granularity,
    file: str,
    fmt: str,
    now: datetime,
    skipped: Skipped | None = None,
) -> Iterator[ParsedEpisode | LineError]:
    """Cut each conversation into episodes; errors pass through in file order.

    Every text a conversation brings into the store (its id and name, each message's id,
    role, sender and text) is checked here, once for every format, as an episode file's
    fields are: a lone surrogate stopped the whole import with an internal error, and a
    control character in an id, a sender or a name was stored. A conversation whose id or
    name is refused is one error; a message so refused is an error at its place, and the
    rest of its conversation is still read. A message that shows nothing (zero-width
    characters only) is left out and counted, as an empty one is."""
    first_ids: dict[str, list[str | None]] = {}
    for item in conversations:
        if isinstance(item, LineError):
            yield item
            continue
        yield from _checked(item, file, skipped if skipped is not None else Counter())
        for group in _groups(item.messages, per):
            episode = _episode(item, group, per, file, fmt, now)
            yield _told_apart(episode, first_ids) if isinstance(episode, ParsedEpisode) else episode


def _checked(conversation: Conversation, file: str, skipped: Skipped) -> Iterator[ElementError]:
    """The errors of ``conversation``'s stored texts (see :func:`episodes`); what is
    refused leaves ``conversation`` (a refused conversation keeps no message)."""
    where = conversation.where or f"conversation {conversation.number}"
    try:
        clean(conversation.id, "the conversation's id")
        clean(conversation.title, "the conversation's name")
    except BadElement as exc:
        conversation.messages.clear()
        yield ElementError(file, conversation.number, f"{where}: {exc}")
        return
    kept: list[ChatMessage] = []
    for message in conversation.messages:
        try:
            clean(message.id, "the message's id")
            clean(message.role, "the role")
            clean(message.name or "", "the sender's name")
            clean(message.content, "the text")
        except BadElement as exc:
            at = ", ".join(p for p in (conversation.where, message.position) if p) or where
            yield ElementError(file, conversation.number, f"{at}: {exc}")
            continue
        if visible(message.content):
            kept.append(message)
        else:
            skipped["messages that show nothing"] += 1
    conversation.messages[:] = kept


def _groups(messages: list[ChatMessage], per: Granularity) -> list[list[ChatMessage]]:
    if per.kind == "message":
        return [[m] for m in messages]
    if per.kind == "window":
        return [messages[i : i + per.size] for i in range(0, len(messages), per.size)]
    return [messages] if messages else []


def _told_apart(episode: ParsedEpisode, first_ids: dict[str, list[str | None]]) -> ParsedEpisode:
    """Two episodes of one file with the same content, source and time but other message
    ids (three photos of an album sent in one second, one per episode; the same words
    twice in a CSV) are two episodes: the later one's identity also holds its message ids.
    Before, the second was counted "already present" and lost. Only such a repeat changes
    identity, so every other episode keeps the one it was imported with before, and the
    same file imported again derives the same identities (nothing twice)."""
    ids = episode.metadata["import"]["message_ids"]
    seen = first_ids.setdefault(episode.content_hash, ids)
    if seen is ids or seen == ids or not any(ids):
        return episode
    repeat = {"repeat_of": episode.content_hash, "message_ids": ids}
    return replace(episode, content_hash=content_hash(repeat, episode.source, None))


def _episode(
    conversation: Conversation,
    group: list[ChatMessage],
    per: Granularity,
    file: str,
    fmt: str,
    now: datetime,
) -> ParsedEpisode | LineError:
    body: list[dict[str, str]] = []
    for m in group:
        entry = {"role": m.role, "content": m.content}
        if m.name:
            entry["name"] = m.name
        body.append(entry)
    text = render_messages(body)
    size = stored_size(text, body)
    if size > MAX_EPISODE_CHARS:
        span = f"messages {group[0].position.split()[-1]}-{group[-1].position.split()[-1]}"
        return ElementError(
            file,
            conversation.number,
            f"{conversation.where}, {span}: episode is {size:,} characters, over the "
            f"{MAX_EPISODE_CHARS:,} limit (import it with a smaller --per, e.g. window:20)",
        )
    stamps = [m.timestamp for m in group if m.timestamp is not None]
    stamp = min(stamps) if stamps else None
    metadata: dict[str, Any] = {
        "import": {
            "format": fmt,
            "file": file,
            "conversation_id": conversation.id,
            "message_ids": [m.id for m in group],
            "per": str(per),
        }
    }
    source = as_one_line(conversation.title)  # a title over two lines, or turned around
    return ParsedEpisode(
        line=conversation.number,
        external_id=group[0].id if len(group) == 1 and group[0].id else None,
        text=text,
        messages=body,
        timestamp=stamp if stamp is not None else now,
        source=source,
        metadata=metadata,
        content_hash=content_hash(body, source, None if stamp is None else format_utc(stamp)),
    )


FORMAT_NAMES = {
    "chatgpt": "ChatGPT export",
    "claude": "Claude export",
    "telegram": "Telegram export",
    "discord": "Discord export",
    "slack": "Slack export",
    "csv": "CSV file",
}
SHOWN_MESSAGE_IDS = 5
"""Message ids named in the provenance line; the rest are counted."""


def describe_import(info: dict[str, Any]) -> str:
    """One line on where an imported episode came from, from its ``metadata.import``:
    ``ChatGPT export conversations.json, conversation conv-1, 4 messages (u1, a1b, …)``.

    The metadata of an episode file is the file's own, so a value of any type is shown as
    text, never trusted to be the shape written here, and controls are shown escaped.
    """
    fmt = info.get("format")
    parts = [f"{FORMAT_NAMES.get(str(fmt), str(fmt or 'export'))} {info.get('file') or '?'}"]
    conversation = info.get("conversation_id")
    if conversation not in (None, ""):
        parts.append(f"conversation {conversation}")
    ids = info.get("message_ids")
    if isinstance(ids, list) and ids:
        named = [str(i) for i in ids[:SHOWN_MESSAGE_IDS] if i is not None]
        text = plural(len(ids), "message")
        if named:
            more = ", …" if len(ids) > SHOWN_MESSAGE_IDS else ""
            text += f" ({', '.join(named)}{more})"
        parts.append(text)
    return " ".join(escape_controls(", ".join(parts)).split())
