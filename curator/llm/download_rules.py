"""What a model download accepts from a server, and the limits after which it gives up.

A server's answer decides where its body goes in ``FILE.part``, and a wrong decision
corrupts the model silently (a checksum, when the catalogue has none, cannot catch it). So
each answer is checked *before* a byte is written, by :func:`plan_answer`:

* ``206 Partial Content`` is appended only when its ``Content-Range`` starts exactly at
  the size of the ``.part`` file; one that starts at byte 0 is the file from its beginning
  and replaces the ``.part``; any other range, a missing or unreadable ``Content-Range``, a
  ``Content-Length`` that disagrees with the range, or a total that disagrees with the
  catalogue's size is refused, and the ``.part`` stays as it was.
* ``200 OK`` to a resume request means the server ignored the ``Range`` header: the
  download starts again from byte 0 (the ``.part`` is replaced), unless its
  ``Content-Length`` contradicts the catalogue's size, which is refused.
* ``416 Range Not Satisfiable`` is never taken on trust as "already complete": the
  ``.part`` is kept only when its size is the expected size (the catalogue's; without
  one, the size the 416 states, the server's latest word, which the checksum then
  checks); otherwise it is discarded and the download starts again from byte 0, having
  forgotten any size an earlier answer announced.

Every body is also capped while it is written: at the catalogue's ``size_bytes``, else at
the size the server announced, else at :data:`HARD_CAP_BYTES` (64 GiB, larger than any
model a desktop runs), so a server that sends an endless body cannot fill the disk.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from curator.core.redact import one_line, redact
from curator.errors import CuratorError

HARD_CAP_BYTES = 64 * 1024**3
"""The most a download of an entry without ``size_bytes`` may write (64 GiB)."""

FIRST_BYTE_ENV = "CURATOR_DOWNLOAD_DEADLINE_S"
STALL_ENV = "CURATOR_DOWNLOAD_STALL_S"


class DownloadError(CuratorError):
    """The download failed; the message is one line saying why and what was kept.

    Every download message is made here, so every one is redacted here: a catalogue URL
    may carry a user name and password, and the message ends up in bug reports.
    """

    exit_code = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(redact(one_line(message)), exit_code=exit_code)


class DownloadCancelled(DownloadError):
    exit_code = 1


class DownloadStalled(DownloadError):
    """No answer in time, or bytes arriving too slowly; the ``.part`` is kept."""


class ChecksumMismatch(DownloadError):
    pass


@dataclass(frozen=True)
class DownloadLimits:
    """When a download gives up instead of waiting forever.

    ``first_byte_s`` bounds connecting plus receiving the answer's headers, in total (a
    server that accepts the connection and then drips its headers is stopped too).
    Afterwards the body must average at least ``min_rate_bps`` over each
    ``stall_window_s`` window (silence included); a slower transfer stops, keeping its
    ``.part`` for a resume. ``$CURATOR_DOWNLOAD_DEADLINE_S`` and
    ``$CURATOR_DOWNLOAD_STALL_S`` change the two durations.
    """

    first_byte_s: float = 60.0
    stall_window_s: float = 30.0
    min_rate_bps: float = 1024.0
    hard_cap_bytes: int = HARD_CAP_BYTES

    @classmethod
    def from_env(cls) -> DownloadLimits:
        return cls(
            first_byte_s=_seconds(FIRST_BYTE_ENV, cls.first_byte_s),
            stall_window_s=_seconds(STALL_ENV, cls.stall_window_s),
        )


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise CuratorError(f"${name} must be a number of seconds (0 < s <= 86400), not {raw!r}")
    return value


_RANGE = re.compile(r"\s*bytes\s+(\d{1,20})-(\d{1,20})/(\d{1,20}|\*)\s*", re.IGNORECASE)
_UNSATISFIED = re.compile(r"\s*bytes\s+\*/(\d{1,20})\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Plan:
    """What to do with one answer's body."""

    action: Literal["write", "complete", "discard"]
    """``write`` the body at ``start``; the ``.part`` is ``complete``; ``discard`` it."""
    start: int = 0
    """Where the body begins in the file (0: it replaces the ``.part``)."""
    limit: int | None = None
    """The file size the body may reach at most (None: only the hard cap applies)."""
    total: int | None = None
    """The file's full size, when the catalogue or the server says it."""


def plan_answer(
    status: int,
    headers: Mapping[str, str],
    offset: int,
    expected: int | None,
    hard_cap: int = HARD_CAP_BYTES,
) -> Plan:
    """Decide what an answer to a request from byte ``offset`` means, before writing.

    ``expected`` is the file size the catalogue publishes (or the server announced in an
    earlier answer of this download). Raises :class:`DownloadError` for an answer that
    must not be written; the ``.part`` is untouched then.
    """
    if status == 416 and offset:
        found = _UNSATISFIED.fullmatch(headers.get("content-range", ""))
        total = int(found.group(1)) if found else None
        size = expected if expected is not None else total
        if size is not None and size == offset:
            return Plan("complete", total=size)
        return Plan("discard")
    if status >= 400:
        reason = "not found" if status == 404 else f"error {status}"
        raise DownloadError(f"the server answered HTTP {status} {reason}")
    length = _length(headers)
    if status == 200:
        return _whole(length, expected, hard_cap)
    if status != 206:
        raise DownloadError(f"the server answered HTTP {status} instead of the file")
    found = _RANGE.fullmatch(headers.get("content-range", ""))
    if found is None:
        raise DownloadError(
            "the server answered the resume request with HTTP 206 but without a valid "
            f"Content-Range ({_shown(headers.get('content-range'))})"
        )
    first, last = int(found.group(1)), int(found.group(2))
    total = None if found.group(3) == "*" else int(found.group(3))
    if last < first or (total is not None and last >= total):
        raise DownloadError(f"the server sent an impossible Content-Range {found.group(0)!r}")
    if first not in (0, offset):
        raise DownloadError(
            f"the server sent bytes from {first} when asked for bytes from {offset}"
        )
    if length is not None and length != last - first + 1:
        raise DownloadError(
            f"the server's Content-Length {length} does not match its Content-Range "
            f"{found.group(0).strip()!r}"
        )
    _check_total(total, expected)
    size = expected if expected is not None else total
    _check_cap(size if size is not None else last + 1, expected, hard_cap)
    return Plan("write", start=first, limit=min(last + 1, size or last + 1), total=size)


def _whole(length: int | None, expected: int | None, hard_cap: int) -> Plan:
    _check_total(length, expected)
    size = expected if expected is not None else length
    if size is not None:
        _check_cap(size, expected, hard_cap)
    return Plan("write", start=0, limit=size, total=size)


def _check_cap(size: int, expected: int | None, hard_cap: int) -> None:
    """A download without a published size takes at most ``hard_cap`` bytes, whatever
    the answer (a 200's length or a 206's range) says."""
    if expected is None and size > hard_cap:
        raise DownloadError(
            f"the server offers {size:,} bytes, more than the {hard_cap:,} a download "
            "without a published size may take"
        )


def _check_total(total: int | None, expected: int | None) -> None:
    if total is not None and expected is not None and total != expected:
        raise DownloadError(f"the server's file is {total:,} bytes, but {expected:,} were expected")


def _length(headers: Mapping[str, str]) -> int | None:
    raw = headers.get("content-length")
    if raw is None:
        return None
    raw = raw.strip()
    if not raw.isdigit() or not raw.isascii() or len(raw) > 20:
        raise DownloadError(f"the server sent an unreadable Content-Length {_shown(raw)}")
    return int(raw)


def _shown(value: str | None) -> str:
    if value is None:
        return "none"
    return repr(value[:60])
