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

from curator.core.textsafety import control_problem, one_line
from curator.errors import CuratorError
from curator.store.episode_records import MAX_EPISODE_CHARS, ParsedEpisode, episode_from_object
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


MAX_VALUES: Final = 100_000
"""The most values (strings, numbers, lists and objects together) one argument may hold:
a list shared six levels deep is read anew at every place it appears, and a chat of a
million messages is refused by its length only after it was read."""


def _is(value: object, kind: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the value's real type: an object whose ``__class__`` claims to be
    a ``str`` (a mock made with ``spec=str``) is not one to the built-in's own methods."""
    return issubclass(type(value), kind)


def described(value: object, limit: int = 120) -> str:
    """How a refusal names a value: strings (up to ``limit`` characters, one line) and
    numbers as they are, anything else by its kind ("a list", "a Decimal")."""
    if type(value) is bool or value is None:
        return str(value)
    if _is(value, int):
        number = int.__int__(value)  # type: ignore[arg-type]
        return str(number) if -_SHOWN_NUMBER < number < _SHOWN_NUMBER else "a number that large"
    if _is(value, str):
        text = str.__str__(value)
        return "'" + one_line(text[:limit]) + ("…" if len(text) > limit else "") + "'"
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def plain(value: Any, where: str) -> Any:
    """``value`` as plain built-in values (str, int, float, bool, None, list, tuple, dict
    with string keys), read without calling the caller's methods where a built-in's own
    reads it; anything else, a value that raises while it is read, one that holds itself,
    or more than :data:`MAX_VALUES` values, is refused."""
    try:
        return _Reader(where).read(value, 0)
    except CuratorError:
        raise
    except Exception as exc:  # the caller's own object failed while it was read
        raise CuratorError(f"{where} could not be read ({type(exc).__name__})") from None


class _Reader:
    def __init__(self, where: str) -> None:
        self.where = where
        self.left = MAX_VALUES
        self.open: set[int] = set()  # the containers being read (one inside itself)

    def read(self, value: Any, depth: int) -> Any:
        self.left -= 1
        if self.left < 0:
            raise CuratorError(f"{self.where} holds more than {MAX_VALUES:,} values")
        if value is None or type(value) is bool:
            return value
        if _is(value, str):
            return str.__str__(value)
        if _is(value, int) and not _is(value, bool):
            return int.__int__(value)
        if _is(value, float):
            return float.__float__(value)
        if not _is(value, (Mapping, list, tuple)):
            raise CuratorError(f"{self.where} holds {described(value)}, which is not a JSON value")
        if depth >= _MAX_DEPTH:
            raise CuratorError(f"{self.where} is nested deeper than {_MAX_DEPTH} levels")
        if id(value) in self.open:
            raise CuratorError(f"{self.where} holds itself")
        self.open.add(id(value))
        try:
            if _is(value, dict):
                return {self.key(k): self.read(v, depth + 1) for k, v in list(dict.items(value))}
            if _is(value, Mapping):
                return {self.key(k): self.read(v, depth + 1) for k, v in _pairs(value)}
            if _is(value, list):
                return [self.read(v, depth + 1) for v in list.__iter__(value)]
            # kept a tuple: a message given as one is named so
            return tuple(self.read(v, depth + 1) for v in tuple.__iter__(value))
        finally:
            self.open.discard(id(value))

    def key(self, key: object) -> str:
        return _key(key, self.where)


def _key(key: object, where: str) -> str:
    """A mapping's key as plain text; a key of another type is refused."""
    if not _is(key, str):
        raise CuratorError(f"{where} has a key that is not a string ({described(key)})")
    return str.__str__(key)


def _pairs(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """A mapping's (key, value) pairs, each checked to be a pair."""
    pairs = []
    for pair in mapping.items():
        if not _is(pair, tuple) or len(pair) != 2:
            raise CuratorError("a mapping's items() gave something that is not a pair")
        pairs.append((pair[0], pair[1]))
    return pairs


def whole_number(value: Any, name: str, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (a bool is not one)."""
    if _is(value, bool) or not _is(value, int):
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


def check_db(db: Any) -> str:
    """The ``db`` argument as the path or URL it names, read once: a path (text, or a
    path-like naming text) or a URL."""
    if _is(db, bytes) or not _is(db, (str, os.PathLike)):
        raise CuratorError(f"db must be a path or a postgresql:// URL, not {described(db)}")
    try:
        path = str.__str__(db) if _is(db, str) else os.fspath(db)
    except Exception as exc:  # a path-like whose __fspath__ fails
        raise CuratorError(f"db could not be read as a path ({type(exc).__name__})") from None
    if not _is(path, str):
        raise CuratorError(f"db must name a path as text, not {described(path)}")
    path = str.__str__(path)
    if "\x00" in path:  # no file has one; the system's call would raise
        raise CuratorError(f"db {described(path, 400)} holds a NUL character: no file has one")
    try:
        os.fsencode(path)
    except UnicodeError:  # a lone surrogate no file name can hold on this system
        raise CuratorError(
            f"db {described(path, 400)} holds a character no file name here can hold"
        ) from None
    return path


def check_query(query: Any, has_words: Any) -> str:
    if not _is(query, str):
        raise CuratorError("query must be a string")
    query = str.__str__(query)
    problem = control_problem(query, "query")
    if problem is not None:
        raise CuratorError(problem)
    if len(query) > MAX_QUERY_CHARS:
        raise CuratorError(
            f"query is {len(query):,} characters, over the {MAX_QUERY_CHARS:,} limit"
        )
    if not has_words(query):
        raise CuratorError("query has no words to search for")
    return query


def episode_items(items: Any) -> list[Any]:
    """``record_many``'s items: a list (or another iterable) of mappings; a single
    string or mapping is refused whole rather than taken apart into letters or keys."""
    if _is(items, (str, bytes, Mapping)) or not _iterable(items):
        raise CuratorError(
            f"items must be a list of episodes (objects of record's arguments), not "
            f"{described(items)}"
        )
    try:
        found = []
        for item in items:
            found.append(item)
            if len(found) > MAX_VALUES:
                raise CuratorError(f"items holds more than {MAX_VALUES:,} episodes")
        return found
    except CuratorError:
        raise
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
    if not _is(item, Mapping):
        raise CuratorError("each episode must be an object of record's arguments")
    try:
        pairs = list(dict.items(item)) if _is(item, dict) else _pairs(item)
    except CuratorError:
        raise
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
    if timestamp is None or _is(timestamp, str):
        return plain(timestamp, "timestamp")
    if not _is(timestamp, datetime):
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
