"""The model catalogue: a few instruct GGUFs that suit curation, and where they are saved.

The demo model is too small for real curation, and choosing a GGUF among thousands is hard,
so the application ships a short list (``resources/catalogue.json``) at several sizes. Each
entry names its download URL, its size and SHA-256 where the model repository publishes
them, the RAM it needs, its context length, licence and a one-line note on quality versus
speed. An entry whose checksum could not be confirmed from a published source has
``sha256: null``: the download then reports the computed hash instead of claiming it was
verified. ``--catalogue FILE`` (or the ``catalogue`` argument) replaces the shipped list;
the tests use that to serve the demo model from a loopback server.

Downloads go to ``<user data dir>/models`` (``$CURATOR_MODELS_DIR`` overrides it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from curator.errors import CuratorError
from curator.resources_path import resource_path

MODELS_DIR_ENV = "CURATOR_MODELS_DIR"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
        return {
            "name": self.name,
            "title": self.title,
            "file": self.file,
            "url": self.url,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "ram_gb": self.ram_gb,
            "context_length": self.context_length,
            "licence": self.licence,
            "note": self.note,
            "source": self.source,
        }


def default_catalogue_path() -> Path:
    return resource_path("catalogue.json")


def models_dir() -> Path:
    """Where downloaded models are saved (created on first download, not here)."""
    override = os.environ.get(MODELS_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("memory-curator", appauthor=False)) / "models"


def load_catalogue(path: str | os.PathLike[str] | None = None) -> list[CatalogueEntry]:
    """Read and check a catalogue file; a bad one is refused with a one-line reason."""
    p = Path(path).expanduser() if path is not None else default_catalogue_path()
    try:
        document = json.loads(p.read_text(encoding="utf-8"))
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
    return entries


def _entry(path: Path, index: int, raw: Any) -> CatalogueEntry:
    where = f"{path}: model #{index + 1}"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where} is not an object")

    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise CatalogueError(f"{where}: '{key}' must be a non-empty string")
        return value.strip()

    name = text("name")
    if not _NAME.match(name):
        raise CatalogueError(f"{where}: name {name!r} may hold only letters, digits, . _ -")
    file = text("file")
    if Path(file).name != file or file.startswith("."):
        raise CatalogueError(f"{where}: 'file' must be a plain file name, not {file!r}")
    url = text("url")
    if not url.startswith(("https://", "http://")):
        raise CatalogueError(f"{where}: 'url' must be an http(s) address")
    sha = raw.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA256.match(sha.lower())):
        raise CatalogueError(f"{where}: 'sha256' must be 64 hex digits or null")
    size = raw.get("size_bytes")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        raise CatalogueError(f"{where}: 'size_bytes' must be a positive integer or null")
    ram = raw.get("ram_gb", 0)
    ctx = raw.get("context_length", 0)
    if not isinstance(ram, int | float) or isinstance(ram, bool) or ram < 0:
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
    return (directory or models_dir()) / (entry.file + ".part")


def entry_state(entry: CatalogueEntry, directory: Path | None = None) -> str:
    """``downloaded``, ``partial (N bytes)`` or ``not downloaded``."""
    if installed_path(entry, directory).is_file():
        return "downloaded"
    part = partial_path(entry, directory)
    if part.is_file():
        return f"partial ({part.stat().st_size} bytes)"
    return "not downloaded"


def remove_model(entry: CatalogueEntry, directory: Path | None = None) -> list[Path]:
    """Delete a downloaded model and any partial download of it; returns what was deleted."""
    removed: list[Path] = []
    for p in (installed_path(entry, directory), partial_path(entry, directory)):
        if p.is_file():
            try:
                p.unlink()
            except OSError as exc:
                raise CuratorError(f"cannot delete {p}: {exc.strerror or exc}") from exc
            removed.append(p)
    if not removed:
        raise CuratorError(f"{entry.name} is not downloaded (nothing in {p.parent})")
    return removed
