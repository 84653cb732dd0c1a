"""GGUF models already on this computer, found where other local-LLM tools keep them.

People who use LM Studio, Ollama, GPT4All or the Hugging Face hub already have model files;
making them download a second copy wastes gigabytes. This module looks in each tool's usual
folder and reads each file's GGUF header (name, size, quantisation, architecture) with
:func:`curator.llm.model_file.read_gguf_info`, so nothing is loaded and nothing is copied:
the user picks a file and its path becomes the model path.

Ollama stores models as content-addressed blobs (``blobs/sha256-...``) named only through
its manifests (``manifests/registry.ollama.ai/library/NAME/TAG``, JSON whose layer of media
type ``application/vnd.ollama.image.model`` is the GGUF), so the manifests are read to give
each blob its ``NAME:TAG``. A Hugging Face cache keeps ``models--ORG--NAME/snapshots/REV/``
symlinks to its blobs: the symlink is listed (its name is meaningful), resolved for reading.

Every root can be overridden (tests build these trees in a temporary folder). A file that is
not a readable GGUF is skipped, never reported as a model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from curator.errors import CuratorError
from curator.llm.model_file import read_gguf_info

OLLAMA_MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
SOURCES = ("lmstudio", "huggingface", "gpt4all", "ollama")
_MAX_DEPTH = 6  # LM Studio nests publisher/repo/file; deeper trees are not model folders


@dataclass(frozen=True)
class LocalModel:
    """One GGUF file found on this computer, described from its header."""

    source: str
    """Which tool's folder it was found in (one of :data:`SOURCES`)."""
    label: str
    """The name the tool knows it by (``org/repo/file.gguf``, ``llama3.2:1b``, ...)."""
    path: Path
    """The file to load (for Ollama, the blob itself)."""
    name: str
    size_bytes: int
    quantization: str
    architecture: str
    context_length: int | None

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "label": self.label,
            "path": str(self.path),
            "name": self.name,
            "size_bytes": self.size_bytes,
            "quantization": self.quantization,
            "architecture": self.architecture,
            "context_length": self.context_length,
        }


def default_roots(
    env: Mapping[str, str] | None = None, home: Path | None = None
) -> dict[str, list[Path]]:
    """Each tool's usual model folders on this system (they need not exist)."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    hf: list[Path] = []
    if env.get("HF_HUB_CACHE"):
        hf.append(Path(env["HF_HUB_CACHE"]))
    if env.get("HF_HOME"):
        hf.append(Path(env["HF_HOME"]) / "hub")
    hf.append(home / ".cache" / "huggingface" / "hub")
    ollama = [Path(env["OLLAMA_MODELS"])] if env.get("OLLAMA_MODELS") else []
    ollama.append(home / ".ollama" / "models")
    return {
        "lmstudio": [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"],
        "huggingface": hf,
        "gpt4all": [
            home / ".local" / "share" / "nomic.ai" / "GPT4All",
            home / "Library" / "Application Support" / "nomic.ai" / "GPT4All",
        ],
        "ollama": ollama,
    }


def find_local_models(roots: Mapping[str, Iterable[Path]] | None = None) -> list[LocalModel]:
    """Every readable GGUF file under the given roots (default: :func:`default_roots`).

    Sorted by source then label; a file reached through two roots is listed once.
    """
    roots = default_roots() if roots is None else roots
    found: list[LocalModel] = []
    seen: set[Path] = set()
    for source in SOURCES:
        for root in _unique(roots.get(source, ())):
            for label, path in _candidates(source, root):
                try:
                    real = path.resolve()
                except OSError:
                    continue
                if real in seen:
                    continue
                model = _describe(source, label, path)
                if model is not None:
                    seen.add(real)
                    found.append(model)
    return sorted(found, key=lambda m: (SOURCES.index(m.source), m.label.lower()))


def _unique(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        p = Path(p).expanduser()
        if p not in out and p.is_dir():
            out.append(p)
    return out


def _candidates(source: str, root: Path) -> Iterator[tuple[str, Path]]:
    if source == "ollama":
        yield from _ollama_models(root)
    elif source == "huggingface":
        yield from _hf_models(root)
    else:
        for path in _walk_gguf(root):
            yield path.relative_to(root).as_posix(), path


def _walk_gguf(root: Path) -> Iterator[Path]:
    """``*.gguf`` files below ``root`` (symlinks to files followed, folders not)."""
    base_depth = len(root.parts)
    for folder, dirs, files in os.walk(root):
        if len(Path(folder).parts) - base_depth >= _MAX_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.lower().endswith(".gguf") and not name.startswith("."):
                yield Path(folder) / name


def _hf_models(root: Path) -> Iterator[tuple[str, Path]]:
    for repo in sorted(root.glob("models--*")):
        repo_id = repo.name[len("models--") :].replace("--", "/")
        snapshots = repo / "snapshots"
        if not snapshots.is_dir():
            continue
        for path in _walk_gguf(snapshots):
            # snapshots/REV/sub/file.gguf -> ORG/NAME/sub/file.gguf
            inner = path.relative_to(snapshots).parts[1:]
            yield "/".join((repo_id, *inner)), path


def _ollama_models(root: Path) -> Iterator[tuple[str, Path]]:
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
        try:
            document = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        layers = document.get("layers") if isinstance(document, dict) else None
        if not isinstance(layers, list):
            continue
        for layer in layers:
            if not isinstance(layer, dict) or layer.get("mediaType") != OLLAMA_MODEL_MEDIA_TYPE:
                continue
            digest = str(layer.get("digest") or "")
            if not digest.startswith("sha256:"):
                continue
            blob = root / "blobs" / digest.replace(":", "-", 1)
            if blob.is_file():
                yield _ollama_label(manifests, manifest), blob


def _ollama_label(manifests: Path, manifest: Path) -> str:
    """``registry.ollama.ai/library/llama3.2/1b`` -> ``llama3.2:1b``; other hosts keep a prefix."""
    parts = manifest.relative_to(manifests).parts
    if len(parts) < 3:
        return ":".join(parts)
    host, *names, tag = parts
    name = "/".join(names)
    if host == "registry.ollama.ai" and name.startswith("library/"):
        name = name[len("library/") :]
    elif host != "registry.ollama.ai":
        name = f"{host}/{name}"
    return f"{name}:{tag}"


def _describe(source: str, label: str, path: Path) -> LocalModel | None:
    try:
        info = read_gguf_info(path)
    except (CuratorError, OSError):
        return None
    return LocalModel(
        source=source,
        label=label,
        path=path,
        name=info.name,
        size_bytes=info.size_bytes,
        quantization=info.quantization,
        architecture=info.architecture,
        context_length=info.context_length,
    )
