"""Downloading a catalogue model the way GPT4All does: resumable, verified, atomic.

Model files are gigabytes and connections drop, so bytes go to ``FILE.part`` and a later
attempt asks for the rest with an HTTP ``Range`` header (a dropped connection is retried
at once a few times; a cancelled, stalled or failed download keeps its ``.part`` for next
time). Every answer is checked before a byte of it is written
(:mod:`curator.llm.download_rules`: the range must start where the ``.part`` ends, a 416
proves nothing, a body is capped at the expected size), and a watchdog bounds the wait
for the headers and stops a transfer that stalls (:mod:`curator.llm.download_watch`). The
whole download holds the target's lock (:mod:`curator.llm.target_lock`), so two downloads
of one model never share a ``.part``.

Only when the file is complete is its SHA-256 computed (this function runs on a worker
thread in the window, so hashing never blocks the GUI) and compared with the catalogue's;
a mismatch deletes the file. An answer that does not even start like a GGUF (an HTML
error page, an endless body of anything) is refused at its first bytes, before a byte of
it is kept, and a body of unknown size stops before the disk's last
:data:`ROOM_LEFT_BYTES`. Only then is ``.part`` renamed onto the final name, atomically,
so the models folder never holds a half-written model under a real name.

Without a published checksum (``sha256: null`` in the catalogue) the download is reported
as *not verified* together with the hash it computed, never as verified. Every message
goes through :class:`DownloadError`, which redacts URL credentials.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx

from curator.errors import CuratorError
from curator.llm.catalogue import CatalogueEntry, installed_path, models_dir, partial_path
from curator.llm.download_rules import (
    ChecksumMismatch,
    DownloadCancelled,
    DownloadError,
    DownloadLimits,
    DownloadStalled,
    Plan,
    plan_answer,
)
from curator.llm.download_watch import Watchdog
from curator.llm.http_client import http_client, proxy_in_use
from curator.llm.model_file import GGUF_MAGIC, read_gguf_info
from curator.llm.target_lock import TargetBusy, target_lock

__all__ = [
    "ChecksumMismatch",
    "DownloadCancelled",
    "DownloadError",
    "DownloadLimits",
    "DownloadResult",
    "DownloadStalled",
    "Progress",
    "TargetBusy",
    "download_model",
]

CHUNK = 1 << 18


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
    limits: DownloadLimits | None = None,
) -> DownloadResult:
    """Download ``entry`` into ``directory`` (default: :func:`models_dir`).

    Holds the target's lock throughout (:mod:`curator.llm.target_lock`): a second download
    of the same file is refused with :class:`TargetBusy` (exit code 1).
    """
    directory = directory or models_dir()
    target = installed_path(entry, directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create {directory}: {exc.strerror or exc}") from exc
    busy = (
        f"{entry.name} is already being downloaded into {directory} (by another window or "
        "command); wait for it to finish"
    )
    with target_lock(target, busy):
        if target.exists():
            raise DownloadError(f"{target} already exists (curator models remove {entry.name})")
        transfer = _Transfer(entry, partial_path(entry, directory), progress, cancel, limits)
        resumed_from = transfer.run(attempts)
        return _finish(entry, transfer.part, target, resumed_from, progress)


class _Transfer:
    """The requests of one download, each checked by :func:`plan_answer` before writing."""

    def __init__(
        self,
        entry: CatalogueEntry,
        part: Path,
        progress: Callable[[Progress], None] | None,
        cancel: threading.Event | None,
        limits: DownloadLimits | None,
    ) -> None:
        self.entry = entry
        self.part = part
        self.progress = progress
        self.cancel = cancel
        self.limits = limits or DownloadLimits.from_env()
        self.expected: int | None = entry.size_bytes
        """The file's size: the catalogue's, else the first one a server announced."""
        self.resumed_from = 0

    def run(self, attempts: int) -> int:
        """Fetch until the ``.part`` is complete; returns the bytes it had at the start
        (0 when the download had to start again from the beginning)."""
        self.resumed_from = self._prepare()
        limits = self.limits
        # The watchdog enforces the deadline and the stall rule; the socket timeout is only a
        # backstop behind it (were it first, a stall would count as a dropped connection).
        backstop = max(limits.first_byte_s, limits.stall_window_s) + 5.0
        timeout = httpx.Timeout(backstop, connect=min(limits.first_byte_s, _CONNECT_S))
        client = http_client(
            DownloadError,
            timeout=timeout,
            follow_redirects=True,
            limits=httpx.Limits(max_keepalive_connections=0),  # one socket per request
            headers={"Accept-Encoding": "identity"},  # Range counts the file's own bytes
        )
        why = "the connection ended early"
        with client:
            for _ in range(max(attempts, 1)):
                if _size(self.part) and _size(self.part) == self.expected:
                    return self.resumed_from
                try:
                    if self._request(client):
                        return self.resumed_from
                except httpx.UnsupportedProtocol as exc:  # a redirect to file://, ftp://...
                    raise DownloadError(
                        self._failed(
                            f"redirected to something that is not an http(s) address ({exc})"
                        )
                    ) from exc
                except (httpx.TransportError, httpx.StreamError) as exc:
                    why = f"{type(exc).__name__}: {exc}{proxy_in_use(self.entry.url)}"
                except httpx.HTTPError as exc:
                    raise DownloadError(self._failed(f"{type(exc).__name__}: {exc}")) from exc
                except httpx.InvalidURL as exc:
                    raise DownloadError(self._failed(f"invalid address: {exc}")) from exc
        kept = _size(self.part)
        raise DownloadError(
            f"download of {self.entry.name} interrupted ({why}); "
            f"{kept:,} bytes kept in {self.part.name}, run it again to resume"
        )

    def _prepare(self) -> int:
        """A ``.part`` longer than the expected file cannot be a prefix of it: drop it.

        A ``.part`` that is a symbolic link or a folder is not ours: writing to it would
        append to (or truncate) whatever file it points at, so it is refused untouched.
        """
        _refuse_unless_plain(self.part)
        size = _size(self.part)
        if self.expected is not None and size > self.expected:
            _unlink(self.part)
            return 0
        return size

    def _failed(self, reason: str) -> str:
        return f"cannot download {self.entry.name} from {self.entry.url}: {reason}"

    def _request(self, client: httpx.Client) -> bool:
        """One request; True when the ``.part`` now holds the whole file."""
        offset = _size(self.part)
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        with Watchdog(self.limits, self.cancel) as watch:
            try:
                with client.stream(
                    "GET", self.entry.url, headers=headers, extensions={"trace": watch.trace}
                ) as response:
                    watch.answered()
                    plan = self._plan(response, offset)
                    if plan.action == "complete":
                        return True
                    if plan.action == "discard":
                        _unlink(self.part)
                        self.resumed_from = 0
                        # a size a server announced described the bytes just dropped; the
                        # next answer starts afresh (a lying first answer, then a 416 that
                        # contradicts it, must not cap a correct second download)
                        self.expected = self.entry.size_bytes
                        return False
                    if plan.start == 0:
                        self.resumed_from = 0
                    written = self._write(response, plan, watch)
            except (httpx.HTTPError, DownloadError):
                self._stopped(watch)
                raise
            self._stopped(watch)
        if plan.total is not None:
            return written == plan.total
        return plan.limit is None or written == plan.limit

    def _plan(self, response: httpx.Response, offset: int) -> Plan:
        # A 416's total is the server's latest word on the size: only the catalogue's size
        # overrides it, not an earlier answer's claim (a first answer claiming three bytes
        # more than it sent, then an honest 416, dropped a complete .part).
        status = response.status_code
        expected = self.entry.size_bytes if status == 416 else self.expected
        try:
            plan = plan_answer(
                status, response.headers, offset, expected, self.limits.hard_cap_bytes
            )
        except DownloadError as exc:
            kept = f"{offset:,} bytes kept in {self.part.name}" if offset else "nothing was saved"
            raise DownloadError(f"{self._failed(str(exc))}; {kept}") from None
        if self.expected is None and plan.total is not None:
            self.expected = plan.total  # later answers must agree with this one
        return plan

    def _write(self, response: httpx.Response, plan: Plan, watch: Watchdog) -> int:
        """Write the body at ``plan.start``; returns the ``.part`` size reached."""
        limit = plan.limit if plan.limit is not None else self.limits.hard_cap_bytes
        if plan.total is not None:
            _check_space(self.part.parent, plan.total - plan.start)
        started = time.monotonic()
        done = plan.start
        try:
            out = _open_part(self.part, append=bool(plan.start))
        except OSError as exc:
            raise _disk_error(exc, self.part) from exc
        head = b""  # a body from the start must begin like a model before it is kept
        room_checked: int | None = None  # looked at before the first write, then every so often
        with out:
            for chunk in response.iter_raw():
                watch.received(len(chunk))
                if self.cancel is not None and self.cancel.is_set():
                    break
                if plan.start == 0 and len(head) < len(GGUF_MAGIC):
                    head += chunk[: len(GGUF_MAGIC) - len(head)]
                    if not GGUF_MAGIC.startswith(head):
                        out.close()
                        self._truncate(0)
                        raise DownloadError(
                            self._failed(
                                f"the server sent something that is not a GGUF model (it "
                                f"begins {head!r}); nothing was kept"
                            )
                        )
                if plan.total is None and (
                    room_checked is None or done - room_checked >= ROOM_EVERY_BYTES
                ):
                    room_checked = done  # a body of unknown size: never the last free bytes
                    free = shutil.disk_usage(self.part.parent).free
                    if free < ROOM_LEFT_BYTES:
                        kept = f"{done:,} bytes kept in {self.part.name}"
                        if not done:
                            out.close()
                            self._truncate(0)  # nothing of it: no empty .part left
                            kept = "nothing was kept"
                        raise DownloadError(
                            self._failed(
                                f"the disk holding {self.part.parent} is nearly full "
                                f"({_mb(free)} free) and the server did not say how large "
                                f"the file is"
                            )
                            + f"; {kept}"
                        )
                if len(chunk) > limit - done:
                    out.close()
                    self._truncate(plan.start)
                    kept = f"{plan.start:,} bytes kept in {self.part.name}"
                    raise DownloadError(
                        self._failed(f"the server sent more than the {limit:,} bytes expected")
                        + f"; the download was stopped, {kept}"
                    )
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise _disk_error(exc, self.part) from exc
                done += len(chunk)
                if self.progress is not None:
                    elapsed = max(time.monotonic() - started, 1e-6)
                    speed = (done - plan.start) / elapsed
                    total = plan.total
                    eta = (total - done) / speed if total and speed > 0 else None
                    self.progress(Progress("downloading", done, total, speed, eta))
        return done

    def _truncate(self, size: int) -> None:
        """Back to what the ``.part`` held before this answer (a true prefix)."""
        try:
            if size:
                fd = os.open(self.part, os.O_WRONLY | _NOFOLLOW)  # never through a link
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
            else:
                _unlink(self.part)
        except OSError as exc:
            raise _disk_error(exc, self.part) from exc

    def _stopped(self, watch: Watchdog) -> None:
        """Turn the watchdog's stop (or the cancel event) into its one-line message."""
        reason = watch.reason
        if reason is None and self.cancel is not None and self.cancel.is_set():
            reason = "cancel"
        if reason is None:
            return
        kept = f"{_size(self.part):,} bytes kept in {self.part.name}"
        if reason == "cancel":
            raise DownloadCancelled(
                f"download of {self.entry.name} cancelled; {kept} to resume later"
            )
        limits = self.limits
        if reason == "deadline":
            why = f"no answer within {limits.first_byte_s:g} s"
        else:
            why = (
                f"stalled: less than {limits.min_rate_bps / 1024:g} KiB/s over "
                f"{limits.stall_window_s:g} s"
            )
        raise DownloadStalled(
            f"download of {self.entry.name} stopped ({why}); {kept}, run it again to resume"
        )


_CONNECT_S = 10.0
ROOM_EVERY_BYTES = 64 * 1024**2
"""How often a body of unknown size looks at the free space it is written into."""
ROOM_LEFT_BYTES = 512 * 1024**2
"""The free space a body of unknown size never writes into: an endless answer stops
there, not at the 64 GiB cap with the disk full."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
"""Opening the ``.part`` never follows a link that appeared after the check (POSIX)."""


def _open_part(part: Path, *, append: bool) -> BinaryIO:
    """The ``.part`` for writing (appending from its end, or emptied), never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    return os.fdopen(os.open(part, flags | _NOFOLLOW, 0o644), "ab" if append else "wb")


def _refuse_unless_plain(path: Path) -> None:
    """Raise DownloadError when ``path`` exists and is not a regular file of its own (a
    symbolic link, a folder, or a hard link sharing its bytes with another name)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DownloadError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise DownloadError(
            f"{path} is not a regular file (a link or a folder); it was left alone: "
            "remove it and run the download again"
        )
    if info.st_nlink > 1:  # a hard link: appending would change the other name's file
        raise DownloadError(
            f"{path} is also another name of a file (a hard link); it was left alone: "
            "remove it and run the download again"
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise DownloadError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot delete {path}: {exc.strerror or exc}") from exc


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
    size = _size(part)
    if progress is not None:
        progress(Progress("verifying", size, size, 0.0, None))
    if entry.size_bytes is not None and size != entry.size_bytes:
        part.unlink(missing_ok=True)
        raise ChecksumMismatch(
            f"{entry.name}: downloaded {size:,} bytes, the catalogue says {entry.size_bytes:,}; "
            "the file was deleted"
        )
    try:
        digest = file_sha256(part)
    except OSError as exc:
        raise DownloadError(f"cannot read {part}: {exc.strerror or exc}") from exc
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
    try:
        os.replace(part, target)
    except OSError as exc:
        raise DownloadError(
            f"cannot rename {part} to {target.name}: {exc.strerror or exc}"
        ) from exc
    return DownloadResult(target, digest, entry.sha256 is not None, resumed_from)
