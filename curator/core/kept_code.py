"""The methods ``@dataclass`` generates, compiled once and kept between runs.

Python 3.11's :mod:`dataclasses` writes each class's ``__init__``, ``__repr__``,
``__eq__`` (and for frozen classes ``__setattr__``, ``__delattr__``, ``__hash__``) as
source text and compiles it with ``exec`` while the module defining the class is
imported: about a millisecond a class. ``curator review --json`` imports some thirty
such classes, a fifth of its start-up, paid again at every start by the cron jobs, shells
and agents that run the command often, although the text only changes with the code.

:func:`install` (called by the command line before it imports anything else of ours)
gives the :mod:`dataclasses` module an ``exec`` of its own that looks the source text up
among the code objects compiled by earlier runs and compiles only what is new; the code
objects are kept in the user cache (a :class:`~curator.core.derived_cache.KeptTable`:
signed with this account's secret, keyed by the bytecode version, so another Python or a
foreign file is never used). A kept code object is exactly what ``exec`` would have
compiled from the same text (the file name ``<string>``, no inherited ``__future__``
flags, as ``exec`` in :mod:`dataclasses` compiles), run with the same globals and locals,
so a class is built the same either way; only the compiling is skipped.

The hook is installed by the ``curator`` command (:mod:`curator.cli`, when it builds a
verb's parser or opens the window), the one process that is all ours: a program that
uses ``curator`` as a library (:class:`curator.Curator`) keeps its :mod:`dataclasses`
untouched. (``curator-gui`` imports the window's modules before it could install it, and
does without.)
"""

from __future__ import annotations

import builtins
import sys
import threading
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curator.core.derived_cache import KeptTable

__all__ = ["install", "save"]

_FILE = "dataclass-code-{program}.bin"
"""One table per program (a verb's module, the window): each start reads only the code of
the classes it defines (the window's table is four times a command's, and reading it
would cost a command more than compiling its own)."""
_LIMIT = 4000
"""More kept sources than this (older versions' classes pile up): keep this run's."""

_LOCK = threading.RLock()
"""Reentrant: reading the table imports (the cache folder's lookup) under it, and a class
defined by such an import comes back through the hook."""
_TABLE: KeptTable[str, CodeType] | None = None
"""The kept code objects by source text; made by :func:`install` (the hook's table)."""


def _key() -> bytes:
    import importlib.util

    return sys.implementation.cache_tag.encode() + b"-" + importlib.util.MAGIC_NUMBER


def _is_code(source: object, code: object) -> bool:
    return isinstance(source, str) and isinstance(code, CodeType)


def _compiled(source: str) -> CodeType:
    """The code object of ``source``: kept (the table is read on the first class, so
    ``--version`` reads nothing), else compiled now and kept."""
    table = _TABLE
    assert table is not None, "the hook runs only once installed"
    code = table.get(source)
    if code is None:
        code = compile(source, "<string>", "exec", dont_inherit=True)
        table.put(source, code)
    return code


def _kept_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """``exec`` as :mod:`dataclasses` calls it, with the compiled text kept."""
    if isinstance(source, str):
        source = _compiled(source)
    builtins.exec(source, globals, locals)


def install(program: str) -> None:
    """Give :mod:`dataclasses` the keeping ``exec`` (once; before classes are defined),
    keeping the code in ``program``'s table (an identifier: a verb's module, ``window``)."""
    global _TABLE
    if _TABLE is not None:
        return
    import dataclasses

    from curator.core.derived_cache import KeptTable

    _TABLE = KeptTable(_FILE.format(program=program), _key, _LIMIT, _LOCK, accept=_is_code)
    dataclasses.exec = _kept_exec  # type: ignore[attr-defined]


def save() -> None:
    """Write the kept code objects if this run compiled any anew (also run at exit)."""
    if _TABLE is not None:
        _TABLE.save()
