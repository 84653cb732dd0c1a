"""Claude ``conversations.json`` and Telegram Desktop ``result.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.chat_formats import ChatImport, parse_granularity
from curator.store.db import Store
from curator.store.episode_records import MAX_EPISODE_CHARS
from curator.store.importer import import_file
from tests.chat_formats.exports import (
    claude_export,
    episodes,
    telegram_chat,
    telegram_full,
    write_json,
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "chats.sqlite")
    yield s
    s.close()


# -- Claude -----------------------------------------------------------------------------------


def test_claude_messages_senders_times_and_attachments(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "conversations.json", claude_export())
    chat = ChatImport()
    report = import_file(store, path, chat=chat)
    assert (report.imported, report.errors) == (2, [])
    cv, hello = episodes(store)
    assert cv.messages == [
        {"role": "user", "content": "Please review my CV 🙏\n[attachment: cv.pdf]"},
        {"role": "assistant", "content": "Your summary is strong; shorten section 2."},
    ]
    assert "John Doe" not in cv.text  # the extracted content is left out
    assert cv.source == "Résumé review"
    assert cv.metadata["import"]["message_ids"] == ["m-1", "m-2"]
    assert cv.metadata["import"]["conversation_id"] == "c-1"
    assert (
        hello.text == "user: Как дела?\nassistant: [non-text content: tool_use]\nХорошо, спасибо!"
    )
    assert hello.timestamp.isoformat() == "2024-03-02T07:00:00+00:00"  # +03:00 in UTC
    assert chat.formats[str(path)] == "claude"
    assert chat.skipped[str(path)]["empty conversations"] == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda c: c[1]["chat_messages"][0].update(sender=None), "message 1: 'sender' must be"),
        (lambda c: c[1]["chat_messages"][1].update(text=5), "message 2: 'text' must be a string"),
        (
            lambda c: c[1]["chat_messages"][0].update(created_at="soon"),
            "message 1: 'created_at' 'soon' is not an ISO 8601 time",
        ),
        (
            lambda c: c[1]["chat_messages"][0].update(text="z" * (MAX_EPISODE_CHARS + 1)),
            "message 1: the message is 1,000,001 characters, over the 1,000,000 limit",
        ),
        (lambda c: c[1].update(chat_messages={}), "'chat_messages' must be an array, not an obj"),
    ],
)
def test_claude_bad_messages_are_numbered(store: Store, tmp_path: Path, change, reason) -> None:
    data = claude_export()
    change(data)
    path = write_json(tmp_path / "conversations.json", data)
    report = import_file(store, path, chat=ChatImport(format="claude"))
    assert [e.reason.startswith("conversation 2") for e in report.errors] == [True]
    assert reason in report.errors[0].reason
    assert episodes(store)[0].source == "Résumé review"


def test_claude_items_beside_a_text_are_counted_as_left_out(store: Store, tmp_path: Path) -> None:
    """A message read from its ``text`` (as real exports of artifacts look): the
    ``tool_use`` of its ``content`` is not in the text, and the report says so."""
    data = claude_export()
    data[0]["chat_messages"][1]["content"] = [
        {"type": "text", "text": "Your summary is strong; shorten section 2."},
        {"type": "tool_use", "name": "artifacts", "input": {"content": "print('cv')"}},
    ]
    chat = ChatImport()
    path = write_json(tmp_path / "conversations.json", data)
    assert import_file(store, path, chat=chat).imported == 2
    assert chat.skipped[str(path)]["non-text content beside the text (left out)"] == 1
    assert "shorten section 2." in episodes(store)[0].text


# -- Telegram ---------------------------------------------------------------------------------


def test_telegram_one_chat_text_entities_media_and_service_messages(
    store: Store, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "result.json", telegram_chat())
    chat = ChatImport()
    report = import_file(store, path, chat=chat)
    assert (report.imported, report.errors) == (1, [])
    (family,) = episodes(store)
    assert family.source == "Family 👨‍👩‍👧"
    assert family.messages == [
        {"role": "user", "name": "Ann", "content": "Happy new year! 🎉"},
        {"role": "user", "name": "Борис", "content": "С Новым годом, @ann"},
        {"role": "user", "name": "Ann", "content": "[photo]"},
        {"role": "user", "name": "Борис", "content": "[sticker 😂]"},
    ]
    assert family.timestamp.isoformat() == "2024-01-01T10:01:00+00:00"
    assert family.metadata["import"]["message_ids"] == ["2", "3", "4", "5"]
    assert family.metadata["import"]["per"] == "window 20"
    assert chat.skipped[str(path)]["service messages"] == 1


def test_telegram_full_export_reads_every_chat_and_left_chats(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "result.json", telegram_full())
    chat = ChatImport(per=parse_granularity("message"))
    report = import_file(store, path, chat=chat)
    assert report.errors == []
    sources = sorted({e.source for e in episodes(store)})
    assert sources == ["Family 👨‍👩‍👧", "Old club", "Work"]
    assert report.imported == 6
    assert chat.skipped[str(path)]["empty chats"] == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m: m.update(text=7), "'text' must be a string or an array, not a number"),
        (lambda m: m.update(text=[{"type": "bold"}]), "a 'text' entity must be a string"),
        (lambda m: m.update(date_unixtime="noon"), "'date_unixtime' 'noon' is not a number"),
        (lambda m: m.update(text="\x1b[8m hidden"), "contains"),
        (lambda m: m.update(type=None), "'type' must be a string, not null"),
    ],
)
def test_telegram_bad_messages_are_numbered(store: Store, tmp_path: Path, change, reason) -> None:
    data = telegram_full()
    change(data["chats"]["list"][0]["messages"][2])
    path = write_json(tmp_path / "result.json", data)
    report = import_file(store, path, chat=ChatImport())
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(f"{path}: chat 1, message 3: ")
    assert reason in report.errors[0].reason
    # The rest of that chat and the other chats are imported.
    assert {e.source for e in episodes(store)} == {"Family 👨‍👩‍👧", "Work", "Old club"}


def test_telegram_wrong_shape_of_chats_is_one_error(store: Store, tmp_path: Path) -> None:
    data = telegram_full()
    data["chats"] = {"list": {"not": "a list"}}
    path = write_json(tmp_path / "result.json", data)
    report = import_file(store, path, chat=ChatImport())
    assert [e.line for e in report.errors] == [0]
    assert "'chats' must be an object with a 'list' array" in report.errors[0].reason
    assert episodes(store) == []


def test_telegram_truncated_is_one_error(store: Store, tmp_path: Path) -> None:
    text = json.dumps(telegram_full(), indent=1)
    path = tmp_path / "result.json"
    path.write_text(text[:-40], "utf-8")
    report = import_file(store, path, chat=ChatImport(format="telegram"))
    assert len(report.errors) == 1 and "(file cut off?)" in report.errors[0].reason
    assert episodes(store) == []


def test_repeats_with_their_own_message_ids_are_each_kept(store: Store, tmp_path: Path) -> None:
    """An album of three photos sent in one second, one episode a message: three
    episodes (the second and third were "already present" and lost), and the same file
    again adds none of them twice."""
    data = telegram_full()
    photo = {"type": "message", "date": "2024-02-02T08:00:00", "date_unixtime": "1706860800",
             "from": "Lee", "from_id": "user3", "text": "", "photo": "photos/p.jpg"}  # fmt: skip
    data["chats"]["list"][1]["messages"] = [{"id": n, **photo} for n in (11, 12, 13)]
    path = write_json(tmp_path / "result.json", data)
    per_message = parse_granularity("message")
    first = import_file(store, path, chat=ChatImport(per=per_message))
    albums = [e for e in episodes(store) if e.source == "Work"]
    assert len(albums) == 3 and len({e.content_hash for e in albums}) == 3
    again = import_file(store, path, chat=ChatImport(per=per_message))
    assert (again.imported, again.duplicates) == (0, first.imported)
