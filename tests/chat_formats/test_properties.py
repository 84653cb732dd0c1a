"""Properties of the chat readers: the ChatGPT branch rule, and no input makes a reader
crash: every value, anywhere in an export, is read, reported as an element error or
refuses the file with one reason."""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.chat_formats import chatgpt, claude, csv_map, detect_value, discord, slack, telegram
from curator.chat_formats.common import (
    BadExport,
    ChatMessage,
    Conversation,
    ElementError,
    describe_import,
    episodes,
    parse_granularity,
)
from curator.core.textsafety import control_problem, visible
from curator.store.importer import LineError
from tests.chat_formats.exports import (
    chatgpt_export,
    claude_export,
    discord_export,
    gpt_node,
    slack_files,
    telegram_full,
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

PROPERTY = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def gpt_trees(draw: st.DrawFn) -> tuple[dict[str, Any], str, list[str]]:
    """A tree of 1-12 message nodes under a root; returns (mapping, current, path texts)."""
    size = draw(st.integers(1, 12))
    parents = [draw(st.integers(0, i)) for i in range(size)]  # node i+1 hangs under 0..i
    texts = [
        draw(
            st.text(
                st.characters(codec="utf-8", categories=["L", "N", "So"]), min_size=1, max_size=6
            )
        )
        for _ in range(size)
    ]
    mapping: dict[str, Any] = {"n0": gpt_node("n0", None, None)}
    for i in range(1, size + 1):
        parent = f"n{parents[i - 1]}"
        role = draw(st.sampled_from(["user", "assistant"]))
        mapping[f"n{i}"] = gpt_node(f"n{i}", parent, role, texts[i - 1], time=1000.0 + i)
        mapping[parent]["children"].append(f"n{i}")
    current = draw(st.integers(1, size))
    path: list[str] = []
    node = current
    while node != 0:
        path.append(texts[node - 1])
        node = parents[node - 1]
    return mapping, f"n{current}", path[::-1]


@PROPERTY
@given(gpt_trees())
def test_any_chatgpt_tree_yields_exactly_the_current_branch(
    tree: tuple[dict[str, Any], str, list[str]],
) -> None:
    mapping, current, expected = tree
    export = [{"title": "t", "id": "c", "mapping": mapping, "current_node": current}]
    (conversation,) = chatgpt.conversations(export, "f", Counter())
    assert isinstance(conversation, Conversation)
    assert [m.content for m in conversation.messages] == expected


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value = copy.deepcopy(value)
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


def _read_all(module: Any, value: Any) -> None:
    """Read an export completely: only conversations and element errors, or BadExport."""
    try:
        items = list(module.conversations(value, "f", Counter()))
    except BadExport as exc:
        assert str(exc)
        return
    for item in items:
        assert isinstance(item, Conversation | ElementError), item
        if isinstance(item, Conversation):
            for message in item.messages:
                assert isinstance(message.content, str) and message.content.strip()


EXPORTS = {
    "chatgpt": (chatgpt, chatgpt_export()),
    "claude": (claude, claude_export()),
    "telegram": (telegram, telegram_full()),
    "discord": (discord, discord_export()),
}
PLACES = [(name, path) for name, (_, export) in EXPORTS.items() for path in _paths(export)]
SLACK = slack_files()
SLACK_PLACES = [(name, path) for name, value in SLACK.items() for path in _paths(value)]


@PROPERTY
@given(st.sampled_from(PLACES), JSON)
@example(("chatgpt", ()), {})
def test_any_value_anywhere_in_an_export_is_read_or_reported(
    place: tuple[str, tuple[Any, ...]], new: Any
) -> None:
    name, path = place
    module, export = EXPORTS[name]
    _read_all(module, _replace(export, path, new))


@PROPERTY
@given(st.sampled_from(SLACK_PLACES), JSON)
@example(("general/2024-05-01.json", (0, "subtype")), [])
def test_any_value_anywhere_in_a_slack_export_is_read_or_reported(
    place: tuple[str, tuple[Any, ...]], new: Any
) -> None:
    name, path = place
    files = dict(SLACK)
    files[name] = _replace(files[name], path, new)
    blobs = {n: json.dumps(v).encode() for n, v in files.items()}
    _read_all(slack, slack.Files(sorted(blobs), blobs.__getitem__))


@PROPERTY
@given(JSON)
def test_detection_never_raises_and_names_a_known_format(value: Any) -> None:
    assert detect_value(value) in (None, "chatgpt", "claude", "telegram", "discord")


@PROPERTY
@given(st.text(max_size=200), st.sampled_from(["", "content=b", "content=a,timestamp=b"]))
@example('a,b\n1,"2\n', "content=b")
@example("a,b\n1,\x00\n", "content=b")
def test_any_csv_text_is_read_or_reported(text: str, mapping: str) -> None:
    try:
        items = list(
            csv_map.conversations(
                text.encode("utf-8", "surrogatepass"),
                "f",
                csv_map.parse_mapping(mapping),
                Counter(),
            )
        )
    except BadExport as exc:
        assert str(exc)
        return
    assert all(isinstance(i, Conversation | LineError) for i in items)


@PROPERTY
@given(
    st.lists(st.text(st.characters(codec="utf-8", categories=["L", "N"]), min_size=1), max_size=30),
    st.sampled_from(["message", "conversation", "window:1", "window:3", "window:7"]),
)
def test_every_granularity_keeps_every_message_once_in_order(texts: list[str], per: str) -> None:
    conversation = Conversation(1, "c", "src", where="conversation 1")
    conversation.messages = [
        ChatMessage(id=str(i), role="user", content=t, position=f"message {i}")
        for i, t in enumerate(texts, 1)
    ]
    now = datetime(2024, 1, 1, tzinfo=UTC)
    out = list(episodes([conversation], per=parse_granularity(per), file="f", fmt="x", now=now))
    ids = [i for e in out for i in e.metadata["import"]["message_ids"]]
    assert ids == [str(i) for i in range(1, len(texts) + 1)]
    assert [m["content"] for e in out for m in e.messages] == texts


@settings(deadline=None, max_examples=200)
@given(
    st.dictionaries(
        st.text(max_size=20),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(),
            lambda c: st.lists(c, max_size=8) | st.dictionaries(st.text(max_size=5), c, max_size=4),
            max_leaves=30,
        ),
    )
)
@example(
    {"format": "slack", "file": "x.zip", "conversation_id": "C1\x1b[2J", "message_ids": [None] * 9}
)
def test_the_provenance_line_of_any_import_metadata_is_one_safe_line(info: dict[str, Any]) -> None:
    """An episode file's metadata is the file's own: an ``import`` key written by someone
    else, of any shape, still gives one line without control codes, never an exception."""
    line = describe_import(info)
    assert line and "\n" not in line and "\x1b" not in line


#: Texts that must never reach the store as they are: lone surrogates, controls, text
#: that shows nothing, direction overrides, beside plain words.
HOSTILE_TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from("\ud800\udfff\x00\x1b\x7f\x85\u200b\u200d\u2060\u202e\ufeff\n\t"),
    ),
    max_size=10,
)


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _stored_texts(episode: Any) -> list[str]:
    info = episode.metadata["import"]
    texts = [episode.text, episode.source, episode.external_id or "", info["conversation_id"]]
    texts += [str(i) for i in info["message_ids"] if i is not None]
    for message in episode.messages:
        texts += [str(v) for v in message.values()]
    return texts


TEXT_PLACES = [
    (name, path)
    for name, path in PLACES
    if isinstance(_at(EXPORTS[name][1], path), str | int)
    and not isinstance(_at(EXPORTS[name][1], path), bool)
]


@PROPERTY
@given(st.sampled_from(TEXT_PLACES), HOSTILE_TEXT)
@example(("claude", (0, "chat_messages", 0, "sender")), "\ud800")
@example(("discord", ("channel", "id")), "g\x1b[8m")
@example(("telegram", ("chats", "list", 0, "id")), "\ud800")
@example(("telegram", ("chats", "list", 0, "messages", 1, "text")), "\u200b\u2060")
def test_any_text_anywhere_in_an_export_is_stored_clean_or_refused(
    place: tuple[str, tuple[Any, ...]], new: str
) -> None:
    """Every text an export brings into the store (an id, a name, a sender, a role, a
    message) is checked once for all formats: a lone surrogate in an id ended the import
    as an internal error, a control character in a sender was stored, a message of
    zero-width characters became an episode. Whatever the text and wherever it is, the
    episodes made hold only texts an episode file's reader would take."""
    name, path = place
    module, export = EXPORTS[name]
    try:
        conversations = list(module.conversations(_replace(export, path, new), "f", Counter()))
    except BadExport:
        return
    now = datetime(2026, 1, 1, tzinfo=UTC)
    made = list(
        episodes(conversations, per=parse_granularity("message"), file="f", fmt=name, now=now)
    )
    for item in made:
        if isinstance(item, LineError):
            assert str(item) and "\n" not in str(item)
            continue
        for text in _stored_texts(item):
            text.encode("utf-8")  # no lone surrogate
            assert control_problem(text, "it") is None or text == item.text, repr(text)
        assert all(visible(m["content"]) for m in item.messages)


def test_a_slack_day_file_that_cannot_be_read_is_its_own_error_and_the_rest_is_read() -> None:
    """A day file removed after the folder was listed, or unreadable for its mode, ended
    the export half way: channels after it were never read or named. Fault injection (a
    test double, named as such): the export's reader fails on one day file as the file
    system would."""
    blobs = {n: json.dumps(v).encode() for n, v in SLACK.items()}
    days = sorted(n for n in blobs if "/" in n)
    gone = days[0]

    def read(name: str) -> bytes:
        if name == gone:
            raise FileNotFoundError(2, "No such file or directory")
        return blobs[name]

    def read_days(items: list[Any]) -> set[str]:
        conversations = [c for c in items if isinstance(c, Conversation)]
        return {m.position.split(",")[0] for c in conversations for m in c.messages}

    whole = list(slack.conversations(slack.Files(sorted(blobs), blobs.__getitem__), "f", Counter()))
    items = list(slack.conversations(slack.Files(sorted(blobs), read), "f", Counter()))
    errors = [str(i) for i in items if isinstance(i, ElementError)]
    assert errors == [f"f: {gone}: cannot read it (No such file or directory)"]
    assert read_days(items) == read_days(whole) - {gone} and len(read_days(items)) >= 2
