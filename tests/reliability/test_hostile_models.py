"""Hostile model files and settings: a clear one-line refusal, nothing written, no crash.

Each case runs the real ``curator`` in a child process through the shared harness, which
asserts the exit code, the one-line message without a traceback, ``integrity_check`` and
(where nothing may change) unchanged row counts. The files are real: copies of the demo
GGUF cut, overwritten or re-headed, and ordinary files that are not models at all.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.demo import create_demo
from reliability.damaged_models import nan_weights_copy
from reliability.harness import Expect, row_counts, run_case

ODD_NAME = "mödel dir 'quoted' $HOME;x/ünï cødé [1] *?.gguf"


def _header(
    data: bytes,
    *,
    version: int | None = None,
    n_tensors: int | None = None,
    n_kv: int | None = None,
) -> bytes:
    """The demo file's first 4 KiB with some GGUF header fields overwritten."""
    head = bytearray(data[:4096])
    if version is not None:
        head[4:8] = struct.pack("<I", version)
    if n_tensors is not None:
        head[8:16] = struct.pack("<Q", n_tensors)
    if n_kv is not None:
        head[16:24] = struct.pack("<Q", n_kv)
    return bytes(head)


def _huge_first_key(data: bytes) -> bytes:
    head = bytearray(data)
    head[24:32] = struct.pack("<Q", 1 << 40)  # the first key's length
    return bytes(head)


def _unknown_architecture(data: bytes) -> bytes:
    """Loads as far as llama.cpp's trial load in a child process, which refuses it."""
    out = bytearray(data)
    key = b"general.architecture"
    at = out.index(key) + len(key) + 4 + 8
    out[at : at + 5] = b"zzzzz"
    return bytes(out)


@dataclass(frozen=True)
class ModelCase:
    name: str
    build: Callable[[Path, bytes], Path]
    """Makes the model path inside a folder, from the demo model's bytes."""
    message: str


def _file(name: str, content: Callable[[bytes], bytes]) -> Callable[[Path, bytes], Path]:
    def build(folder: Path, demo: bytes) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content(demo))
        return path

    return build


def _missing(folder: Path, demo: bytes) -> Path:
    return folder / "no such model.gguf"


def _directory(folder: Path, demo: bytes) -> Path:
    path = folder / "a folder.gguf"
    path.mkdir()
    return path


def _fifo(folder: Path, demo: bytes) -> Path:
    path = folder / "pipe.gguf"
    os.mkfifo(path)
    return path


MODEL_CASES = [
    ModelCase("missing", _missing, r"model file not found: .*no such model\.gguf"),
    ModelCase("directory", _directory, r"is not a file"),
    ModelCase("fifo", _fifo, r"is not a file"),
    ModelCase("empty", _file("empty.gguf", lambda d: b""), r"not a GGUF model file"),
    ModelCase("text", _file("notes.gguf", lambda d: b"just some notes\n" * 50), r"not a GGUF"),
    ModelCase("random", _file("random.gguf", lambda d: os.urandom(8192)), r"not a GGUF"),
    ModelCase("magic-only", _file("magic.gguf", lambda d: b"GGUF"), r"truncated"),
    ModelCase("truncated-half", _file("half.gguf", lambda d: d[: len(d) // 2]), r"truncated"),
    ModelCase("truncated-tail", _file("tail.gguf", lambda d: d[:-1]), r"truncated"),
    ModelCase(
        "bad-version", _file("v99.gguf", lambda d: _header(d, version=99)), r"unsupported GGUF"
    ),
    ModelCase(
        "huge-key-count",
        _file("kv.gguf", lambda d: _header(d, n_kv=1 << 40)),
        r"corrupt GGUF header",
    ),
    ModelCase(
        "huge-tensor-count",
        _file("tensors.gguf", lambda d: _header(d, n_tensors=1 << 40)),
        r"corrupt GGUF header",
    ),
    ModelCase(
        "huge-string", _file("string.gguf", _huge_first_key), r"corrupt GGUF header \(string"
    ),
    ModelCase(
        "odd-characters-not-a-model",
        _file(ODD_NAME, lambda d: b"not a model"),
        r"ünï cødé \[1\] \*\?\.gguf is not a GGUF",
    ),
    ModelCase(
        "unknown-architecture",
        _file("arch.gguf", _unknown_architecture),
        r"llama\.cpp cannot load it \(unknown model architecture: 'zzzzz'\)",
    ),
]


@pytest.fixture(scope="module")
def demo_bytes(demo_model: Path) -> bytes:
    return demo_model.read_bytes()


@pytest.fixture(scope="module")
def case_model(
    tmp_path_factory: pytest.TempPathFactory, demo_bytes: bytes
) -> Callable[[ModelCase], Path]:
    """Each case's model, made once for both commands (the damaged copies are up to the
    demo model's 94 MiB each; the commands only read them)."""
    base = tmp_path_factory.mktemp("model-cases")
    made: dict[str, Path] = {}

    def model(case: ModelCase) -> Path:
        if case.name not in made:
            folder = base / case.name
            folder.mkdir()
            made[case.name] = case.build(folder, demo_bytes)
        return made[case.name]

    return model


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile-models") / "template.sqlite"
    store = Store(path)
    try:
        create_demo(store)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return path


@pytest.fixture
def db(tmp_path: Path, template: Path) -> Path:
    target = tmp_path / "curator.sqlite"
    shutil.copyfile(template, target)
    return target


def _settings_rows(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute("SELECT key, value FROM setting ORDER BY key"))
    finally:
        conn.close()


@pytest.mark.parametrize("case", MODEL_CASES, ids=[c.name for c in MODEL_CASES])
@pytest.mark.parametrize("command", ["classify", "distill"])
def test_unusable_model_file_is_refused_before_anything_is_written(
    case: ModelCase, command: str, db: Path, case_model: Callable[[ModelCase], Path]
) -> None:
    model = case_model(case)
    result = run_case(
        ["--db", str(db), command, "--model", str(model), "--limit", "2"],
        Expect(code=2, message=case.message, db=db, unchanged_counts=True),
    )
    assert result.stdout == ""


def test_model_from_the_environment_is_checked_the_same_way(db: Path, tmp_path: Path) -> None:
    folder = tmp_path / "a folder"
    folder.mkdir()
    run_case(
        ["--db", str(db), "classify", "--limit", "1"],
        Expect(code=2, message=r"is not a file", db=db, unchanged_counts=True),
        env={"CURATOR_MODEL": str(folder)},
    )


@pytest.mark.llm
def test_nan_weights_fail_the_run_without_labels(db: Path, tmp_path: Path, demo_model: Path):
    model = nan_weights_copy(demo_model, tmp_path / "nan.gguf")
    before = row_counts(db)
    run_case(
        ["--db", str(db), "classify", "--model", str(model), "--limit", "2"],
        Expect(code=2, message=r"non-finite .* damaged", db=db),
    )
    after = row_counts(db)
    assert after["run"] == before["run"] + 1  # the failed run, recorded as such
    assert {k: v for k, v in after.items() if k != "run"} == {
        k: v for k, v in before.items() if k != "run"
    }


@pytest.mark.llm
def test_a_real_model_under_a_path_with_odd_characters_works(
    db: Path, tmp_path: Path, demo_model: Path
) -> None:
    model = tmp_path / ODD_NAME
    model.parent.mkdir(parents=True)
    shutil.copyfile(demo_model, model)
    result = run_case(
        ["--db", str(db), "--json", "classify", "--model", str(model), "--limit", "1"],
        Expect(code=0, db=db),
    )
    assert '"status": "done"' in result.stdout


SETTINGS_CASES = [
    (["settings", "n_ctx=100"], r"context size \(n_ctx\) must be between 512 and 131072"),
    (["settings", "n_ctx=4096.5"], r"whole number"),
    (["settings", "n_ctx=lots"], r"must be a number, got 'lots'"),
    (["settings", "n_threads=0"], r"threads \(n_threads\) must be between 1 and 256"),
    (["settings", "decay_rate=2"], r"between 0.5 and 1"),
    (["settings", "decay_rate=NaN"], r"must be a number, got 'NaN'"),
    (["settings", "top_k=-1"], r"between 1 and 1000"),
    (["settings", "skip_threshold=0.5"], r"skip threshold .* higher than the update"),
    (["settings", "flash_attn=yes"], r"true/false"),
    (["settings", "no_such=1"], r"unknown setting 'no_such'"),
    (["settings", "n_ctx"], r"expected KEY=VALUE"),
    (["settings", "top_k=7", "n_ctx=1"], r"n_ctx"),  # all or none: top_k not saved either
    (["classify", "--n-ctx", "100"], r"context size \(n_ctx\) must be between 512"),
    (["classify", "--threads", "0"], r"threads \(n_threads\) must be between 1"),
    (["distill", "--n-gpu-layers", "-5"], r"GPU layers \(n_gpu_layers\) must be between -1"),
]


@pytest.mark.parametrize(
    ("argv", "message"), SETTINGS_CASES, ids=[" ".join(a) for a, _ in SETTINGS_CASES]
)
def test_invalid_settings_are_refused_and_nothing_saved(
    argv: list[str], message: str, db: Path
) -> None:
    before = _settings_rows(db)
    run_case(
        ["--db", str(db), *argv], Expect(code=2, message=message, db=db, unchanged_counts=True)
    )
    assert _settings_rows(db) == before


def test_a_model_setting_that_is_not_a_model_is_not_saved(db: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.gguf"
    notes.write_text("not a model\n")
    before = _settings_rows(db)
    run_case(
        ["--db", str(db), "settings", f"model_path={notes}"],
        Expect(code=2, message=r"notes\.gguf is not a GGUF", db=db, unchanged_counts=True),
    )
    assert _settings_rows(db) == before
