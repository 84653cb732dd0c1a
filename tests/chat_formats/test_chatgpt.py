"""ChatGPT ``conversations.json``: the branch that ends at ``current_node``, nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.chat_formats import ChatImport, parse_granularity
from curator.store.db import Store
from curator.store.episode_records import MAX_EPISODE_CHARS
from curator.store.importer import import_file
from tests.chat_formats.exports import T0, chatgpt_export, episodes, gpt_node, write_json


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "chats.sqlite")
    yield s
    s.close()


def test_the_current_branch_is_read_and_abandoned_branches_are_not(
    store: Store, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "conversations.json", chatgpt_export())
    chat = ChatImport()
    report = import_file(store, path, chat=chat)
    assert (report.imported, report.errors) == (2, [])
    lisbon, kyoto = episodes(store)
    assert lisbon.text == (
        "user: Plan a trip to Lisbon 🇵🇹\n"
        "assistant: Three days: Alfama, Belém, Sintra.\n"
        "user: And on a budget?\n"
        "assistant: Stay in Graça; take tram 28."
    )
    assert lisbon.source == "Lisbon trip ✈️"
    assert lisbon.timestamp.timestamp() == T0 + 1
    assert lisbon.metadata["import"] == {
        "format": "chatgpt",
        "file": str(path),
        "conversation_id": "conv-lisbon",
        "message_ids": ["msg-u1", "msg-a1b", "msg-u2b", "msg-a2"],
        "per": "conversation",
    }
    # Non-text content is named, never dropped silently; code is text.
    assert kyoto.text == (
        "user: [image]\nこの写真の場所はどこですか？\n"
        "assistant: print('京都')\n"
        "tool: [non-text content: tether_browsing_display]"
    )
    assert chat.formats == {str(path): "chatgpt"}
    assert chat.skipped[str(path)] == {
        "empty conversations": 1,
        "messages without text": 1,
        "non-text parts (named)": 1,
        "non-text content (named)": 1,
    }


def test_per_message_and_window(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "conversations.json", chatgpt_export())
    import_file(store, path, chat=ChatImport(per=parse_granularity("message")))
    rows = episodes(store)
    assert len(rows) == 7
    assert rows[0].messages == [{"role": "user", "content": "Plan a trip to Lisbon 🇵🇹"}]
    assert rows[0].external_id == "msg-u1"
    assert rows[0].metadata["import"]["message_ids"] == ["msg-u1"]
    report = import_file(store, path, chat=ChatImport(per=parse_granularity("window:3")))
    # Windows of 3 over 4 and 3 messages: the window holding only the last Lisbon message
    # is the per-message episode already there (same body, source and time).
    assert (report.imported, report.duplicates) == (2, 1)
    windows = [e for e in episodes(store) if e.metadata["import"]["per"] == "window 3"]
    assert [len(e.messages) for e in windows] == [3, 3]


def test_a_reimport_adds_nothing(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "conversations.json", chatgpt_export())
    assert import_file(store, path, chat=ChatImport()).imported == 2
    again = import_file(store, path, chat=ChatImport())
    assert (again.imported, again.duplicates, again.errors) == (0, 2, [])


def test_a_bad_conversation_is_numbered_and_the_others_are_imported(
    store: Store, tmp_path: Path
) -> None:
    data = chatgpt_export()
    data[1]["mapping"] = ["not", "an", "object"]
    path = write_json(tmp_path / "conversations.json", data)
    report = import_file(store, path, chat=ChatImport(format="chatgpt"))
    assert report.imported == 1
    assert [str(e) for e in report.errors] == [
        f"{path}: conversation 2: 'mapping' must be an object, not an array"
    ]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m: m["u1"].update(parent="a2"), "the branch to 'current_node' loops at node"),
        (lambda m: m.pop("u2b"), "node 'u2b' on the branch to 'current_node' is missing"),
    ],
)
def test_a_broken_tree_refuses_its_conversation_with_its_position(
    store: Store, tmp_path: Path, change, reason: str
) -> None:
    """Without a whole branch there is no order to read the messages in."""
    data = chatgpt_export()
    change(data[0]["mapping"])
    path = write_json(tmp_path / "conversations.json", data)
    report = import_file(store, path, chat=ChatImport())
    assert report.imported == 1  # the Kyoto conversation
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(f"{path}: conversation 1")
    assert reason in str(report.errors[0])


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m: m["a2"]["message"].update(author="assistant"), "message 5: 'author' must be"),
        (
            lambda m: m["a2"]["message"]["content"].update(parts="text"),
            "message 5: 'parts' must be an array, not a string",
        ),
        (
            lambda m: m["a2"]["message"].update(create_time="yesterday"),
            "message 5: 'create_time' 'yesterday' is not a number of seconds",
        ),
        (
            lambda m: m["a2"]["message"]["content"].update(parts=["bell \x07"]),
            "message 5: the message contains",
        ),
        (lambda m: m["a1b"]["message"].update(author="assistant"), "message 3: 'author' must be"),
    ],
)
def test_a_bad_message_is_refused_with_its_position_and_the_rest_is_imported(
    store: Store, tmp_path: Path, change, reason: str
) -> None:
    """As in every other reader: the bad message is the error, the rest of its branch
    is still the conversation (per message, each of the others is an episode)."""
    data = chatgpt_export()
    change(data[0]["mapping"])
    path = write_json(tmp_path / "conversations.json", data)
    report = import_file(store, path, chat=ChatImport())
    assert report.imported == 2  # Lisbon without the bad message, and Kyoto
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(f"{path}: conversation 1, message ")
    assert reason in str(report.errors[0])
    lisbon = episodes(store)[0]
    assert len(lisbon.messages) == 3
    per_message = tmp_path / "per-message.sqlite"
    other = Store(per_message)
    try:
        each = import_file(other, path, chat=ChatImport(per=parse_granularity("message")))
        assert (each.imported, len(each.errors)) == (6, 1)  # 7 messages, one refused
    finally:
        other.close()


def test_an_enormous_message_is_rejected_with_its_position(store: Store, tmp_path: Path) -> None:
    data = chatgpt_export()
    data[0]["mapping"]["a2"]["message"]["content"]["parts"] = ["x" * (MAX_EPISODE_CHARS + 1)]
    path = write_json(tmp_path / "conversations.json", data)
    report = import_file(store, path, chat=ChatImport())
    assert [str(e) for e in report.errors] == [
        f"{path}: conversation 1, message 5: the message is 1,000,001 characters, "
        "over the 1,000,000 limit"
    ]
    assert report.imported == 2  # Lisbon without that message, and Kyoto


def test_a_conversation_over_the_limit_as_a_whole_asks_for_a_smaller_per(
    store: Store, tmp_path: Path
) -> None:
    half = "y" * (MAX_EPISODE_CHARS // 2 + 10)
    mapping = {
        "r": gpt_node("r", None, None, children=["a"]),
        "a": gpt_node("a", "r", "user", half, children=["b"]),
        "b": gpt_node("b", "a", "assistant", half),
    }
    path = write_json(
        tmp_path / "c.json", [{"title": "big", "id": "x", "mapping": mapping, "current_node": "b"}]
    )
    report = import_file(store, path, chat=ChatImport())
    assert report.imported == 0
    assert "conversation 1, messages 1-2: episode is" in str(report.errors[0])
    assert "--per" in str(report.errors[0])
    per_message = import_file(store, path, chat=ChatImport(per=parse_granularity("message")))
    assert (per_message.imported, per_message.errors) == (2, [])


def test_a_truncated_export_is_one_error_and_nothing_is_imported(
    store: Store, tmp_path: Path
) -> None:
    text = json.dumps(chatgpt_export())
    path = tmp_path / "conversations.json"
    path.write_text(text[: len(text) // 2], "utf-8")
    report = import_file(store, path, chat=ChatImport(format="chatgpt"))
    assert report.imported == 0 and episodes(store) == []
    assert len(report.errors) == 1
    assert report.errors[0].line == 0
    assert "not a readable chatgpt export: invalid JSON" in str(report.errors[0])
    assert "(file cut off?)" in str(report.errors[0])


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "indented"])
def test_a_cut_off_export_is_one_error_when_its_keys_start_after_64_kib(
    store: Store, tmp_path: Path, indent: int | None
) -> None:
    """Found without ``--format``: a first conversation over 64 KiB pushed the keys that
    say "ChatGPT" past the start that was looked at, and the file was read as episodes,
    one error a conversation."""
    export = chatgpt_export()
    long_title = "x" * 70_000
    export = [{**export[0], "title": long_title}, *export * 20]
    text = json.dumps(export, indent=indent)
    path = tmp_path / "conversations.json"
    path.write_text(text[:-40], "utf-8")
    report = import_file(store, path, chat=ChatImport())
    assert len(report.errors) == 1 and report.imported == 0
    assert "not a readable chatgpt export: invalid JSON" in str(report.errors[0])


def test_a_damaged_first_conversation_does_not_hide_the_export(
    store: Store, tmp_path: Path
) -> None:
    """Recognised by any of its first conversations: without the first one's
    ``current_node`` the whole export was read as episodes and every conversation
    refused."""
    export = chatgpt_export()
    damaged = {k: v for k, v in export[0].items() if k != "current_node"}
    path = write_json(tmp_path / "conversations.json", [damaged, *export[1:]])
    report = import_file(store, path, chat=ChatImport())
    assert report.imported == 1  # the second (the third is empty)
    assert [e.reason.split(":")[0] for e in report.errors] == ["conversation 1"]


def test_episode_files_holding_an_exports_keys_stay_episode_files(
    store: Store, tmp_path: Path
) -> None:
    """Episodes whose metadata happens to hold ChatGPT's key names: a JSON Lines file whose
    first line is damaged, and a JSON array with one such episode among twenty, are still
    episode files (one was refused whole, the other read as a broken export)."""
    keys = {"mapping": None, "current_node": None}
    lines = ["{damaged"] + [
        json.dumps({"content": f"note {n}", "metadata": keys}) for n in range(1, 10)
    ]
    jsonl = tmp_path / "episodes.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", "utf-8")
    report = import_file(store, jsonl, chat=ChatImport())
    assert (report.imported, [e.line for e in report.errors]) == (9, [1])
    array = [{"content": f"item {n}"} for n in range(19)]
    array.insert(3, {"content": "item with keys", **keys})
    report = import_file(store, write_json(tmp_path / "array.json", array), chat=ChatImport())
    assert (report.imported, report.errors) == (20, [])


def test_a_title_over_two_lines_is_a_source_on_one(store: Store, tmp_path: Path) -> None:
    export = chatgpt_export()
    export[0]["title"] = "Lisbon\ntrip\t\u202eplan"
    report = import_file(store, write_json(tmp_path / "c.json", export), chat=ChatImport())
    assert report.errors == []
    assert "Lisbon trip plan" in {e.source for e in episodes(store)}


def test_not_an_array_is_one_error(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "c.json", {"conversations": chatgpt_export()})
    report = import_file(store, path, chat=ChatImport(format="chatgpt"))
    assert [e.reason for e in report.errors] == [
        "not a readable chatgpt export: a ChatGPT export is an array of conversations, "
        "not an object; nothing was imported"
    ]


def test_reading_an_export_reports_no_total_it_does_not_know(store: Store, tmp_path: Path) -> None:
    """A JSON Lines file's lines are counted first, so its progress has a total; a chat
    export's episodes are not known until it is read, so reading reports none (the
    window's bar then shows "busy", not a full bar while the reading goes on), and only
    the write, whose total is known, reports one."""
    path = write_json(tmp_path / "conversations.json", chatgpt_export())
    calls: list[tuple[int, int]] = []
    import_file(store, path, chat=ChatImport(), progress=lambda d, t: calls.append((d, t)))
    reading = calls[: calls.index(next(c for c in calls if c[1] > 0))]
    assert reading and all(total == 0 for _, total in reading)
    assert calls[-1][0] == calls[-1][1] == 2  # the write: both episodes


def test_the_limit_counts_roles_and_names_too(store: Store, tmp_path: Path) -> None:
    """What is stored is measured, as in episode files: roles of 900,000 characters
    behind a tool's short name pass no limit that measures the text shown."""
    role = "r" * 900_000
    mapping = {
        "a": gpt_node("a", None, role + "a", "hi a", children=["b"]),
        "b": gpt_node("b", "a", role + "b", "hi b", children=["c"]),
        "c": gpt_node("c", "b", role + "c", "hi c"),
    }
    for node in mapping.values():
        node["message"]["author"]["name"] = "tool"
    path = write_json(
        tmp_path / "c.json", [{"title": "t", "mapping": mapping, "current_node": "c"}]
    )
    report = import_file(store, path, chat=ChatImport())
    assert report.imported == 0 and episodes(store) == []
    assert "messages 1-3: episode is 2,700,027 characters, over the 1,000,000 limit" in str(
        report.errors[0]
    )


def test_a_refused_message_is_not_counted_as_left_out(store: Store, tmp_path: Path) -> None:
    """What a message left out is counted once the message is read: a message refused
    for a later part counts none of its earlier parts as named or left out."""
    data = chatgpt_export()[:1]
    data[0]["mapping"]["u1"]["message"]["content"]["parts"] = [
        {"content_type": "image_asset_pointer"},
        5,
    ]
    path = write_json(tmp_path / "conversations.json", data)
    chat = ChatImport()
    report = import_file(store, path, chat=chat)
    assert [str(e).split(": ", 1)[1] for e in report.errors] == [
        "conversation 1, message 2: a part must be a string or an object, not a number"
    ]
    assert "non-text parts (named)" not in chat.skipped[str(path)]
    assert chat.skipped[str(path)]["messages without text"] == 1  # the empty system prompt
