"""Downloading a catalogue model the way GPT4All does: resumable, verified, atomic.

Model files are gigabytes and connections drop, so bytes go to ``FILE.part`` and a later
attempt asks for the rest with an HTTP ``Range`` header (a dropped connection is retried
at once a few times; a cancelled or failed download keeps its ``.part`` for next time).
Only when the file is complete is its SHA-256 computed (this function runs on a worker
thread in the window, so hashing never blocks the GUI) and compared with the catalogue's;
a mismatch deletes the file. A file that does not even start like a GGUF (an HTML error
page, say) is refused too. Only then is ``.part`` renamed onto the final name, atomically,
so the models folder never holds a half-written model under a real name.

Without a published checksum (``sha256: null`` in the catalogue) the download is reported
as *not verified* together with the hash it computed, never as verified.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from curator.errors import CuratorError
from curator.llm.catalogue import CatalogueEntry, installed_path, models_dir, partial_path
from curator.llm.model_file import read_gguf_info

CHUNK = 1 << 18


class DownloadError(CuratorError):
    """The download failed; the message is one line saying why and what was kept."""

    exit_code = 2


class DownloadCancelled(DownloadError):
    exit_code = 1


class ChecksumMismatch(DownloadError):
    pass


@dataclass(frozen=True)
class Progress:
    phase: str
    """``downloading`` or ``verifying``."""
    done: int
    total: int | None
    speed_bps: float
    eta_s: float | None

    def describe(self) -> str:
        if self.phase == "verifying":
            return "verifying the checksum…"
        total = f" of {_mb(self.total)}" if self.total else ""
        eta = f", {_duration(self.eta_s)} left" if self.eta_s is not None else ""
        return f"{_mb(self.done)}{total} at {_mb(int(self.speed_bps))}/s{eta}"


@dataclass(frozen=True)
class DownloadResult:
    path: Path
    sha256: str
    verified: bool
    """True only when the catalogue published a checksum and it matched."""
    resumed_from: int
    """Bytes already on disk when this download started (0: from the beginning)."""

    def describe(self) -> str:
        if self.verified:
            check = "checksum verified"
        else:
            check = f"not verified (no published checksum); its SHA-256 is {self.sha256}"
        return f"saved {self.path} ({check})"


def _mb(n: int | None) -> str:
    return f"{(n or 0) / 1_048_576:.1f} MiB"


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def download_model(
    entry: CatalogueEntry,
    directory: Path | None = None,
    *,
    progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | None = None,
    attempts: int = 3,
    timeout_s: float = 30.0,
) -> DownloadResult:
    """Download ``entry`` into ``directory`` (default: :func:`models_dir`)."""
    directory = directory or models_dir()
    target = installed_path(entry, directory)
    if target.exists():
        raise DownloadError(f"{target} already exists (curator models remove {entry.name})")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create {directory}: {exc.strerror or exc}") from exc
    part = partial_path(entry, directory)
    resumed_from = part.stat().st_size if part.exists() else 0
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        for attempt in range(1, attempts + 1):
            try:
                _fetch(client, entry, part, progress, cancel)
                break
            except (httpx.TransportError, httpx.StreamError) as exc:
                if attempt == attempts:
                    kept = part.stat().st_size if part.exists() else 0
                    raise DownloadError(
                        f"download of {entry.name} interrupted ({type(exc).__name__}: {exc}); "
                        f"{kept} bytes kept in {part.name}, run it again to resume"
                    ) from exc
    return _finish(entry, part, target, resumed_from, progress)


def _fetch(
    client: httpx.Client,
    entry: CatalogueEntry,
    part: Path,
    progress: Callable[[Progress], None] | None,
    cancel: threading.Event | None,
) -> None:
    """One HTTP request: append what is missing to ``part`` (from byte 0 if no resume)."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with client.stream("GET", entry.url, headers=headers) as response:
        if response.status_code == 416 and offset:
            return  # nothing left to fetch: the part file is complete
        if response.status_code >= 400:
            reason = "not found" if response.status_code == 404 else response.reason_phrase
            raise DownloadError(
                f"cannot download {entry.name}: HTTP {response.status_code} {reason} "
                f"from {entry.url}"
            )
        if response.status_code != 206:
            offset = 0  # the server ignored the Range header: start again
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else entry.size_bytes
        if total is not None:
            _check_space(part.parent, total - offset)
        started = time.monotonic()
        done = offset
        with part.open("ab" if offset else "wb") as out:
            for chunk in response.iter_bytes(CHUNK):
                if cancel is not None and cancel.is_set():
                    raise DownloadCancelled(
                        f"download of {entry.name} cancelled; {done} bytes kept in "
                        f"{part.name} to resume later"
                    )
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise _disk_error(exc, part) from exc
                done += len(chunk)
                if progress is not None:
                    elapsed = max(time.monotonic() - started, 1e-6)
                    speed = (done - offset) / elapsed
                    eta = (total - done) / speed if total and speed > 0 else None
                    progress(Progress("downloading", done, total, speed, eta))


def _check_space(directory: Path, needed: int) -> None:
    free = shutil.disk_usage(directory).free
    if needed > free:
        raise DownloadError(
            f"not enough disk space in {directory}: the download needs {_mb(needed)}, "
            f"{_mb(free)} is free"
        )


def _disk_error(exc: OSError, part: Path) -> DownloadError:
    if exc.errno == errno.ENOSPC:
        return DownloadError(
            f"the disk is full while writing {part}; free some space and run it again to resume"
        )
    return DownloadError(f"cannot write {part}: {exc.strerror or exc}")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _finish(
    entry: CatalogueEntry,
    part: Path,
    target: Path,
    resumed_from: int,
    progress: Callable[[Progress], None] | None,
) -> DownloadResult:
    size = part.stat().st_size
    if progress is not None:
        progress(Progress("verifying", size, size, 0.0, None))
    if entry.size_bytes is not None and size != entry.size_bytes:
        part.unlink(missing_ok=True)
        raise ChecksumMismatch(
            f"{entry.name}: downloaded {size} bytes, the catalogue says {entry.size_bytes}; "
            "the file was deleted"
        )
    digest = file_sha256(part)
    if entry.sha256 is not None and digest != entry.sha256:
        part.unlink(missing_ok=True)
        raise ChecksumMismatch(
            f"{entry.name}: checksum mismatch (expected {entry.sha256}, got {digest}); "
            "the file was deleted"
        )
    try:
        read_gguf_info(part)
    except CuratorError as exc:
        part.unlink(missing_ok=True)
        raise DownloadError(
            f"{entry.name}: the downloaded file is not a usable GGUF model ({exc}); it was deleted"
        ) from exc
    os.replace(part, target)
    return DownloadResult(target, digest, entry.sha256 is not None, resumed_from)
