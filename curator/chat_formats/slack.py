"""Slack workspace export: the zip Slack gives, or the folder it unpacks to.

``channels.json`` (and ``groups.json``, ``mpims.json``, ``dms.json`` for private channels and
direct messages) lists the conversations: ``[{"id", "name", ...}]`` (direct messages have
no name: their members' names are used). ``users.json`` maps user ids to people
(``profile.display_name``, ``real_name``, ``name``). Each conversation is a folder named
after it, holding one file per day (``2024-05-01.json``), each an array of messages
``{"type": "message", "subtype"?, "user", "text", "ts", "edited"?, "files"?, ...}``.

Read: messages in order (day files in name order, messages in file order); the text as last
edited (an export holds the edited text and an ``edited`` stamp); user ids turned into
names, also in mentions (``<@U024BE7LH>`` → ``@Ann``) and channel links (``<#C1|general>`` →
``#general``); bot messages (``bot_message``, or a ``bot_id``), with the role ``assistant``;
files named (``[file: plan.pdf]``). Left out and counted: joins, leaves, topic, purpose,
name and archive changes, other subtypes that carry no conversation
(``tombstone``...), messages with no text, day files of folders not listed in a
channel list, and empty conversations.

A zip is read in memory, never unpacked: a member name that is absolute or climbs out of
the export (``../x``), more than :data:`MAX_MEMBERS` members, a member over
:data:`MAX_MEMBER_BYTES` or a total over :data:`MAX_TOTAL_BYTES` unpacked (a zip bomb)
refuses the whole file. Sizes are enforced while inflating, not trusted from the headers.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from curator.chat_formats.common import (
    BadElement,
    BadExport,
    ChatMessage,
    Conversation,
    ElementError,
    Skipped,
    clean,
    epoch_time,
    finished,
    ident,
    list_field,
    load_json,
    optional_text,
    read_messages,
    type_name,
)
from curator.core.zip_errors import ZIP_READ_ERRORS, zip_reason

NAME = "slack"
DEFAULT_PER = "window 20"
MAX_MEMBERS = 200_000
MAX_MEMBER_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024
LISTS = ("channels.json", "groups.json", "mpims.json", "dms.json")
_LEFT_OUT = {
    "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name",
    "channel_archive", "channel_unarchive", "group_join", "group_leave", "group_topic",
    "group_purpose", "group_name", "group_archive", "group_unarchive", "pinned_item",
    "unpinned_item", "tombstone", "message_deleted", "reminder_add", "sh_room_created",
}  # fmt: skip
_KEPT_SUBTYPES = {"bot_message", "thread_broadcast", "me_message", "file_share", "file_comment"}
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")


class Files:
    """Read access to the export's files by relative name (``general/2024-05-01.json``)."""

    def __init__(self, names: list[str], read: Callable[[str], bytes]) -> None:
        self.names = names
        self.read = read


def is_export_folder(path: Path) -> bool:
    return (
        path.is_dir()
        and (path / "users.json").is_file()
        and any((path / name).is_file() for name in LISTS)
    )


def open_folder(path: Path) -> Files:
    """The folder's ``.json`` files; a link that leads out of the folder refuses it (the
    folder's path traversal: a ``general/2024-05-01.json`` that is ``~/.ssh/...``)."""
    root = path.resolve()
    names: list[str] = []
    for file in path.rglob("*.json"):
        name = file.relative_to(path).as_posix()
        try:
            inside = file.resolve().is_relative_to(root)
        except (OSError, RuntimeError):  # a link that loops (RuntimeError before 3.13)
            raise BadExport(f"{name!r} is a link that cannot be followed (a loop?)") from None
        if not inside:
            raise BadExport(f"{name!r} leads outside the export")
        if file.is_file():
            names.append(name)
    return Files(sorted(names), lambda name: _read_file(path / name))


def _read_file(file: Path) -> bytes:
    """One file of an export folder, within the zip member's limit: a day file of
    gigabytes was read whole, and the import ended in an out-of-memory failure."""
    with file.open("rb") as handle:
        too_big = os.fstat(handle.fileno()).st_size > MAX_MEMBER_BYTES
        data = b"" if too_big else handle.read(MAX_MEMBER_BYTES + 1)  # it may grow meanwhile
    if too_big or len(data) > MAX_MEMBER_BYTES:
        raise BadExport(  # reported as the file's error (its name leads), the rest read
            f"over {MAX_MEMBER_BYTES // (1024 * 1024):,} MiB, more than a day of a channel "
            "holds; not read"
        )
    return data


def read_zip(path: Path) -> dict[str, bytes]:
    """Every ``.json`` member of the zip, by name, within the limits (:class:`BadExport`)."""
    try:
        archive = zipfile.ZipFile(path)
    except ZIP_READ_ERRORS as exc:
        raise BadExport(f"not a readable zip ({zip_reason(exc)})") from None
    contents: dict[str, bytes] = {}
    total = 0
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise BadExport(f"the zip has {len(infos):,} members, over the {MAX_MEMBERS:,} limit")
        for info in infos:
            name = info.filename
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                raise BadExport(f"the zip member {name[:80]!r} points outside the export; refused")
            if info.is_dir() or not name.endswith(".json"):
                continue
            # Zips made on Windows may separate folders with backslashes: read as the
            # folders they are (else every channel's day files were passed over in silence)
            name = "/".join(parts)
            if name in contents:
                raise BadExport(f"the zip holds {name[:80]!r} twice; refused")
            data = _inflate(archive, info, MAX_TOTAL_BYTES - total)
            total += len(data)
            contents[name] = data
    return contents


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, room: int) -> bytes:
    """A member's bytes, stopping as soon as it passes a limit (a zip bomb's headers lie)."""
    limit = min(MAX_MEMBER_BYTES, room)
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(1 << 20):
                size += len(chunk)
                if size > limit:
                    which = "member" if limit == MAX_MEMBER_BYTES else "export"
                    raise BadExport(
                        f"the zip {which} {info.filename[:80]!r} unpacks to more than "
                        f"{limit // (1024 * 1024):,} MiB (a zip bomb?); refused"
                    )
                chunks.append(chunk)
    except ZIP_READ_ERRORS as exc:
        raise BadExport(
            f"the zip member {info.filename[:80]!r} cannot be read ({zip_reason(exc)})"
        ) from None
    return b"".join(chunks)


def zip_files(path: Path) -> Files:
    contents = read_zip(path)
    lists = [name for name in contents if PurePosixPath(name).name == "users.json"]
    if not lists:
        raise BadExport(
            "a zip without a Slack export's users.json (the only export read from a zip is "
            "Slack's: unpack another and import its file)"
        )
    if len(lists) > 1:  # one export a zip: a second one would be merged or dropped
        raise BadExport(
            f"the zip holds {len(lists)} exports ({', '.join(repr(n[:80]) for n in lists[:3])}); "
            "import each on its own"
        )
    prefix = _common_prefix(list(contents))
    # A member outside the export's folder (a second export in the same zip) would either
    # be read under another's name or never: refused, never silently dropped or merged.
    outside = next((name for name in contents if not name.startswith(prefix)), None)
    if outside is not None:
        raise BadExport(
            f"the zip member {outside[:80]!r} is outside the export's folder "
            f"{prefix[:80]!r} (one export a zip); refused"
        )
    stripped = {name[len(prefix) :]: data for name, data in contents.items()}
    return Files(sorted(stripped), stripped.__getitem__)


def _common_prefix(names: list[str]) -> str:
    """The folder a zip wraps its export in (``Export Jan 1 2024/``), or ''."""
    for name in names:
        if PurePosixPath(name).name == "users.json":
            parent = str(PurePosixPath(name).parent)
            return "" if parent == "." else parent + "/"
    return ""


def _json(files: Files, name: str) -> Any:
    """One file of the export, read; a file that cannot be read (its permissions, or
    removed since the folder was listed) is that file's error, as a damaged one is: it
    stopped the export half way, naming neither the file nor the channels left unread."""
    try:
        return load_json(files.read(name))
    except BadExport as exc:
        raise BadElement(str(exc)) from None
    except OSError as exc:
        raise BadElement(f"cannot read it ({exc.strerror or exc})") from None


def conversations(
    files: Files, file: str, skipped: Skipped
) -> Iterator[Conversation | ElementError]:
    if "users.json" not in files.names:
        raise BadExport("no users.json in the export")
    try:
        users = _users(_json(files, "users.json"))
    except BadElement as exc:
        raise BadExport(f"users.json: {exc}") from None
    listed: list[tuple[str, dict[str, Any]]] = []
    for list_name in LISTS:
        if list_name not in files.names:
            continue
        try:
            entries = _json(files, list_name)
        except BadElement as exc:
            raise BadExport(f"{list_name}: {exc}") from None
        if not isinstance(entries, list):
            raise BadExport(f"{list_name} must be an array, not {type_name(entries)}")
        listed.extend((list_name, e) for e in entries)
    channel_names: dict[str, str] = {}
    folders: set[str] = set()
    plan: list[tuple[str, str, str, str]] = []  # (where, folder, id, title)
    for number, (list_name, entry) in enumerate(listed, 1):
        where = f"{list_name} entry {number}"
        if not isinstance(entry, dict):
            yield ElementError(file, number, f"{where}: must be an object, not {type_name(entry)}")
            continue
        conv_id = str(entry.get("id", ""))
        name = entry.get("name")
        if isinstance(name, str) and name:
            folder, title = name, f"#{name}"
            channel_names[conv_id] = name
        else:  # a direct message: its folder is its id, its title its members
            members = entry.get("members")
            members = members if isinstance(members, list) else []
            folder = conv_id
            title = "DM " + ", ".join(users.get(str(m), str(m)) for m in members)
        folders.add(folder)
        plan.append((where, folder, conv_id, title))
    unlisted = {n.split("/", 1)[0] for n in files.names if "/" in n} - folders
    for folder in unlisted:
        skipped["day files of unlisted folders"] += sum(
            1 for n in files.names if n.startswith(folder + "/")
        )
    for number, (where, folder, conv_id, title) in enumerate(plan, 1):
        days = [n for n in files.names if n.startswith(folder + "/") and n.count("/") == 1]
        try:
            conversation = Conversation(number, conv_id, clean(title, "the name"), where=where)
        except BadElement as exc:
            yield ElementError(file, number, f"{where}: {exc}")
            continue
        for day in days:
            try:
                messages = _json(files, day)
                if not isinstance(messages, list):
                    raise BadElement(f"must be an array of messages, not {type_name(messages)}")
            except BadElement as exc:
                yield ElementError(file, number, f"{day}: {exc}")
                continue
            yield from read_messages(
                conversation,
                messages,
                lambda m, at, counted: _message(m, at, users, channel_names, counted),
                file,
                number,
                f"{day}, ",
                skipped=skipped,
            )
        yield from finished(conversation, skipped, "empty conversations")


def _users(value: Any) -> dict[str, str]:
    if not isinstance(value, list):
        raise BadElement(f"must be an array of users, not {type_name(value)}")
    names: dict[str, str] = {}
    for user in value:
        if not isinstance(user, dict) or not isinstance(user.get("id"), str):
            raise BadElement("every user must be an object with an 'id' string")
        profile = user.get("profile")
        profile = profile if isinstance(profile, dict) else {}
        for candidate in (
            profile.get("display_name"),
            profile.get("real_name"),
            user.get("real_name"),
            user.get("name"),
        ):
            if isinstance(candidate, str) and candidate.strip():
                names[user["id"]] = candidate.strip()
                break
    return names


def _message(
    message: Any,
    position: str,
    users: dict[str, str],
    channels: dict[str, str],
    skipped: Skipped,
) -> ChatMessage | None:
    if not isinstance(message, dict):
        raise BadElement(f"must be an object, not {type_name(message)}")
    subtype = optional_text(message, "subtype")
    if subtype is not None and subtype not in _KEPT_SUBTYPES:
        kind = "joins and leaves" if "join" in str(subtype) or "leave" in str(subtype) else subtype
        skipped[f"{kind} messages" if kind == subtype else kind] += 1
        return None
    text = message.get("text", "")
    if not isinstance(text, str):
        raise BadElement(f"'text' must be a string, not {type_name(text)}")
    text = _MENTION.sub(lambda m: "@" + users.get(m[1], m[2] or m[1]), text)
    text = _CHANNEL.sub(lambda m: "#" + (m[2] or channels.get(m[1], m[1])), text)
    pieces = [text] if text.strip() else []
    files = list_field(message, "files")
    for item in files:
        name = item.get("name") if isinstance(item, dict) else None
        pieces.append(f"[file: {name}]" if isinstance(name, str) else "[file]")
        skipped["files (named, content left out)"] += 1
    content = clean("\n".join(pieces), "the message")
    if not content.strip():
        skipped["messages without text"] += 1
        return None
    is_bot = subtype == "bot_message" or "bot_id" in message
    user = message.get("user")
    speaker = users.get(user) if isinstance(user, str) else None
    if speaker is None:
        username = message.get("username")
        profile = message.get("user_profile")
        if isinstance(username, str) and username:
            speaker = username
        elif isinstance(profile, dict) and isinstance(profile.get("real_name"), str):
            speaker = profile["real_name"]
        else:
            speaker = user if isinstance(user, str) else None
    ts = message.get("ts")
    return ChatMessage(
        id=ident(ts),
        role="assistant" if is_bot else "user",
        content=content,
        name=clean(speaker, "the speaker") if speaker else None,
        timestamp=epoch_time(ts, "ts"),
        position=position,
    )
