"""DiscordChatExporter JSON and the Slack export (zip or folder), hostile zips included."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from curator.chat_formats import ChatImport, parse_granularity, slack
from curator.store.db import Store
from curator.store.importer import import_file
from tests.chat_formats.exports import (
    discord_export,
    episodes,
    slack_files,
    write_json,
    write_slack_folder,
    write_slack_zip,
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "chats.sqlite")
    yield s
    s.close()


# -- Discord ----------------------------------------------------------------------------------


def test_discord_channel_messages_bots_attachments_and_system_messages(
    store: Store, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "Lab - agent-log [200].json", discord_export())
    chat = ChatImport()
    report = import_file(store, path, chat=chat)
    assert (report.imported, report.errors) == (1, [])
    (log,) = episodes(store)
    assert log.source == "Lab #agent-log"
    assert log.messages == [
        {"role": "user", "name": "Ann", "content": "deploy failed again 😩"},
        {"role": "assistant", "name": "Agent", "content": "Rolled back to v1.2."},
        {"role": "user", "name": "Ann", "content": "[attachment: trace.png]"},
        {"role": "user", "name": "Ann", "content": "日本語もOK"},
    ]
    assert log.metadata["import"]["conversation_id"] == "200"
    assert log.metadata["import"]["message_ids"] == ["9002", "9003", "9004", "9006"]
    assert log.timestamp.isoformat() == "2024-03-31T08:02:00+00:00"  # the +02:00 reply
    assert chat.skipped[str(path)]["system messages (GuildMemberJoin)"] == 1
    assert chat.skipped[str(path)]["system messages (ChannelPinnedMessage)"] == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m: m.update(content=None), "message 3: 'content' must be a string, not null"),
        (lambda m: m.update(author="Agent"), "message 3: 'author' must be an object"),
        (lambda m: m.update(timestamp=12), "message 3: 'timestamp' must be an ISO 8601 string"),
        (lambda m: m.update(attachments={}), "message 3: 'attachments' must be an array"),
        (lambda m: m.update(embeds="x"), "message 3: 'embeds' must be an array, not a string"),
        (lambda m: m.update(type=["Default"]), "message 3: 'type' must be a string, not an array"),
    ],
)
def test_discord_bad_messages_are_numbered(store: Store, tmp_path: Path, change, reason) -> None:
    data = discord_export()
    change(data["messages"][2])
    path = write_json(tmp_path / "d.json", data)
    report = import_file(store, path, chat=ChatImport(per=parse_granularity("message")))
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(f"{path}: {reason}")
    assert report.imported == 3


# -- Slack ------------------------------------------------------------------------------------


def _slack_expectations(store: Store) -> None:
    rows = {e.source: e for e in episodes(store)}
    assert sorted(rows) == ["#general", "DM Ann, Bo Chen"]
    general = rows["#general"]
    assert general.messages == [
        {"role": "user", "name": "Ann", "content": "Hi @Bo Chen, see #random 👋"},
        {"role": "user", "name": "Bo Chen", "content": "你好！ fixed the typo"},
        {"role": "assistant", "name": "deploybot", "content": "Deploy #42 succeeded"},
        {"role": "user", "name": "Ann", "content": "[file: plan.pdf]"},
    ]
    assert general.metadata["import"]["message_ids"] == [
        "1714550460.000200",
        "1714550520.000300",
        "1714636800.000100",
        "1714636860.000200",
    ]
    assert general.metadata["import"]["conversation_id"] == "C1"


def test_slack_folder(store: Store, tmp_path: Path) -> None:
    folder = write_slack_folder(tmp_path / "export")
    chat = ChatImport()
    report = import_file(store, folder, chat=chat)
    assert (report.imported, report.errors) == (2, [])
    _slack_expectations(store)
    assert chat.formats[str(folder)] == "slack"
    assert chat.skipped[str(folder)]["joins and leaves"] == 2
    assert chat.skipped[str(folder)]["empty conversations"] == 1  # #random: joins only


def test_slack_zip_with_a_wrapping_folder_and_reimport(store: Store, tmp_path: Path) -> None:
    path = write_slack_zip(tmp_path / "Slack export.zip", prefix="Acme Slack export/")
    report = import_file(store, path, chat=ChatImport())
    assert (report.imported, report.errors) == (2, [])
    _slack_expectations(store)
    again = import_file(store, path, chat=ChatImport())
    assert (again.imported, again.duplicates) == (0, 2)


def test_a_bad_day_file_is_reported_and_the_others_read(store: Store, tmp_path: Path) -> None:
    files = slack_files()
    files["general/2024-05-02.json"] = {"not": "a list"}
    files["D1/2024-05-03.json"] = [{"type": "message", "user": "U2", "text": ["x"], "ts": "1"}]
    folder = write_slack_folder(tmp_path / "export", files)
    report = import_file(store, folder, chat=ChatImport())
    assert [str(e) for e in report.errors] == [
        f"{folder}: general/2024-05-02.json: must be an array of messages, not an object",
        f"{folder}: D1/2024-05-03.json, message 1: 'text' must be a string, not an array",
    ]
    assert [e.source for e in episodes(store)] == ["#general"]


def test_a_zip_bomb_is_refused_while_inflating(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is lowered so the test's bomb stays small; the check itself is the real
    one: sizes are counted while inflating, so a header that lies changes nothing."""
    monkeypatch.setattr(slack, "MAX_MEMBER_BYTES", 1024 * 1024)
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in slack_files().items():
            archive.writestr(name, json.dumps(value))
        archive.writestr("general/2024-05-09.json", b"[" + b" " * (4 * 1024 * 1024) + b"]")
    assert path.stat().st_size < 64 * 1024
    report = import_file(store, path, chat=ChatImport())
    assert len(report.errors) == 1 and report.errors[0].line == 0
    assert "'general/2024-05-09.json' unpacks to more than 1 MiB (a zip bomb?)" in str(
        report.errors[0]
    )
    assert episodes(store) == []


def test_a_zip_bomb_over_the_total_is_refused(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack, "MAX_TOTAL_BYTES", 3 * 1024 * 1024)
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in slack_files().items():
            archive.writestr(name, json.dumps(value))
        for day in range(1, 5):
            archive.writestr(f"general/2024-06-0{day}.json", b"[" + b" " * (1024 * 1024) + b"]")
    report = import_file(store, path, chat=ChatImport(format="slack"))
    assert "(a zip bomb?); refused" in str(report.errors[0])
    assert episodes(store) == []


@pytest.mark.parametrize(
    "name", ["../evil.json", "general/../../evil.json", "/etc/evil.json", "C:/evil.json"]
)
def test_path_traversal_names_refuse_the_zip(store: Store, tmp_path: Path, name: str) -> None:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for member, value in slack_files().items():
            archive.writestr(member, json.dumps(value))
        archive.writestr(zipfile.ZipInfo(name), b"[]")
    report = import_file(store, path, chat=ChatImport(format="slack"))
    assert len(report.errors) == 1
    assert "points outside the export; refused" in report.errors[0].reason
    assert episodes(store) == []


def test_a_truncated_zip_is_one_error(store: Store, tmp_path: Path) -> None:
    path = write_slack_zip(tmp_path / "export.zip")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    report = import_file(store, path, chat=ChatImport(format="slack"))
    assert len(report.errors) == 1 and report.errors[0].line == 0
    assert "not a readable slack export" in report.errors[0].reason
    assert episodes(store) == []


def test_a_folder_without_users_is_not_a_slack_export(store: Store, tmp_path: Path) -> None:
    files = slack_files()
    del files["users.json"]
    folder = write_slack_folder(tmp_path / "export", files)
    assert import_file(store, folder, chat=ChatImport()).errors[0].reason == "is a directory"
    forced = import_file(store, folder, chat=ChatImport(format="slack"))
    assert "holds users.json and channels.json" in forced.errors[0].reason


def test_a_link_out_of_a_slack_folder_refuses_it(store: Store, tmp_path: Path) -> None:
    folder = write_slack_folder(tmp_path / "export")
    secret = tmp_path / "secret.json"
    secret.write_text('[{"type": "message", "user": "U1", "text": "private", "ts": "1"}]')
    (folder / "general" / "2024-05-09.json").symlink_to(secret)
    report = import_file(store, folder, chat=ChatImport())
    assert [e.reason for e in report.errors] == [
        "not a readable slack export: 'general/2024-05-09.json' leads outside the export; "
        "nothing was imported"
    ]
    assert episodes(store) == []


def test_a_zip_with_a_member_twice_is_refused(store: Store, tmp_path: Path) -> None:
    """Two members of one name: which one is the export is anyone's guess."""
    path = write_slack_zip(tmp_path / "export.zip")
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(path, "a") as archive,
    ):
        archive.writestr("general/2024-05-01.json", "[]")
    report = import_file(store, path, chat=ChatImport())
    assert [e.reason for e in report.errors] == [
        "not a readable slack export: the zip holds 'general/2024-05-01.json' twice; refused; "
        "nothing was imported"
    ]
    assert episodes(store) == []


def test_a_zip_made_on_windows_reads_its_folders(store: Store, tmp_path: Path) -> None:
    """Backslashes between folders (some Windows zip tools write them): the same export.
    Before, every channel's day file was passed over and the import said 0 imported."""
    path = tmp_path / "windows.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in slack_files().items():
            archive.writestr(name.replace("/", "\\"), json.dumps(content))
    report = import_file(store, path, chat=ChatImport())
    assert (report.imported, report.errors) == (2, [])
    _slack_expectations(store)


def test_a_day_file_over_the_member_limit_is_reported_and_the_rest_read(
    store: Store, tmp_path: Path
) -> None:
    """A folder's file gets the zip member's limit: a sparse file of 300 MiB is refused
    from its size, never read (a day file of gigabytes ran the import out of memory)."""
    folder = write_slack_folder(tmp_path / "export")
    with (folder / "general" / "2024-05-09.json").open("wb") as huge:
        huge.truncate(slack.MAX_MEMBER_BYTES + 1)
    report = import_file(store, folder, chat=ChatImport())
    assert [str(e) for e in report.errors] == [
        f"{folder}: general/2024-05-09.json: over 256 MiB, more than a day of a channel "
        "holds; not read"
    ]
    assert report.imported == 2


def test_a_link_that_loops_in_a_slack_folder_is_one_error(store: Store, tmp_path: Path) -> None:
    folder = write_slack_folder(tmp_path / "export")
    loop = folder / "general" / "2024-05-09.json"
    loop.symlink_to(loop)
    report = import_file(store, folder, chat=ChatImport())
    assert [e.reason for e in report.errors] == [
        "not a readable slack export: 'general/2024-05-09.json' is a link that cannot be "
        "followed (a loop?); nothing was imported"
    ]
