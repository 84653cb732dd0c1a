"""The model catalogue: a few instruct GGUFs that suit curation, and where they are saved.

The demo model is too small for real curation, and choosing a GGUF among thousands is hard,
so the application ships a short list (``resources/catalogue.json``) at several sizes. Each
entry names its download URL, its size and SHA-256 where the model repository publishes
them, the RAM it needs, its context length, licence and a one-line note on quality versus
speed. An entry whose checksum could not be confirmed from a published source has
``sha256: null``: the download then reports the computed hash instead of claiming it was
verified. ``--catalogue FILE`` (or the ``catalogue`` argument) replaces the shipped list;
the tests use that to serve the demo model from a loopback server.

Downloads go to ``<user data dir>/models`` (``$CURATOR_MODELS_DIR`` overrides it). Next to
a model file ``FILE`` live only ``FILE.part`` (a download in progress) and ``FILE.lock``
(held while it is downloaded or removed). A catalogue ``file`` must therefore be a plain
name that can never be one of those: no path separator, no control character (NUL
included), not ``.``/``..`` or hidden, not ending in ``.part`` or ``.lock`` (in any case,
for case-insensitive disks) nor in a dot or space (which Windows drops), without the
characters Windows forbids (``< > : " | ? *``), not a Windows device name (``CON``,
``nul.gguf``, ``COM1``...), and at most 250 bytes in UTF-8, so that ``FILE.part`` still
fits the usual 255-byte limit on a name. Two entries may not share a file, again ignoring
case and Unicode normalisation (macOS takes NFC and NFD spellings for one name).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import unicodedata
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from curator.core.redact import redact, shown_url
from curator.errors import CuratorError
from curator.llm.target_lock import LOCK_SUFFIX, target_lock
from curator.resources_path import resource_path

MODELS_DIR_ENV = "CURATOR_MODELS_DIR"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PART_SUFFIX = ".part"
WINDOWS_FORBIDDEN = '<>:"|?*'
"""Characters Windows refuses in a file name (the catalogue is the same on every system)."""
WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL"]
    + [f"{port}{n}" for port in ("COM", "LPT") for n in "123456789\u00b9\u00b2\u00b3"]
)
"""Names Windows takes for a device whatever the extension (``nul.gguf`` is NUL)."""
MAX_FILE_BYTES = 255 - len(PART_SUFFIX)
MAX_CATALOGUE_BYTES = 4 << 20
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""A model's file name leaves room for ``.part`` within the common 255-byte name limit."""


class CatalogueError(CuratorError):
    """The catalogue file is missing or malformed, or names no such model."""

    exit_code = 2


@dataclass(frozen=True)
class CatalogueEntry:
    name: str
    """Short identifier used on the command line (``curator models download NAME``)."""
    title: str
    file: str
    """File name in the models folder."""
    url: str
    size_bytes: int | None
    """As published by the repository; ``None`` when not confirmed."""
    sha256: str | None
    """As published by the repository (LFS pointer); ``None`` when not confirmed."""
    ram_gb: float
    context_length: int
    licence: str
    note: str
    source: str
    """Where the URL (and checksum, if any) was taken from."""

    def as_dict(self) -> dict[str, Any]:
        """The entry as ``models list`` prints it: the URL and its source with any
        credentials or signed parameters masked, as every download message shows them
        (the download itself uses :attr:`url`)."""
        return {
            "name": self.name,
            "title": self.title,
            "file": self.file,
            "url": redact(self.url),
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "ram_gb": self.ram_gb,
            "context_length": self.context_length,
            "licence": self.licence,
            "note": self.note,
            "source": redact(self.source),
        }


def default_catalogue_path() -> Path:
    return resource_path("catalogue.json")


def models_dir() -> Path:
    """Where downloaded models are saved (created on first download, not here)."""
    override = os.environ.get(MODELS_DIR_ENV, "").strip()  # blank: unset, not a folder " "
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("memory-curator", appauthor=False)) / "models"


def load_catalogue(path: str | os.PathLike[str] | None = None) -> list[CatalogueEntry]:
    """Read and check a catalogue file; a bad one is refused with a one-line reason."""
    p = Path(path).expanduser() if path is not None else default_catalogue_path()
    try:
        document = json.loads(_read_catalogue(p))
    except FileNotFoundError as exc:
        raise CatalogueError(f"catalogue not found: {p}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"cannot read the catalogue {p}: {exc}") from exc
    except ValueError as exc:
        raise CatalogueError(f"{p} is not valid JSON: {exc}") from exc
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, list):
        raise CatalogueError(f"{p}: expected an object with a 'models' list")
    entries: list[CatalogueEntry] = []
    for index, raw in enumerate(models):
        entries.append(_entry(p, index, raw))
    names = [e.name for e in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CatalogueError(f"{p}: duplicate model names: {', '.join(duplicates)}")
    owners: dict[str, str] = {}
    for entry in entries:
        other = owners.setdefault(same_file_key(entry.file), entry.name)
        if other != entry.name:
            raise CatalogueError(
                f"{p}: models {other} and {entry.name} share the file {_quoted(entry.file)}"
            )
    return entries


def _read_catalogue(p: Path) -> str:
    """The catalogue's text. ``--catalogue`` names any path: a FIFO or a device would block
    or never end, and a huge file would be read whole, so only a regular file of at most
    :data:`MAX_CATALOGUE_BYTES` is read (opening does not wait for a FIFO's writer)."""
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CatalogueError(f"the catalogue {p} is not a regular file")
        if info.st_size > MAX_CATALOGUE_BYTES:
            raise CatalogueError(
                f"the catalogue {p} is larger than {MAX_CATALOGUE_BYTES:,} bytes; a catalogue "
                "of models is a few kilobytes"
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(MAX_CATALOGUE_BYTES + 1).decode("utf-8")
    finally:
        os.close(fd)


def _quoted(value: str, limit: int = 60) -> str:
    """A name quoted in a one-line message (a hostile one may be thousands of characters)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def file_name_problem(file: str) -> str | None:
    """Why ``file`` cannot be a model's file name in the models folder, or None if it can."""
    if "/" in file or "\\" in file:
        return "must be a plain file name, without a path separator"
    if file in (".", "..") or file.startswith("."):
        return "must not be '.', '..' or a hidden name"
    if any(unicodedata.category(c) == "Cc" for c in file):
        return "must not hold control characters (NUL, line breaks, ...)"
    try:
        size = len(file.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if size > MAX_FILE_BYTES:
        return f"is {size:,} bytes long (at most {MAX_FILE_BYTES} in UTF-8)"
    lowered = file.casefold()
    if lowered.endswith((PART_SUFFIX, LOCK_SUFFIX)):
        return "must not end in .part or .lock (the names of partial downloads and locks)"
    if file.endswith((".", " ")):
        return "must not end in a dot or a space"
    if any(c in WINDOWS_FORBIDDEN for c in file):
        return f"must not hold any of {' '.join(WINDOWS_FORBIDDEN)} (Windows cannot name a file so)"
    device = file.split(".", 1)[0].rstrip(" ").upper()
    if device in WINDOWS_DEVICES:
        return f"is the Windows device name {device}, whatever its extension"
    return None


def same_file_key(file: str) -> str:
    """What two names share when a file system may take them for one file: case (Windows,
    macOS) and Unicode normalisation (macOS: NFC "é" and NFD "e" + accent are one name)."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", file).casefold())


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be downloaded from, or None if it looks like an http(s) address."""
    if not url.startswith(("https://", "http://")):
        return "must be an http(s) address"
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in url):
        return "must not hold spaces or control characters"
    try:
        url.encode("utf-8")
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except (UnicodeEncodeError, ValueError):
        return "is not a valid address"
    if not host:
        return "has no host"
    return None


def _entry(path: Path, index: int, raw: Any) -> CatalogueEntry:
    where = f"{path}: model #{index + 1}"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where} is not an object")

    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise CatalogueError(f"{where}: '{key}' must be a non-empty string")
        if any(unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS for c in value):
            # Printed by `curator models list`: a terminal would obey an escape.
            raise CatalogueError(
                f"{where}: '{key}' must not hold control characters (escapes, line breaks, "
                "right-to-left overrides)"
            )
        return value.strip()

    name = text("name")
    if not _NAME.match(name):
        raise CatalogueError(f"{where}: name {name!r} may hold only letters, digits, . _ -")
    file = text("file")
    problem = file_name_problem(file)
    if problem is not None:
        raise CatalogueError(f"{where}: 'file' {problem}, not {_quoted(file)}")
    url = text("url")
    problem = url_problem(url)
    if problem is not None:
        raise CatalogueError(f"{where}: 'url' {problem}: {shown_url(url, 120)!r}")
    sha = raw.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA256.match(sha.lower())):
        raise CatalogueError(f"{where}: 'sha256' must be 64 hex digits or null")
    size = raw.get("size_bytes")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        raise CatalogueError(f"{where}: 'size_bytes' must be a positive integer or null")
    ram = raw.get("ram_gb", 0)
    ctx = raw.get("context_length", 0)
    if not isinstance(ram, int | float) or isinstance(ram, bool) or not 0 <= ram < math.inf:
        raise CatalogueError(f"{where}: 'ram_gb' must be a number")
    if not isinstance(ctx, int) or isinstance(ctx, bool) or ctx < 0:
        raise CatalogueError(f"{where}: 'context_length' must be an integer")
    return CatalogueEntry(
        name=name,
        title=text("title", name),
        file=file,
        url=url,
        size_bytes=size,
        sha256=sha.lower() if isinstance(sha, str) else None,
        ram_gb=float(ram),
        context_length=ctx,
        licence=text("licence", "see the model card"),
        note=text("note", "-"),
        source=text("source", url),
    )


def find_entry(entries: list[CatalogueEntry], name: str) -> CatalogueEntry:
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries) or "none"
    raise CatalogueError(f"no model named {name!r} in the catalogue (known: {known})")


def installed_path(entry: CatalogueEntry, directory: Path | None = None) -> Path:
    return (directory or models_dir()) / entry.file


def partial_path(entry: CatalogueEntry, directory: Path | None = None) -> Path:
    """``FILE.part``: no valid model file name ends in ``.part``, so it is nobody's target."""
    return (directory or models_dir()) / (entry.file + PART_SUFFIX)


def entry_state(entry: CatalogueEntry, directory: Path | None = None) -> str:
    """``downloaded``, ``partial (N bytes)`` or ``not downloaded``."""
    if installed_path(entry, directory).is_file():
        return "downloaded"
    part = partial_path(entry, directory)
    if part.is_file():
        return f"partial ({part.stat().st_size:,} bytes)"
    return "not downloaded"


def remove_model(entry: CatalogueEntry, directory: Path | None = None) -> list[Path]:
    """Delete a downloaded model and any partial download of it; returns what was deleted."""
    target = installed_path(entry, directory)
    if not target.is_file() and not partial_path(entry, directory).is_file():
        raise CuratorError(f"{entry.name} is not downloaded (nothing in {target.parent})")
    busy = f"{entry.name} is being downloaded right now; cancel that download first"
    removed: list[Path] = []
    with target_lock(target, busy):
        for p in (target, partial_path(entry, directory)):
            if p.is_file():
                try:
                    p.unlink()
                except OSError as exc:
                    raise CuratorError(f"cannot delete {p}: {exc.strerror or exc}") from exc
                removed.append(p)
    if not removed:
        raise CuratorError(f"{entry.name} is not downloaded (nothing in {target.parent})")
    return removed
