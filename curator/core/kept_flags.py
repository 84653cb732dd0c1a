"""The detector's flags of texts already read, kept between runs.

A reviewer's tools read the same texts again and again: ``curator review RUN --json``
polled by a script waiting for a person's decisions, the Review pane reopened on a run
of a thousand candidates. Each read loaded the detector (its rules and learned reader: a
tenth of a second before the first text) and read every text again (one to several
milliseconds each), for flags that only change with the text, the agent's axioms and
identity, or the detector itself. :func:`detect_kept` answers from a table kept in the
user cache (:class:`~curator.core.derived_cache.KeptTable`, signed like every derived
file) and imports the detector only for a text it has not read.

An entry is found by a digest of the text, the axioms and the identity, so a changed
axiom or identity reads the text anew. The table belongs to one build of the detector,
:func:`detector_key`: the version, the Python, and every file the detector is made of
(the modules of :mod:`curator.core`, where all of its code lives, a test holds, and the
learned reader's weights), each by name, size and modification time, as Python itself
decides whether a module's compiled bytecode still stands for its source. Where those
files cannot be listed (a frozen build keeps its modules in an archive) nothing is kept
and every text is read, as without this module.

Only the places that *show* flags use this (:mod:`curator.pipeline.flagging`). The
intake paths (``record_episode``, audits) read texts that are new by nature, and keeping
those would only grow the table.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from curator import __version__
from curator.core.derived_cache import KeptTable
from curator.core.flag_type import Flag

__all__ = ["detect_kept", "detector_key"]

_FILE = "flag-results.bin"
_LIMIT = 20000
"""More kept texts than this: keep this run's (a run of 20,000 candidates stays whole)."""
_CORE = Path(__file__).resolve().parent
_KEY: list[bytes | None] = []


def detector_key() -> bytes | None:
    """What every kept flag is derived from (see the module); None where the detector's
    files cannot be listed, and then nothing is kept."""
    if not _KEY:
        _KEY.append(_derive_key())
    return _KEY[0]


def _derive_key() -> bytes | None:
    from curator.resources_path import resource_path

    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{__version__}\0{sys.version}\0{sys.implementation.cache_tag}".encode())
    try:
        entries = sorted((e.name, e.stat()) for e in os.scandir(_CORE) if e.name.endswith(".py"))
        weights = resource_path("flag_reader.bin").stat()
    except OSError:
        return None
    if not any(name == "flags.py" for name, _ in entries):
        return None
    for name, st in (*entries, ("flag_reader.bin", weights)):
        digest.update(f"\0{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest().encode()


_TABLE: KeptTable[bytes, tuple[tuple[str, str, int, int, str], ...]] = KeptTable(
    _FILE, lambda: detector_key() or b"", _LIMIT, threading.Lock()
)


def _entry_key(text: str, axioms: tuple[str, ...], identity_text: str) -> bytes:
    # marshal keeps the three apart whatever they contain (a separator could be in a text)
    return hashlib.blake2b(marshal.dumps((text, axioms, identity_text)), digest_size=16).digest()


def detect_kept(text: str, axioms: Sequence[str] = (), identity_text: str = "") -> list[Flag]:
    """:func:`curator.core.flags.detect`'s flags of ``text``, from the table when this
    build of the detector read the same text against the same axioms and identity."""
    axioms = tuple(axioms)
    if detector_key() is None:
        return _detect(text, axioms, identity_text)
    try:
        key = _entry_key(text, axioms, identity_text)
    except ValueError:  # not plain strings (a str subclass): read, and keep nothing
        return _detect(text, axioms, identity_text)
    kept = _TABLE.get(key)
    if kept is not None:
        try:
            return [Flag(str(k), str(r), int(s), int(e), str(m)) for k, r, s, e, m in kept]
        except (TypeError, ValueError):  # not an entry this module wrote: read the text
            pass
    found = _detect(text, axioms, identity_text)
    if _whole():
        _TABLE.put(key, tuple((f.kind, f.reason, f.start, f.end, f.match) for f in found))
    return found


def _detect(text: str, axioms: tuple[str, ...], identity_text: str) -> list[Flag]:
    from curator.core.flags import detect  # the rules and the reader: only for a new text

    return detect(text, axioms, identity_text)


def _whole() -> bool:
    """Whether the detector read with all of itself: where the learned reader's weights
    could not be read (a moment's lack of file handles, a permission put right later),
    the rules read alone, and the weight file, and so the key, is the same once it reads
    again; flags kept then would hide the reader's flags from every later run."""
    from curator.core.flag_learned import reader_unavailable

    return not reader_unavailable()
