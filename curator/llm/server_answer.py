"""Reading a model server's JSON through one typed accessor layer.

A server is another program, possibly a broken or hostile one: ``usage`` may be a string,
``data`` a number, ``n_ctx`` ``"lots"`` or NaN (Python's JSON parser accepts ``NaN`` and
``Infinity``), a log-probability ``1e308``. Reading such fields ad hoc (``int(x)``,
``float(x)``, ``x.get(...)``) turned each into a different internal exception. Every field
read from a server goes through :class:`Fields` instead: the expected type, finiteness
and range are checked in one place, and a wrong value is one :class:`ServerError` naming
the URL and the field (``choices[0].logprobs.top_logprobs``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from curator.core.secret_forms import scrubbed
from curator.llm.server_http import ServerError

MISSING: Any = object()
LOGPROB_MIN = -1e5
"""A log-probability below this is not one a model computes (float32 logits)."""
LOGPROB_MAX = 1e-3
"""Log-probabilities are at most 0; a little above is the JSON's rounding."""


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_object(body: bytes, where: str) -> Fields:
    """The JSON object of an answer body (``where`` is the URL asked)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise ServerError(f"malformed response from {where}: not JSON") from None
    if not isinstance(data, dict):
        raise ServerError(f"malformed response from {where}: not an object")
    try:
        return Fields(scrubbed(data), where)
    except RecursionError:  # nested deeper than the key can be looked for in
        raise ServerError(f"malformed response from {where}: nested too deeply") from None


class Fields:
    """A JSON object from a server, read one checked field at a time."""

    def __init__(self, data: dict[str, Any], where: str, path: str = "") -> None:
        self.data = data
        self.where = where
        self.path = path

    def has(self, key: str) -> bool:
        return key in self.data

    def name(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def invalid(self, key: str | int, why: str) -> ServerError:
        return ServerError(
            f"the model server sent an invalid {self.name(key)} in its answer from "
            f"{self.where}: {why}"
        )

    def _raw(self, key: str, required: bool) -> Any:
        value = self.data.get(key)
        if value is None and required:
            raise self.invalid(key, "missing")
        return value

    def obj(self, key: str, *, required: bool = False) -> Fields | None:
        """A nested object; None when absent or null (unless required)."""
        value = self._raw(key, required)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.invalid(key, f"expected an object, got {_quote(value)}")
        return Fields(value, self.where, self.name(key))

    def items(self, key: str, *, required: bool = False) -> list[Any]:
        """A list (empty when absent or null, unless required)."""
        value = self._raw(key, required)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.invalid(key, f"expected a list, got {_quote(value)}")
        return value

    def objects(self, key: str, *, required: bool = False) -> list[Fields]:
        """A list of objects."""
        values = self.items(key, required=required)
        out = []
        for i, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.invalid(key, f"item {i} is not an object: {_quote(value)}")
            out.append(Fields(value, self.where, f"{self.name(key)}[{i}]"))
        return out

    def text(self, key: str, default: str = "", *, required: bool = False) -> str:
        """A string (``default`` when absent or null)."""
        value = self._raw(key, required)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.invalid(key, f"expected text, got {_quote(value)}")
        return value

    def integer(self, key: str, default: int, *, low: int = 0, high: int = 2**31) -> int:
        """A whole number within [low, high] (``default`` when absent or null)."""
        value = self._raw(key, False)
        if value is None:
            return default
        return self.check_integer(key, value, low, high)

    def check_integer(self, key: str | int, value: Any, low: int, high: int) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.invalid(key, f"expected a whole number, got {_quote(value)}")
        if not low <= value <= high:
            raise self.invalid(key, f"{value} is outside {low}..{high}")
        return value

    def integers(self, key: str, *, low: int = 0, high: int = 2**31) -> list[int]:
        """A required list of whole numbers (token ids)."""
        values = self.items(key, required=True)
        return [self.check_integer(key, v, low, high) for v in values]

    def logprob(self, key: str | int, value: Any) -> float:
        """A log-probability: a finite number <= 0 (a little rounding allowed)."""
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not (LOGPROB_MIN <= value <= LOGPROB_MAX)
        ):
            raise ServerError(
                f"the model server sent invalid log-probabilities in its answer from "
                f"{self.where} ({self.name(key)} = {_quote(value)})"
            )
        return float(value)

    def logprob_table(self, key: str | int, value: Any) -> dict[str, float]:
        """``{token text: log-probability}``, each value checked."""
        if not isinstance(value, dict):
            raise self.invalid(key, f"expected an object, got {_quote(value)}")
        return {str(k): self.logprob(key, v) for k, v in value.items()}
