"""GGUF header reading, validation in a child process, hashing, model resolution."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.llm import model_file
from curator.llm.model_file import (
    ModelFileError,
    demo_model_path,
    hash_cache_file,
    model_sha256,
    read_gguf_info,
    resolve_model_path,
)
from curator.llm.model_trial import validate_model_file
from curator.store.db import Store
from curator.store.settings import load_settings, set_setting

CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "random": lambda data: os.urandom(64 * 1024),
    "text": lambda data: b"this is a text file, not a model\n" * 10,
    "empty": lambda data: b"",
    "truncated_half": lambda data: data[: len(data) // 2],
    "truncated_tail": lambda data: data[:-4096],
    "header_only": lambda data: data[:2000],
    "bad_version": lambda data: data[:4] + struct.pack("<I", 99) + data[8:4096],
}
"""The unusable files a user might point the app at, made from the demo model's bytes."""


def corrupt_copy(demo: Path, folder: Path, name: str) -> Path:
    """One of :data:`CORRUPTIONS` as a file (only the one asked for: the truncated copies
    are tens of megabytes each)."""
    path = folder / f"{name}.gguf"
    path.write_bytes(CORRUPTIONS[name](demo.read_bytes()))
    return path


def with_architecture(demo: Path, target: Path, arch: bytes) -> Path:
    """A copy whose general.architecture value is replaced (same length keeps offsets)."""
    data = bytearray(demo.read_bytes())
    key = b"general.architecture"
    at = data.index(key) + len(key) + 4 + 8  # value type (u32) and string length (u64)
    assert data[at : at + len(arch)] == b"llama"
    data[at : at + len(arch)] = arch
    target.write_bytes(bytes(data))
    return target


def test_header_of_the_demo_model(demo_model: Path) -> None:
    info = read_gguf_info(demo_model)
    assert info.architecture == "llama"
    assert info.quantization == "Q4_1"
    assert info.context_length == 8192
    assert info.size_bytes == demo_model.stat().st_size
    assert "135M" in info.metadata["general.size_label"]
    assert info.metadata["tokenizer.ggml.tokens"] == "<array of 49152>"
    assert info.sha256 is None


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("random", "not a GGUF model file"),
        ("text", "not a GGUF model file"),
        ("empty", "not a GGUF model file"),
        ("truncated_half", "truncated"),
        ("truncated_tail", "truncated"),
        ("header_only", "truncated"),
        ("bad_version", "unsupported GGUF version 99"),
    ],
)
def test_unusable_files_are_one_line_errors(
    demo_model: Path, tmp_path: Path, name: str, reason: str
) -> None:
    path = corrupt_copy(demo_model, tmp_path, name)
    with pytest.raises(ModelFileError) as caught:
        validate_model_file(path)
    message = str(caught.value)
    assert reason in message and "\n" not in message and str(path) in message
    assert caught.value.exit_code == 2


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="model file not found"):
        validate_model_file(tmp_path / "nope.gguf")


def test_validation_loads_the_demo_model_in_a_child(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path / "cache"))  # no kept verdict
    info = validate_model_file(demo_model)
    loaded = info.metadata["llama.cpp"]
    assert loaded["n_layer"] == 30 and loaded["n_params"] > 100_000_000


def test_llama_cpp_rejection_is_reported_not_crashed(demo_model: Path, tmp_path: Path) -> None:
    """A valid header that llama.cpp refuses: the child fails, this process carries on."""
    path = with_architecture(demo_model, tmp_path / "alien.gguf", b"xlama")
    assert read_gguf_info(path).architecture == "xlama"  # the header itself is fine
    with pytest.raises(ModelFileError) as caught:
        validate_model_file(path)
    message = str(caught.value)
    assert "llama.cpp cannot load it" in message and "\n" not in message
    assert "xlama" in message  # llama.cpp's own reason is passed on


def test_hash_is_cached_by_path_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cache of its own: the run's shared one is rewritten by other workers meanwhile.
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 100)
    digest = model_sha256(path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    cache = json.loads(hash_cache_file().read_text())
    assert cache[str(path.resolve())]["sha256"] == digest
    # A stale cache entry is served as long as size and mtime match...
    cache[str(path.resolve())]["sha256"] = "cached-value"
    hash_cache_file().write_text(json.dumps(cache))
    assert model_sha256(path) == "cached-value"
    # ...and ignored once the file changed.
    path.write_bytes(b"GGUF" + b"\1" * 100)
    os.utime(path, ns=(1, 1))
    assert model_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_model_resolution_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_model: Path
) -> None:
    store = Store(tmp_path / "c.sqlite")
    try:
        monkeypatch.delenv("CURATOR_MODEL", raising=False)
        assert (
            resolve_model_path(None, load_settings(store).model_path)
            == demo_model
            == demo_model_path()
        )
        set_setting(store, "model_path", str(tmp_path / "saved.gguf"))
        assert resolve_model_path(None, load_settings(store).model_path) == tmp_path / "saved.gguf"
        monkeypatch.setenv("CURATOR_MODEL", str(tmp_path / "env.gguf"))
        assert resolve_model_path(None, load_settings(store).model_path) == tmp_path / "env.gguf"
        assert (
            resolve_model_path(str(tmp_path / "cli.gguf"), load_settings(store).model_path)
            == tmp_path / "cli.gguf"
        )
    finally:
        store.close()


def test_no_model_anywhere_names_the_three_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulates an installation without the demo package (cannot be provoked otherwise).
    monkeypatch.delenv("CURATOR_MODEL", raising=False)
    monkeypatch.setattr(model_file, "demo_model_path", lambda: None)
    with pytest.raises(CuratorError) as caught:
        resolve_model_path(None, None)
    message = str(caught.value)
    assert "--model" in message and "$CURATOR_MODEL" in message and "model_path" in message


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"not a model at all\n", 'this one begins with "not "'),
        (b"\x00\x01\xfe\xff" * 8, "this one begins with the bytes 00 01 FE FF"),
        (b"", "this file is empty"),
    ],
    ids=["text", "binary", "empty"],
)
def test_a_file_that_is_not_gguf_is_described_in_plain_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, words: str
) -> None:
    """No Python bytes repr (``b'not '``) in the message, in the window or on the CLI."""
    from curator.cli import main

    bad = tmp_path / "notes.gguf"
    bad.write_bytes(content)
    with pytest.raises(ModelFileError) as caught:
        read_gguf_info(bad)
    message = str(caught.value)
    assert words in message and 'a model file begins with "GGUF"' in message
    assert "b'" not in message and 'b"' not in message
    code = main(["--db", str(tmp_path / "cli.sqlite"), "--create", "settings", f"model_path={bad}"])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "b'" not in err
