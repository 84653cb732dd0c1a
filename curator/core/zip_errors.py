"""What reading a zip archive can raise, in one place for every reader of one.

Beside its own ``BadZipFile`` and ``LargeZipFile``, :mod:`zipfile` lets through what its
parts raise: ``RuntimeError`` for an encrypted member, ``NotImplementedError`` for a
compression method it lacks, ``zlib.error`` and ``lzma.LZMAError`` for damaged compressed
data (bzip2's is an ``OSError``), ``EOFError`` for a cut member, ``ValueError`` for bad
headers. A reader that catches fewer crashes on a zip a user hands it.
"""

from __future__ import annotations

import lzma
import zipfile
import zlib
from typing import BinaryIO, Final

__all__ = ["ZIP_READ_ERRORS", "is_zip", "zip_reason"]

ZIP_READ_ERRORS: Final = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    OSError,
    EOFError,
    ValueError,
    RuntimeError,
    NotImplementedError,
    zlib.error,
    lzma.LZMAError,
)


ZIP_MAGIC: Final = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
"""How a zip starts: a member, an empty archive's directory, a split archive."""


def is_zip(head: bytes, handle: BinaryIO) -> bool:
    """Whether the open file ``handle``, whose first bytes are ``head``, is a zip: by its
    start, or (a program stub before it) by the directory at its end (read through the
    same handle: the name may lead elsewhere by now, a named pipe say). A damaged zip
    still starts like one, so it is read as a zip and refused as one, not as text."""
    if head.startswith(ZIP_MAGIC):
        return True
    try:
        return zipfile.is_zipfile(handle)
    except OSError:
        return False


def zip_reason(exc: BaseException) -> str:
    """What went wrong with a zip, in a few words (``zipfile`` names an encrypted member
    by the repr of its whole entry)."""
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "it is encrypted"
    if isinstance(exc, NotImplementedError):
        return f"a compression method this program cannot read ({exc})"
    if isinstance(exc, zlib.error | lzma.LZMAError):
        return f"damaged compressed data ({exc})"
    return str(exc) or type(exc).__name__
