"""Chat exports shaped as each format's documentation describes them, built in the test.

Each builder returns the decoded JSON (or writes the files) of a small but complete export:
several conversations, edits and regenerations, attachments, emoji, non-Latin scripts and
an empty conversation, so each test can change one thing and see what the reader makes of
it.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from curator.store.db import Store
from curator.store.models import Episode

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z


def episodes(store: Store) -> list[Episode]:
    del store  # the store is bound; the argument says which database is read
    return list(Episode.select().order_by(Episode.id))


# -- ChatGPT ----------------------------------------------------------------------------------


def gpt_node(
    node_id: str,
    parent: str | None,
    role: str | None,
    text: Any = None,
    *,
    children: list[str] | None = None,
    time: float | None = None,
    content: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message = None
    if role is not None:
        message = {
            "id": f"msg-{node_id}",
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": time,
            "update_time": None,
            "content": content or {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "metadata": {},
            "recipient": "all",
        }
    return {"id": node_id, "message": message, "parent": parent, "children": children or []}


def chatgpt_export() -> list[dict[str, Any]]:
    """Three conversations: one with a regenerated answer and an edited prompt (the current
    branch is the second of each), one in Japanese with an image and code, one empty."""
    trip = {
        "root": gpt_node("root", None, None, children=["sys"]),
        "sys": gpt_node("sys", "root", "system", "", children=["u1"]),
        "u1": gpt_node("u1", "sys", "user", "Plan a trip to Lisbon 🇵🇹", children=["a1", "a1b"],
                       time=T0 + 1),
        "a1": gpt_node("a1", "u1", "assistant", "Old answer (regenerated away)", time=T0 + 2),
        "a1b": gpt_node("a1b", "u1", "assistant", "Three days: Alfama, Belém, Sintra.",
                        children=["u2", "u2b"], time=T0 + 3),
        "u2": gpt_node("u2", "a1b", "user", "Cheaper? (first wording, edited away)", time=T0 + 4),
        "u2b": gpt_node("u2b", "a1b", "user", "And on a budget?", children=["a2"], time=T0 + 5),
        "a2": gpt_node("a2", "u2b", "assistant", "Stay in Graça; take tram 28.", time=T0 + 6),
    }  # fmt: skip
    jp = {
        "r": gpt_node("r", None, None, children=["q"]),
        "q": gpt_node(
            "q", "r", "user", time=T0 + 100, children=["c"],
            content={"content_type": "multimodal_text", "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                "この写真の場所はどこですか？",
            ]},
        ),
        "c": gpt_node("c", "q", "assistant", time=T0 + 101, children=["t"],
                      content={"content_type": "code", "language": "python",
                               "text": "print('京都')"}),
        "t": gpt_node("t", "c", "tool", time=T0 + 102,
                      content={"content_type": "tether_browsing_display", "result": "..."}),
    }  # fmt: skip
    return [
        {"title": "Lisbon trip ✈️", "create_time": T0, "update_time": T0 + 6, "mapping": trip,
         "current_node": "a2", "conversation_id": "conv-lisbon", "id": "conv-lisbon"},
        {"title": "京都の写真", "create_time": T0 + 100, "update_time": T0 + 102, "mapping": jp,
         "current_node": "t", "conversation_id": "conv-kyoto", "id": "conv-kyoto"},
        {"title": "New chat", "create_time": T0 + 200, "update_time": T0 + 200, "mapping": {},
         "current_node": None, "conversation_id": "conv-empty", "id": "conv-empty"},
    ]  # fmt: skip


# -- Claude -----------------------------------------------------------------------------------


def claude_export() -> list[dict[str, Any]]:
    def msg(uuid: str, sender: str, text: str, when: str, **extra: Any) -> dict[str, Any]:
        return {"uuid": uuid, "text": text, "sender": sender, "created_at": when,
                "updated_at": when, "attachments": [], "files": [], **extra}  # fmt: skip

    return [
        {
            "uuid": "c-1", "name": "Résumé review", "created_at": "2024-03-01T09:00:00.000000Z",
            "updated_at": "2024-03-01T09:05:00Z", "account": {"uuid": "acc"},
            "chat_messages": [
                msg("m-1", "human", "", "2024-03-01T09:00:00.000000Z",
                    content=[{"type": "text", "text": "Please review my CV 🙏"}],
                    attachments=[{"file_name": "cv.pdf", "file_type": "pdf",
                                  "extracted_content": "John Doe, engineer"}]),
                msg("m-2", "assistant", "Your summary is strong; shorten section 2.",
                    "2024-03-01T09:01:00Z"),
            ],
        },
        {
            "uuid": "c-2", "name": "Привет", "created_at": "2024-03-02T10:00:00Z",
            "chat_messages": [
                msg("m-3", "human", "Как дела?", "2024-03-02T10:00:00+03:00"),
                msg("m-4", "assistant", "", "2024-03-02T07:00:05Z",
                    content=[{"type": "tool_use", "name": "search", "input": {}},
                             {"type": "text", "text": "Хорошо, спасибо!"}]),
            ],
        },
        {"uuid": "c-3", "name": "", "created_at": "2024-03-03T10:00:00Z", "chat_messages": []},
    ]  # fmt: skip


# -- Telegram ---------------------------------------------------------------------------------


def telegram_chat(chat_id: int = 4242, name: str = "Family 👨‍👩‍👧") -> dict[str, Any]:
    return {
        "name": name, "type": "private_group", "id": chat_id,
        "messages": [
            {"id": 1, "type": "service", "date": "2024-01-01T10:00:00",
             "date_unixtime": "1704103200", "actor": "Ann", "action": "create_group",
             "text": ""},
            {"id": 2, "type": "message", "date": "2024-01-01T10:01:00",
             "date_unixtime": "1704103260", "from": "Ann", "from_id": "user1",
             "text": "Happy new year! 🎉", "text_entities": [{"type": "plain", "text": "x"}]},
            {"id": 3, "type": "message", "date": "2024-01-01T10:02:00",
             "date_unixtime": "1704103320", "edited": "2024-01-01T10:03:00",
             "edited_unixtime": "1704103380", "from": "Борис", "from_id": "user2",
             "text": ["С ", {"type": "bold", "text": "Новым"}, " годом, ",
                      {"type": "mention", "text": "@ann"}]},
            {"id": 4, "type": "message", "date": "2024-01-01T10:04:00",
             "date_unixtime": "1704103440", "from": "Ann", "from_id": "user1",
             "photo": "photos/photo_1.jpg", "width": 800, "height": 600, "text": ""},
            {"id": 5, "type": "message", "date": "2024-01-01T10:05:00",
             "date_unixtime": "1704103500", "from": "Борис", "from_id": "user2",
             "file": "stickers/s.webp", "media_type": "sticker", "sticker_emoji": "😂",
             "text": ""},
        ],
    }  # fmt: skip


def telegram_full() -> dict[str, Any]:
    return {
        "about": "Here is the data you requested.",
        "personal_information": {"user_id": 1, "first_name": "Ann"},
        "chats": {"about": "This page lists all chats.", "list": [
            telegram_chat(),
            {"name": "Work", "type": "personal_chat", "id": 7, "messages": [
                {"id": 10, "type": "message", "date": "2024-02-02T08:00:00",
                 "date_unixtime": "1706860800", "from": "Lee", "from_id": "user3",
                 "text": "standup moved to 9:30"}]},
            {"name": "Quiet", "type": "personal_chat", "id": 8, "messages": []},
        ]},
        "left_chats": {"about": "Chats you left.", "list": [
            {"name": "Old club", "type": "public_supergroup", "id": 9, "messages": [
                {"id": 20, "type": "message", "date": "2023-05-05T05:05:05",
                 "date_unixtime": "1683263105", "from": "Kim", "from_id": "user4",
                 "text": "bye all"}]},
        ]},
    }  # fmt: skip


# -- Discord (DiscordChatExporter) ------------------------------------------------------------


def discord_export() -> dict[str, Any]:
    def author(uid: str, name: str, nick: str, bot: bool = False) -> dict[str, Any]:
        return {"id": uid, "name": name, "discriminator": "0000", "nickname": nick,
                "color": None, "isBot": bot, "roles": [], "avatarUrl": "https://x/a.png",
                }  # fmt: skip

    def msg(mid: str, kind: str, when: str, content: str, who: dict[str, Any], **extra: Any):
        return {"id": mid, "type": kind, "timestamp": when, "timestampEdited": None,
                "callEndedTimestamp": None, "isPinned": False, "content": content,
                "author": who, "attachments": [], "embeds": [], "stickers": [],
                "reactions": [], "mentions": [], **extra}  # fmt: skip

    ann = author("1", "ann", "Ann")
    bot = author("2", "agentbot", "Agent", bot=True)
    return {
        "guild": {"id": "100", "name": "Lab", "iconUrl": "https://x/i.png"},
        "channel": {"id": "200", "type": "GuildTextChat", "categoryId": "300",
                    "category": "Text", "name": "agent-log", "topic": None},
        "dateRange": {"after": None, "before": None},
        "exportedAt": "2024-04-01T00:00:00+00:00",
        "messages": [
            msg("9001", "GuildMemberJoin", "2024-03-31T10:00:00+00:00", "", ann),
            msg("9002", "Default", "2024-03-31T10:01:00.123+00:00", "deploy failed again 😩", ann),
            msg("9003", "Reply", "2024-03-31T10:02:00+02:00", "Rolled back to v1.2.", bot,
                timestampEdited="2024-03-31T10:03:00+02:00",
                reference={"messageId": "9002", "channelId": "200"}),
            msg("9004", "Default", "2024-03-31T10:05:00+00:00", "", ann,
                attachments=[{"id": "a1", "url": "https://cdn/x.png", "fileName": "trace.png",
                              "fileSizeBytes": 1234}]),
            msg("9005", "ChannelPinnedMessage", "2024-03-31T10:06:00+00:00", "", ann),
            msg("9006", "Default", "2024-03-31T10:07:00+00:00", "日本語もOK", ann),
        ],
        "messageCount": 6,
    }  # fmt: skip


# -- Slack ------------------------------------------------------------------------------------


def slack_files() -> dict[str, Any]:
    """An export's files by name: users, channels, a DM, and a day file per channel day."""
    return {
        "users.json": [
            {"id": "U1", "name": "ann", "real_name": "Ann Lee",
             "profile": {"display_name": "Ann", "real_name": "Ann Lee"}},
            {"id": "U2", "name": "bo", "profile": {"display_name": "", "real_name": "Bo Chen"}},
            {"id": "B1", "name": "deploybot", "is_bot": True, "profile": {"display_name": ""}},
        ],
        "channels.json": [
            {"id": "C1", "name": "general", "created": T0, "members": ["U1", "U2"]},
            {"id": "C2", "name": "random", "created": T0, "members": ["U1"]},
        ],
        "dms.json": [{"id": "D1", "created": T0, "members": ["U1", "U2"]}],
        "general/2024-05-01.json": [
            {"type": "message", "subtype": "channel_join", "user": "U2", "text": "<@U2> has joined",
             "ts": "1714550400.000100"},
            {"type": "message", "user": "U1", "text": "Hi <@U2>, see <#C2|random> 👋",
             "ts": "1714550460.000200"},
            {"type": "message", "user": "U2", "text": "你好！ fixed the typo",
             "ts": "1714550520.000300", "edited": {"user": "U2", "ts": "1714550530.000000"}},
        ],
        "general/2024-05-02.json": [
            {"type": "message", "subtype": "bot_message", "bot_id": "B1", "username": "deploybot",
             "text": "Deploy #42 succeeded", "ts": "1714636800.000100"},
            {"type": "message", "user": "U1", "text": "", "ts": "1714636860.000200",
             "files": [{"id": "F1", "name": "plan.pdf"}]},
        ],
        "random/2024-05-01.json": [
            {"type": "message", "subtype": "channel_join", "user": "U1", "text": "joined",
             "ts": "1714550400.000100"},
        ],
        "D1/2024-05-03.json": [
            {"type": "message", "user": "U2", "text": "lunch?", "ts": "1714723200.000100"},
        ],
    }  # fmt: skip


def write_slack_folder(root: Path, files: dict[str, Any] | None = None) -> Path:
    for name, value in (files or slack_files()).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, ensure_ascii=False), "utf-8")
    return root


def write_slack_zip(path: Path, files: dict[str, Any] | None = None, prefix: str = "") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in (files or slack_files()).items():
            archive.writestr(prefix + name, json.dumps(value, ensure_ascii=False))
    return path


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1), "utf-8")
    return path
