"""Catalogue downloads against a real HTTP server on 127.0.0.1 serving the demo model."""

from __future__ import annotations

import errno
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from curator.llm import download
from curator.llm.catalogue import (
    CatalogueEntry,
    CatalogueError,
    entry_state,
    load_catalogue,
    remove_model,
)
from curator.llm.download import (
    ChecksumMismatch,
    DownloadCancelled,
    DownloadError,
    Progress,
    download_model,
)
from tests.llm.model_server import ServerState, serve


@pytest.fixture(scope="module")
def demo_bytes(demo_model: Path) -> bytes:
    return demo_model.read_bytes()


@pytest.fixture
def server(demo_bytes: bytes) -> Iterator[tuple[str, ServerState]]:
    with serve(demo_bytes) as running:
        yield running


def _entry(url: str, data: bytes, *, sha: str | None = "auto") -> CatalogueEntry:
    return CatalogueEntry(
        name="demo",
        title="Demo",
        file="demo.gguf",
        url=url,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest() if sha == "auto" else sha,
        ram_gb=0.5,
        context_length=8192,
        licence="Apache-2.0",
        note="test",
        source="test",
    )


def test_full_download_is_verified_and_renamed(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, state = server
    entry = _entry(url + "/model.gguf", demo_bytes)
    seen: list[Progress] = []
    result = download_model(entry, tmp_path, progress=seen.append)
    assert result.verified and result.resumed_from == 0
    assert result.path == tmp_path / "demo.gguf"
    assert result.path.read_bytes() == demo_bytes
    assert not (tmp_path / "demo.gguf.part").exists()
    assert state.ranges == [None]
    assert seen[-1].phase == "verifying"
    downloading = [p for p in seen if p.phase == "downloading"]
    assert downloading[-1].done == downloading[-1].total == len(demo_bytes)
    assert all(p.speed_bps > 0 for p in downloading)
    assert "checksum verified" in result.describe()
    assert entry_state(entry, tmp_path) == "downloaded"
    with pytest.raises(DownloadError, match="already exists"):
        download_model(entry, tmp_path)
    assert remove_model(entry, tmp_path) == [result.path]
    assert entry_state(entry, tmp_path) == "not downloaded"


def test_dropped_connection_is_resumed_with_range(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, state = server
    half = len(demo_bytes) // 2
    state.drop_after = half
    result = download_model(_entry(url + "/model.gguf", demo_bytes), tmp_path)
    assert result.verified
    assert result.path.read_bytes() == demo_bytes
    assert state.ranges[0] is None
    assert state.ranges[1] is not None and int(state.ranges[1][6:-1]) >= half // 2


def test_interrupted_download_keeps_part_and_resumes_next_time(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, state = server
    entry = _entry(url + "/model.gguf", demo_bytes)
    state.drop_after = len(demo_bytes) // 3
    with pytest.raises(DownloadError, match="run it again to resume"):
        download_model(entry, tmp_path, attempts=1)
    part = tmp_path / "demo.gguf.part"
    kept = part.stat().st_size
    assert 0 < kept < len(demo_bytes)
    assert entry_state(entry, tmp_path).startswith("partial")
    result = download_model(entry, tmp_path)
    assert result.resumed_from == kept
    assert state.ranges[-1] == f"bytes={kept}-"
    assert result.path.read_bytes() == demo_bytes


def test_checksum_mismatch_deletes_the_file(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, _ = server
    entry = _entry(url + "/model.gguf", demo_bytes, sha="0" * 64)
    with pytest.raises(ChecksumMismatch, match=r"checksum mismatch.*deleted"):
        download_model(entry, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_unpublished_checksum_is_reported_not_claimed(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, _ = server
    result = download_model(_entry(url + "/model.gguf", demo_bytes, sha=None), tmp_path)
    assert not result.verified
    assert result.sha256 == hashlib.sha256(demo_bytes).hexdigest()
    assert "not verified" in result.describe() and result.sha256 in result.describe()


def test_404_is_one_clear_line(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, _ = server
    with pytest.raises(DownloadError, match="HTTP 404 not found") as info:
        download_model(_entry(url + "/missing.gguf", demo_bytes), tmp_path)
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_cancel_keeps_the_part_file(
    tmp_path: Path, server: tuple[str, ServerState], demo_bytes: bytes
) -> None:
    url, _ = server
    cancel = threading.Event()

    def on_progress(p: Progress) -> None:
        if p.done > 1_000_000:
            cancel.set()

    entry = _entry(url + "/model.gguf", demo_bytes)
    with pytest.raises(DownloadCancelled, match="cancelled"):
        download_model(entry, tmp_path, progress=on_progress, cancel=cancel)
    assert not (tmp_path / "demo.gguf").exists()
    assert 0 < (tmp_path / "demo.gguf.part").stat().st_size < len(demo_bytes)


def test_full_disk_is_refused_before_writing(
    tmp_path: Path,
    server: tuple[str, ServerState],
    demo_bytes: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Test double: a full disk cannot be provoked on the test machine, so the free-space
    # query reports 1000 bytes free.
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(10**9, 10**9 - 1000, 1000))
    url, _ = server
    with pytest.raises(DownloadError, match="not enough disk space"):
        download_model(_entry(url + "/model.gguf", demo_bytes), tmp_path)
    assert not (tmp_path / "demo.gguf").exists()


def test_shipped_catalogue_is_well_formed() -> None:
    entries = load_catalogue()
    assert len(entries) >= 3
    for entry in entries:
        assert entry.url.startswith("https://huggingface.co/")
        assert entry.url.endswith("/" + entry.file)
        assert entry.context_length > 0 and entry.ram_gb > 0
        # an entry without a published checksum must say so in its note
        if entry.sha256 is None:
            assert "checksum" in entry.note.lower()
        else:  # a checksum holds for one revision: the URL must not follow a branch
            assert re.search(r"/resolve/[0-9a-f]{40}/", entry.url), entry.url
            assert entry.source.endswith(entry.url.split("/resolve/")[1])
    # sizes from tiny to the 7-9B class the seed system ran
    sizes: set[str] = set()
    for entry in entries:
        found = re.search(r"(\d+(?:\.\d+)?)b-", entry.name)  # "qwen2.5-0.5b-..." -> 0.5
        assert found, entry.name
        sizes.add(found.group(1))
    assert {"0.5", "1.5", "3"} <= sizes and sizes & {"7", "8", "9"}


def test_bad_catalogues_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text("{")
    with pytest.raises(CatalogueError, match="not valid JSON"):
        load_catalogue(bad)
    good = {"name": "a", "file": "a.gguf", "url": "https://x/a.gguf"}
    for broken, message in (
        ({**good, "sha256": "abc"}, "64 hex"),
        ({**good, "file": "../a.gguf"}, "plain file name"),
        ({**good, "url": "file:///etc/passwd"}, "http"),
    ):
        bad.write_text(json.dumps({"models": [broken]}))
        with pytest.raises(CatalogueError, match=message):
            load_catalogue(bad)
    bad.write_text(json.dumps({"models": [good, good]}))
    with pytest.raises(CatalogueError, match="duplicate"):
        load_catalogue(bad)
    bad.write_text(json.dumps({"models": [good]}))
    assert replace(load_catalogue(bad)[0], note="x").file == "a.gguf"


class _FillsUp:
    """Test double: a .part file on a disk that fills after the first chunk (ENOSPC).

    A really full disk cannot be arranged on the test machine."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.writes = 0

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return int(self.handle.write(data))

    def __enter__(self) -> _FillsUp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


def test_disk_full_while_writing_keeps_the_part_and_says_so(
    tmp_path: Path,
    server: tuple[str, ServerState],
    demo_bytes: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_open = download._open_part

    def open_filling(part: Path, *, append: bool) -> Any:
        return _FillsUp(real_open(part, append=append))

    monkeypatch.setattr(download, "_open_part", open_filling)
    url, _ = server
    with pytest.raises(DownloadError, match=r"disk is full.*resume"):
        download_model(_entry(url + "/model.gguf", demo_bytes), tmp_path)
    monkeypatch.undo()
    part = tmp_path / "demo.gguf.part"
    assert 0 < part.stat().st_size < len(demo_bytes)
    assert not (tmp_path / "demo.gguf").exists()
