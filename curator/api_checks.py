"""The Python API's arguments, checked: every refusal one sentence, nothing of the caller's
run but the plain values it stands for.

An agent's code hands the API whatever it has: subclasses of ``str`` and ``int`` (an
enum's value, a library's string type), mappings that are not dicts, a number with five
thousand digits. Each argument is first turned into the plain built-in value it stands
for (:func:`plain`: ``str.__str__`` and ``int.__int__`` read a subclass's value without
calling its methods); whatever cannot be read so is refused in one sentence, and a value
is named in a message only as :func:`described` shows it (short, one line, never its
``repr``, which may run the caller's code or print a memory address).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from curator.core.textsafety import one_line
from curator.errors import CuratorError
from curator.store.importer import MAX_EPISODE_CHARS, ParsedEpisode, episode_from_object
from curator.store.models import utcnow

MAX_TOP_K: Final = 1000
"""The most patterns one read returns: a prompt holds tens, not thousands."""

MAX_QUERY_CHARS: Final = 1000
"""A longer query is refused: it is a question, not a document."""

MAX_MESSAGES: Final = 1000
"""The most chat messages one recorded episode may hold."""

MAX_SOURCE_CHARS: Final = 200
"""A source names a client or a log, in a table column."""

EPISODE_KEYS: Final = ("text", "messages", "source", "timestamp")
"""What an item of ``record_many`` may hold: ``record``'s arguments."""

_MAX_DEPTH: Final = 8
"""Deeper than a chat's list of message objects: not an episode (and never a recursion)."""

_SHOWN_NUMBER: Final = 10**12
"""Whole numbers up to this size are quoted in a message; larger ones only described."""


def described(value: object, limit: int = 120) -> str:
    """How a refusal names a value: strings (up to ``limit`` characters, one line) and
    numbers as they are, anything else by its kind ("a list", "a Decimal")."""
    if type(value) is bool or value is None:
        return str(value)
    if isinstance(value, int):
        number = int.__int__(value)
        return str(number) if -_SHOWN_NUMBER < number < _SHOWN_NUMBER else "a number that large"
    if isinstance(value, str):
        text = str.__str__(value)
        return "'" + one_line(text[:limit]) + ("…" if len(text) > limit else "") + "'"
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def plain(value: Any, where: str, depth: int = 0) -> Any:
    """``value`` as plain built-in values (str, int, float, bool, None, list, tuple, dict
    with string keys), read without calling the caller's methods where a built-in's own
    reads it; anything else, or a value that raises while it is read, is refused."""
    if value is None or type(value) is bool:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if depth >= _MAX_DEPTH:
        raise CuratorError(f"{where} is nested deeper than {_MAX_DEPTH} levels")
    try:
        if isinstance(value, Mapping):
            items = list(dict.items(value) if isinstance(value, dict) else value.items())
            return {_key(k, where): plain(v, where, depth + 1) for k, v in items}
        if isinstance(value, list):
            return [plain(v, where, depth + 1) for v in list.__iter__(value)]
        if isinstance(value, tuple):  # kept a tuple: a message given as one is named so
            return tuple(plain(v, where, depth + 1) for v in tuple.__iter__(value))
    except CuratorError:
        raise
    except Exception as exc:  # the caller's own object failed while it was read
        raise CuratorError(f"{where} could not be read ({type(exc).__name__})") from None
    raise CuratorError(f"{where} holds {described(value)}, which is not a JSON value")


def _key(key: object, where: str) -> str:
    if not isinstance(key, str):
        raise CuratorError(f"{where} has a key that is not a string ({described(key)})")
    return str.__str__(key)


def whole_number(value: Any, name: str, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise CuratorError(f"{name} must be a whole number from {low} to {high}")
    number = int.__int__(value)
    if not low <= number <= high:
        raise CuratorError(f"{name} must be from {low} to {high}, not {described(number)}")
    return number


def check_top_k(top_k: Any, name: str = "top_k") -> int:
    return whole_number(top_k, name, 1, MAX_TOP_K)


def check_flag(value: Any, name: str) -> bool:
    """A yes/no option: only True or False ("False", a string, is true in Python)."""
    if type(value) is not bool:
        raise CuratorError(f"{name} must be True or False, not {described(value)}")
    return value


def check_db(db: Any) -> str | os.PathLike[str]:
    """The ``db`` argument: a path (str or path-like naming a str) or a URL."""
    if isinstance(db, bytes) or not isinstance(db, str | os.PathLike):
        raise CuratorError(f"db must be a path or a postgresql:// URL, not {described(db)}")
    try:
        path = str.__str__(db) if isinstance(db, str) else os.fspath(db)
    except Exception as exc:  # a path-like whose __fspath__ fails
        raise CuratorError(f"db could not be read as a path ({type(exc).__name__})") from None
    if not isinstance(path, str):
        raise CuratorError(f"db must name a path as text, not {described(path)}")
    if "\x00" in path:  # no file has one; the system's call would raise
        raise CuratorError(f"db {described(path, 400)} holds a NUL character: no file has one")
    return path if isinstance(db, str) else db


def check_query(query: Any, has_words: Any) -> str:
    if not isinstance(query, str):
        raise CuratorError("query must be a string")
    query = str.__str__(query)
    if len(query) > MAX_QUERY_CHARS:
        raise CuratorError(f"query is {len(query):,} characters, over the {MAX_QUERY_CHARS} limit")
    if not has_words(query):
        raise CuratorError("query has no words to search for")
    return query


def episode_items(items: Any) -> list[Any]:
    """``record_many``'s items: a list (or another iterable) of mappings; a single
    string or mapping is refused whole rather than taken apart into letters or keys."""
    if isinstance(items, str | bytes | Mapping) or not _iterable(items):
        raise CuratorError(
            f"items must be a list of episodes (objects of record's arguments), not "
            f"{described(items)}"
        )
    try:
        return list(items)
    except Exception as exc:
        raise CuratorError(f"items could not be read ({type(exc).__name__})") from None


def _iterable(value: object) -> bool:
    try:
        iter(value)  # type: ignore[call-overload]
    except Exception:
        return False
    return True


def parse_episode(item: Any) -> ParsedEpisode:
    """One item of ``record_many`` checked like an imported line."""
    if not isinstance(item, Mapping):
        raise CuratorError("each episode must be an object of record's arguments")
    try:
        pairs = list(dict.items(item) if isinstance(item, dict) else item.items())
    except Exception as exc:  # a mapping of the caller's that fails while it is read
        raise CuratorError(f"the episode could not be read ({type(exc).__name__})") from None
    fields: dict[str, Any] = {}
    for key, value in pairs:
        name = _key(key, "the episode")
        if name not in EPISODE_KEYS:
            raise CuratorError(f"unknown argument {described(name)} for an episode")
        fields[name] = _stamp(value) if name == "timestamp" else plain(value, name)
    obj = episode_object(
        fields.get("text"), fields.get("messages"), fields.get("source"), fields.get("timestamp")
    )
    try:
        return episode_from_object(obj, 1, utcnow())
    except ValueError as exc:  # the importer's one-line reason for a bad line
        raise CuratorError(str(exc)) from None


def _stamp(timestamp: Any) -> Any:
    """A datetime as its ISO 8601 text (its time zone's own code may fail); else as given."""
    if timestamp is None or isinstance(timestamp, str):
        return plain(timestamp, "timestamp")
    if not isinstance(timestamp, datetime):
        raise CuratorError(
            f"timestamp must be ISO 8601 text or a datetime, not {described(timestamp)}"
        )
    try:
        return datetime.isoformat(timestamp)
    except Exception as exc:
        raise CuratorError(
            f"timestamp could not be written as ISO 8601 ({type(exc).__name__})"
        ) from None


def episode_object(text: Any, messages: Any, source: Any, timestamp: Any) -> dict[str, Any]:
    """The (plain) arguments as the importer's JSON object, refusing what it cannot say
    clearly."""
    if (text is None) == (messages is None):
        raise CuratorError("give either text or messages, not both and not neither")
    if text is not None and not isinstance(text, str):
        raise CuratorError("text must be a string")
    if isinstance(text, str) and len(text) > MAX_EPISODE_CHARS:
        raise CuratorError(
            f"the episode is {len(text):,} characters, over the {MAX_EPISODE_CHARS:,} limit"
        )
    if messages is not None:
        if not isinstance(messages, list | tuple):
            raise CuratorError("messages must be a list of {role, content} objects")
        if len(messages) > MAX_MESSAGES:
            raise CuratorError(f"{len(messages):,} messages, over the {MAX_MESSAGES:,} limit")
    if source is not None and not isinstance(source, str):
        raise CuratorError("source must be a string")
    if isinstance(source, str) and len(source) > MAX_SOURCE_CHARS:
        raise CuratorError(f"source is longer than {MAX_SOURCE_CHARS} characters")
    obj: dict[str, Any] = {"source": source or ""}
    if text is not None:
        obj["text"] = text
    else:
        obj["messages"] = list(messages)
    if timestamp is not None:
        obj["timestamp"] = timestamp
    return obj
