"""Work derived from the shipped code and data, kept in the user cache between runs.

The poisoning detector compiles a few hundred regular expressions (the word families of
eighteen languages) and unpacks its learned reader's weights before it reads its first
text: about half a second that every ``curator review`` paid again, although the result
only changes when the patterns, the weights or Python change. Both are kept here, keyed by
exactly what they are derived from, so a changed pattern or weight file is simply
derived again:

* :func:`regex` - ``re.compile`` whose compiled program is kept per pattern,
  flags and Python version (``_sre.MAGIC``); a kept program gives the very pattern object
  ``re.compile`` builds (patterns compare equal by their program, and tests hold it).
* :func:`load` / :func:`store` - bytes derived from one input (the reader's dense table),
  checked against a key the caller derives from that input.

Every file carries a checksum; a missing, stale, damaged or unwritable cache only costs
the time it saves. ``$CURATOR_CACHE_DIR`` overrides the user cache directory.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import re
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "load", "regex", "save_patterns", "store"]

CACHE_ENV = "CURATOR_CACHE_DIR"
_MAGIC = b"CRC1"


def cache_dir() -> Path:
    """The user cache directory (``$CURATOR_CACHE_DIR`` overrides it)."""
    base = os.environ.get(CACHE_ENV)
    if not base:
        import platformdirs

        base = platformdirs.user_cache_dir("memory-curator", appauthor=False)
    return Path(base)


def load(name: str, key: bytes) -> bytes | None:
    """The bytes kept under ``name`` for ``key``; None when absent, stale or damaged."""
    try:
        raw = (cache_dir() / name).read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 2
    if raw[: len(_MAGIC)] != _MAGIC or len(raw) < head:
        return None
    size = int.from_bytes(raw[len(_MAGIC) : head], "little")
    if raw[head : head + size] != key:
        return None
    body = raw[head + size + 4 :]
    if zlib.crc32(body).to_bytes(4, "little") != raw[head + size : head + size + 4]:
        return None
    return body


def store(name: str, key: bytes, body: bytes) -> None:
    """Keep ``body`` under ``name`` for ``key`` (written whole, then renamed into place)."""
    folder = cache_dir()
    data = b"".join(
        (_MAGIC, len(key).to_bytes(2, "little"), key, zlib.crc32(body).to_bytes(4, "little"), body)
    )
    part = folder / f".{name}.{os.getpid()}.{threading.get_ident()}.part"
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            part.write_bytes(data)
            os.replace(part, folder / name)
        finally:
            with contextlib.suppress(OSError):
                part.unlink()


# -- compiled patterns ----------------------------------------------------------------------

_Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]

_PATTERNS_FILE = "patterns.bin"
_LOCK = threading.Lock()
_ENTRIES: dict[tuple[str, int], _Entry] = {}
_USED: set[tuple[str, int]] = set()
_LIMIT = 5000
"""More kept programs than this (patterns of older versions pile up): keep this run's."""
_STATE: dict[str, Any] = {"loaded": False, "dirty": False, "usable": True}


def _patterns_key() -> bytes:
    import _sre

    return f"{sys.implementation.cache_tag}-{_sre.MAGIC}-{_sre.CODESIZE}".encode()


def _load_patterns() -> None:
    _STATE["loaded"] = True
    body = load(_PATTERNS_FILE, _patterns_key())
    if body is None:
        return
    try:
        kept = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return
    if isinstance(kept, dict):
        _ENTRIES.update(kept)


def regex(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, its program kept between runs (see the module)."""
    flags = int(flags)
    with _LOCK:
        if not _STATE["loaded"]:
            _load_patterns()
        entry = _ENTRIES.get((pattern, flags))
        _USED.add((pattern, flags))
    if entry is not None:
        try:
            return _from_entry(pattern, entry)
        except Exception:  # a kept program this Python refuses: compile it anew
            pass
    if not _STATE["usable"]:
        return re.compile(pattern, flags)
    try:
        entry = _entry(pattern, flags)
        compiled = _from_entry(pattern, entry)
    except re.error:
        raise
    except Exception:  # the internals differ in this Python: compile as re does, uncached
        _STATE["usable"] = False
        return re.compile(pattern, flags)
    with _LOCK:
        _ENTRIES[(pattern, flags)] = entry
        if not _STATE["dirty"]:
            _STATE["dirty"] = True
            atexit.register(save_patterns)
    return compiled


def _entry(pattern: str, flags: int) -> _Entry:
    """What ``re._compiler.compile`` hands to ``_sre.compile``, as it computes it."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    state_flags = int(flags | parsed.state.flags)
    # the opcodes are int subclasses (named constants): kept as plain ints
    program = [int(op) for op in code]
    return (state_flags, program, int(parsed.state.groups - 1), groupindex, tuple(indexgroup))


def _from_entry(pattern: str, entry: _Entry) -> re.Pattern[str]:
    import _sre

    state_flags, code, groups, groupindex, indexgroup = entry
    compiled: re.Pattern[str] = _sre.compile(
        pattern, state_flags, code, groups, groupindex, indexgroup
    )
    return compiled


def save_patterns() -> None:
    """Write the kept programs if this run compiled any anew (also run at exit)."""
    with _LOCK:
        if not _STATE["dirty"]:
            return
        _STATE["dirty"] = False
        kept = dict(_ENTRIES)
        if len(kept) > _LIMIT:
            kept = {key: entry for key, entry in kept.items() if key in _USED}
        try:
            body = marshal.dumps(kept)
        except ValueError:  # pragma: no cover - every kept part is a plain int, str or dict
            return
    store(_PATTERNS_FILE, _patterns_key(), body)
