"""Catalogue file names and URLs that could collide, escape the folder or crash a download."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.llm.catalogue import (
    CatalogueError,
    installed_path,
    load_catalogue,
    partial_path,
)
from curator.llm.target_lock import lock_path

GOOD = {"name": "good", "file": "good.gguf", "url": "https://example.org/good.gguf"}


def write(path: Path, *models: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"models": list(models)}))
    return path


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ("good.gguf.part", "must not end in .part or .lock"),
        ("GOOD.GGUF.PART", "must not end in .part or .lock"),
        ("good.gguf.lock", "must not end in .part or .lock"),
        ("a" * 300, "is 300 bytes long"),
        ("é" * 126, "is 252 bytes long"),
        ("a\x00b.gguf", "control characters"),
        ("a\nb.gguf", "control characters"),
        ("a\x7fb.gguf", "control characters"),
        ("sub/a.gguf", "path separator"),
        ("sub\\a.gguf", "path separator"),
        ("..", "'.', '..' or a hidden name"),
        (".hidden.gguf", "'.', '..' or a hidden name"),
        ("model.gguf.", "a dot or a space"),
        ("\ud800.gguf", "not valid UTF-8"),
    ],
)
def test_unusable_file_names_are_refused_in_one_line(
    tmp_path: Path, file: str, message: str
) -> None:
    cat = write(tmp_path / "c.json", GOOD, {**GOOD, "name": "other", "file": file})
    with pytest.raises(CatalogueError, match=message) as info:
        load_catalogue(cat)
    text = str(info.value)
    assert "\n" not in text and "model #2" in text and len(text) < 400


def test_the_partial_file_of_one_entry_cannot_be_another_entry(tmp_path: Path) -> None:
    """``good.gguf.part`` as an entry would be entry ``good``'s partial download."""
    cat = write(tmp_path / "c.json", GOOD, {**GOOD, "name": "evil", "file": "good.gguf.part"})
    with pytest.raises(CatalogueError, match=r"\.part"):
        load_catalogue(cat)


def test_two_entries_may_not_share_a_file(tmp_path: Path) -> None:
    cat = write(tmp_path / "c.json", GOOD, {**GOOD, "name": "twin", "file": "Good.GGUF"})
    with pytest.raises(CatalogueError, match="models good and twin share the file"):
        load_catalogue(cat)


def test_the_longest_name_still_fits_its_part_and_lock(tmp_path: Path) -> None:
    longest = "m" * 245 + ".gguf"
    (entry,) = load_catalogue(write(tmp_path / "c.json", {**GOOD, "file": longest}))
    for path in (installed_path(entry, tmp_path), partial_path(entry, tmp_path)):
        path.write_bytes(b"x")
    lock_path(installed_path(entry, tmp_path)).write_bytes(b"")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://exa mple.org/a.gguf", "spaces or control characters"),
        ("https://user:hunter2@example.org:port/a.gguf", "not a valid address"),
        ("https://[::1/a.gguf", "not a valid address"),
        ("https:///a.gguf", "has no host"),
    ],
)
def test_unusable_urls_are_refused_without_showing_secrets(
    tmp_path: Path, url: str, message: str
) -> None:
    with pytest.raises(CatalogueError, match=message) as info:
        load_catalogue(write(tmp_path / "c.json", {**GOOD, "url": url}))
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("file", ["a" * 300 + ".gguf", "a\x00b.gguf", "good.gguf.part"])
@pytest.mark.parametrize("command", ["list", "download", "remove"])
def test_the_cli_refuses_such_a_catalogue_with_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    file: str,
    command: str,
) -> None:
    monkeypatch.setenv("CURATOR_MODELS_DIR", str(tmp_path / "models"))
    cat = write(tmp_path / "c.json", {**GOOD, "file": file})
    argv = ["models", command, *(["good"] if command != "list" else []), "--catalogue", str(cat)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("curator: error: ") and err.count("\n") == 1, err
    assert "'file'" in err and "Traceback" not in err
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


@settings(max_examples=300, deadline=None)
@given(file=st.text(min_size=1, max_size=300))
def test_every_accepted_name_is_a_safe_distinct_file(file: str) -> None:
    """Any name the catalogue accepts can be created, with its .part and .lock, inside
    the models folder, and its .part and .lock are never an accepted name themselves."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        cat = root / "c.json"
        cat.write_text(json.dumps({"models": [{**GOOD, "file": file}]}))
        try:
            (entry,) = load_catalogue(cat)
        except CatalogueError as exc:
            assert "\n" not in str(exc) and len(str(exc)) < 400
            return
        models = root / "models"
        models.mkdir()
        target = installed_path(entry, models)
        for path in (target, partial_path(entry, models), lock_path(target)):
            path.write_bytes(b"x")
            assert path.parent == models
        for derived in (partial_path(entry, models).name, lock_path(target).name):
            cat.write_text(json.dumps({"models": [{**GOOD, "file": derived}]}))
            with pytest.raises(CatalogueError):
                load_catalogue(cat)
