"""Work derived from the shipped code and data, kept in the user cache between runs.

The poisoning detector compiles a few hundred regular expressions (the word families of
eighteen languages) and unpacks its learned reader's weights before it reads its first
text: about half a second that every ``curator review`` paid again, although the result
only changes when the patterns, the weights or Python change. Both are kept here, keyed by
exactly what they are derived from, so a changed pattern or weight file is simply
derived again:

* :func:`regex` - ``re.compile`` whose compiled program is kept per pattern,
  flags and Python version (``_sre.MAGIC``); a kept program gives the very pattern object
  ``re.compile`` builds (patterns compare equal by their program, and tests hold it). The
  detector's programs (most of a megabyte) and the few of the store and the text
  measures (:data:`TEXT_PATTERNS_FILE`) are kept in two files, so a command that reads
  no text for flags does not read the detector's.
* :func:`load` / :func:`store` - bytes derived from one input (the reader's dense table),
  checked against a key the caller derives from that input.
* :class:`KeptTable` - many small derived entries in one file, read whole on first use
  and written whole at exit when the run added any: the programs :func:`regex` keeps,
  the dataclass methods :mod:`curator.core.kept_code` keeps and the flags
  :mod:`curator.core.kept_flags` keeps.

Every file is signed with a random secret kept beside it (readable by its owner alone,
:data:`SECRET_FILE`), and only a file this account's runs signed is used: a kept program
is handed to ``_sre.compile``, which trusts it, so a damaged, foreign or hand-made file
could otherwise crash the interpreter or match other text than its pattern. A missing,
stale, damaged, unsigned or unwritable cache only costs the time it saves; where no
secret can be kept (a folder another account owns the secret of), nothing is kept.
``$CURATOR_CACHE_DIR`` overrides the user cache directory.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import marshal
import os
import re
import stat
import sys
import threading
from array import array
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["KeptTable", "cache_dir", "load", "regex", "save_patterns", "store"]

CACHE_ENV = "CURATOR_CACHE_DIR"
_MAGIC = b"CRS1"
SECRET_FILE = "secret"
_SECRET_BYTES = 32
_TAG_BYTES = 32
_SECRETS: dict[Path, bytes] = {}
"""The secret read or made per cache folder in this run."""


def cache_dir() -> Path:
    """The user cache directory (``$CURATOR_CACHE_DIR`` overrides it)."""
    base = os.environ.get(CACHE_ENV)
    if not base:
        import platformdirs

        base = platformdirs.user_cache_dir("memory-curator", appauthor=False)
    return Path(base)


def _read_plain(path: Path, limit: int | None, *, private: bool = False) -> bytes | None:
    """The bytes of ``path`` when it is a plain file (no link: every kept file is written
    by :func:`store`) of at most ``limit`` bytes (None: any size), and with ``private``
    one that only this account can read and write (checked on systems with owners and
    modes); else None. A pipe or device in its place is neither waited on nor read
    without end."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (limit is not None and info.st_size > limit):
            return None
        foreign = hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o077)
        if private and foreign:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read() if limit is None else handle.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if limit is None or len(data) <= limit else None


def _read_secret(path: Path) -> bytes | None:
    """The secret in ``path`` when it is a private plain file of the right size."""
    data = _read_plain(path, _SECRET_BYTES, private=True)
    return data if data is not None and len(data) == _SECRET_BYTES else None


def _secret(folder: Path, *, create: bool) -> bytes | None:
    """The folder's signing secret; made (written whole, then linked into place, so two
    runs making it at once agree on one) when ``create`` and there is none yet."""
    kept = _SECRETS.get(folder)
    if kept is not None:
        return kept
    path = folder / SECRET_FILE
    secret = _read_secret(path)
    if secret is None and create and not os.path.lexists(path):
        part = folder / f".{SECRET_FILE}.{os.getpid()}.{threading.get_ident()}.part"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, os.urandom(_SECRET_BYTES))  # what secrets.token_bytes reads
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):
                os.link(part, path)
        except OSError:
            return None
        finally:
            with contextlib.suppress(OSError):
                part.unlink()
        secret = _read_secret(path)
    if secret is not None:
        _SECRETS[folder] = secret
    return secret


def _tag(secret: bytes, key: bytes, body: bytes) -> bytes:
    head = _MAGIC + len(key).to_bytes(2, "little") + key
    return hmac.new(secret, head + body, hashlib.sha256).digest()


def load(name: str, key: bytes, limit: int | None = None) -> bytes | None:
    """The bytes kept under ``name`` for ``key``; None when absent, stale, damaged,
    not signed with this cache folder's secret, not a plain file or, with ``limit``,
    a file larger than that."""
    folder = cache_dir()
    secret = _secret(folder, create=False)
    if secret is None:
        return None
    raw = _read_plain(folder / name, limit)
    if raw is None:
        return None
    head = len(_MAGIC) + 2
    if raw[: len(_MAGIC)] != _MAGIC or len(raw) < head:
        return None
    size = int.from_bytes(raw[len(_MAGIC) : head], "little")
    if raw[head : head + size] != key:
        return None
    tag = raw[head + size : head + size + _TAG_BYTES]
    body = raw[head + size + _TAG_BYTES :]
    if not hmac.compare_digest(tag, _tag(secret, key, body)):
        return None
    return body


def store(name: str, key: bytes, body: bytes) -> None:
    """Keep ``body`` under ``name`` for ``key`` (signed, written whole, then renamed
    into place); nothing is kept where no secret can be."""
    folder = cache_dir()
    secret = _secret(folder, create=True)
    if secret is None:
        return
    data = b"".join((_MAGIC, len(key).to_bytes(2, "little"), key, _tag(secret, key, body), body))
    part = folder / f".{name}.{os.getpid()}.{threading.get_ident()}.part"
    # A new file of our own, never through whatever already has that name: a link
    # planted there by anyone who can write to the folder would be written through.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        try:
            with os.fdopen(os.open(part, flags | getattr(os, "O_BINARY", 0), 0o600), "wb") as out:
                out.write(data)
            os.replace(part, folder / name)
        finally:
            with contextlib.suppress(OSError):
                part.unlink()


# -- tables of kept entries ----------------------------------------------------------------

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


def load_table(name: str, key: bytes) -> dict[Any, Any]:
    """The table of entries kept under ``name`` for ``key`` (a marshalled dict); empty
    when absent, stale, damaged or unsigned."""
    body = load(name, key)
    if body is None:
        return {}
    try:
        kept = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    return kept if isinstance(kept, dict) else {}


class KeptTable(Generic[_K, _V]):
    """Entries derived from the code, kept between runs in one signed file ``name``.

    The file is read whole on the first :meth:`get` (so a run that needs none reads
    nothing) and written whole, signed for :attr:`key` (``key()``: what the entries are
    derived from, such as the Python version), then renamed into place (:func:`store`)
    at exit, when the run :meth:`put` any entry anew. Where more than ``limit`` are kept
    (older versions' entries pile up), only those this run used are written.

    Every read and change of the table is taken under ``lock``; :meth:`load` runs under it
    too, so a caller whose reading can come back to the table (kept_code's: the cache
    folder's lookup imports modules whose classes go through its hook) passes an RLock.
    ``accept(key, entry)`` drops entries of another type from a read file.
    """

    def __init__(
        self,
        name: str,
        key: Callable[[], bytes],
        limit: int,
        lock: contextlib.AbstractContextManager[Any],
        accept: Callable[[Any, Any], bool] | None = None,
    ) -> None:
        self.name = name
        self.key = key
        self.limit = limit
        self.lock = lock
        self.accept = accept
        self.entries: dict[_K, _V] = {}
        self.used: set[_K] = set()
        self.loaded = False
        self.dirty = False

    def load(self) -> None:
        """Read the kept entries into the table (marked loaded first: see the class)."""
        self.loaded = True
        kept = load_table(self.name, self.key())
        accept = self.accept
        self.entries.update(
            kept if accept is None else {k: v for k, v in kept.items() if accept(k, v)}
        )

    def get(self, key: _K) -> _V | None:
        """The entry kept for ``key`` (reading the file on the first call), marked used."""
        with self.lock:
            if not self.loaded:
                self.load()
            self.used.add(key)
            return self.entries.get(key)

    def put(self, key: _K, entry: _V) -> None:
        """Keep ``entry`` for ``key``; the table is written at exit (or by :meth:`save`)."""
        with self.lock:
            self.entries[key] = entry
            if not self.dirty:
                self.dirty = True
                atexit.register(self.save)

    def save(self) -> None:
        """Write the table if this run added an entry since it was last written."""
        with self.lock:
            if not self.dirty:
                return
            self.dirty = False
            kept = dict(self.entries)
        if len(kept) > self.limit:
            kept = {key: entry for key, entry in kept.items() if key in self.used}
        try:
            body = marshal.dumps(kept)
        except ValueError:  # pragma: no cover - every kept entry is a marshallable value
            return
        store(self.name, self.key(), body)


# -- compiled patterns ----------------------------------------------------------------------

_Entry = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]
"""What ``_sre.compile`` takes, the program packed as machine words (``array("I")``): a
list of a few hundred thousand ints took most of the time reading the file."""

_PATTERNS_FILE = "patterns.bin"
_LIMIT = 5000
"""More kept programs than this (patterns of older versions pile up): keep this run's."""
_STATE: dict[str, Any] = {"usable": True}
"""``usable``: this Python's ``re`` internals are the ones :func:`_entry` expects."""


def _patterns_key() -> bytes:
    import _sre

    return f"{sys.implementation.cache_tag}-{_sre.MAGIC}-{_sre.CODESIZE}-{sys.byteorder}-I".encode()


_PATTERNS: KeptTable[tuple[str, int], _Entry] = KeptTable(
    _PATTERNS_FILE, _patterns_key, _LIMIT, threading.Lock()
)
"""The kept programs by pattern and flags (the detector's: most of a megabyte)."""

TEXT_PATTERNS_FILE = "text-patterns.bin"
"""The programs of the text measures and the quality gate, kept apart from the
detector's: a command that shows a run without reading it for flags (its flags kept by
:mod:`curator.core.kept_flags`) then reads a small file, not the detector's programs."""

_PATTERN_TABLES: dict[str, KeptTable[tuple[str, int], _Entry]] = {
    _PATTERNS_FILE: _PATTERNS,
    TEXT_PATTERNS_FILE: KeptTable(TEXT_PATTERNS_FILE, _patterns_key, _LIMIT, threading.Lock()),
}
"""The two files of kept programs, by name (what :func:`regex`'s ``kept_in`` names)."""


def regex(pattern: str, flags: int = 0, *, kept_in: str = _PATTERNS_FILE) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, its program kept between runs (see the module) in
    the file ``kept_in``."""
    if not isinstance(pattern, str | bytes):  # a compiled pattern: re hands it back
        return re.compile(pattern, flags)
    flags = int(flags)
    table = _PATTERN_TABLES[kept_in]
    entry = table.get((pattern, flags))
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
    except Exception:
        # Flags re refuses (LOCALE with a str), a pattern already compiled: re.compile
        # raises or answers as it does for any caller, and the cache stays in use. Only
        # where re.compile succeeds and the internals did not do they differ in this
        # Python: compile as re does from then on, uncached.
        compiled = re.compile(pattern, flags)
        _STATE["usable"] = False
        return compiled
    table.put((pattern, flags), entry)
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
    program = array("I", code).tobytes()  # words of _sre.CODESIZE, in the key
    return (state_flags, program, int(parsed.state.groups - 1), groupindex, tuple(indexgroup))


def _from_entry(pattern: str, entry: _Entry) -> re.Pattern[str]:
    import _sre

    state_flags, packed, groups, groupindex, indexgroup = entry
    code = array("I")
    code.frombytes(packed)
    compiled: re.Pattern[str] = _sre.compile(
        pattern, state_flags, code.tolist(), groups, groupindex, indexgroup
    )
    return compiled


def save_patterns() -> None:
    """Write the kept programs if this run compiled any anew (also run at exit)."""
    for table in _PATTERN_TABLES.values():
        table.save()
