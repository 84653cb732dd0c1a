"""JSON that parses everywhere: no bare ``NaN`` or ``Infinity``.

``json.dump`` writes non-finite floats as ``NaN``/``Infinity``, which is not JSON: a script
reading ``--json`` output would fail on it. The pipeline refuses non-finite model output,
but a database written by an older version may still hold some, and statistics (kappa of a
single class) can be undefined; every document goes through :func:`finite_json` once and is
dumped with ``allow_nan=False``.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite_json(value: Any) -> Any:
    """``value`` with every NaN/infinite float replaced by ``None`` (JSON ``null``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(item) for item in value]
    return value


def dumps(document: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text of ``document`` (non-finite floats become ``null``)."""
    return json.dumps(
        finite_json(document), ensure_ascii=False, indent=indent, default=str, allow_nan=False
    )
