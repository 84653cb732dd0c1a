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
from typing import Final

__all__ = ["ZIP_READ_ERRORS"]

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
