"""Saved settings: one typed, validated :class:`Settings`, one JSON value per key on disk.

Why one class: the settings used to be a dict read and cast at each call site, and the
window and the CLI enforced different limits (a context size the CLI accepted the window
refused; "skip above update" was checked by the window only). Now every key has one
:class:`Rule` (type, bounds, default) and the cross-field rules live in
:meth:`Settings.problems`; the CLI, the window's Settings pane and the pipeline all go
through :meth:`Settings.from_mapping`, so the same value is refused everywhere with the
same one-line message.

Storage is unchanged: the ``setting`` table holds one JSON value per key that differs
from the default's absence (``None`` removes the row, so the default applies again).
Changing the decay rate re-ranks every pattern in the same transaction. This module is
Qt-free and reads and writes through the :class:`Store` it is given.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from curator.core.scoring import rank_key
from curator.core.server_url import server_url_problem as _server_url_problem
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.models import Pattern


class SettingsError(CuratorError):
    """A settings value is out of its bounds or of the wrong type (one line, exit code 2)."""

    exit_code = 2


@dataclass(frozen=True)
class Rule:
    """What one key accepts: its type, inclusive bounds, whether None is allowed."""

    label: str
    kind: type
    low: float | None = None
    high: float | None = None
    optional: bool = False
    """None is a valid value (it means "automatic" / "the demo model")."""
    choices: tuple[str, ...] = ()
    """For text: the only values accepted (empty: any text)."""


RULES: dict[str, Rule] = {
    "model_path": Rule("model file", str, optional=True),
    "n_gpu_layers": Rule("GPU layers", int, -1, 9999),
    "n_ctx": Rule("context size", int, 512, 131072),
    "n_threads": Rule("threads", int, 1, 256, optional=True),
    "flash_attn": Rule("flash attention", bool),
    "seed": Rule("seed", int, 0, 2**31 - 1),
    "temperature": Rule("temperature", float, 0.0, 2.0),
    "skip_threshold": Rule("skip threshold", float, 0.0, 1.0),
    "update_threshold": Rule("update threshold", float, 0.0, 1.0),
    "decay_rate": Rule("daily decay factor", float, 0.5, 1.0),
    "top_k": Rule("patterns in the prompt (top K)", int, 1, 1000),
    "min_chars": Rule("quality gate minimum characters", int, 0, 10000),
    "min_words": Rule("quality gate minimum words", int, 0, 1000),
    # The quality gate also drops loops and debris (curator.core.degenerate)
    "drop_degenerate": Rule("quality gate drops degenerate text", bool),
    "max_output_tokens": Rule("maximum output tokens", int, 16, 32768),
    # Sources whose episodes count as untrusted (memory-poisoning flags); others are trusted.
    "untrusted_sources": Rule("untrusted sources", tuple),
    # An UPDATE moves the pattern's decay reference to the commit time (curator.store.decay_clock)
    "update_refreshes_decay": Rule("UPDATE refreshes the decay clock", bool),
    # Most "- " lines one extract call may write (the extract grammar's bound)
    "extract_max_lines": Rule("observations per extract batch", int, 1, 200),
    # Show the calibrated label while no learned classifier exists (curator.pipeline.calibrate)
    "calibrate_labels": Rule("calibrated label scores", bool),
    # Where the model runs: a GGUF file loaded in-process, or an OpenAI-compatible server.
    # The server's API key is never saved here (system keyring, else $CURATOR_API_KEY).
    "backend": Rule("model backend", str, choices=("local", "server")),
    "server_url": Rule("model server URL", str, optional=True),
    "server_model": Rule("model id on the server", str, optional=True),
    # The window backs up at most every N minutes of use and on close; 0 turns it off
    "backup_interval_minutes": Rule("backup every N minutes of use", int, 0, 1440),
    # This database's backups together stay under this many MB (the oldest go first, the
    # newest always stays); 0: bounded by age only (curator.store.backup.prune_backups)
    "backup_max_total_mb": Rule("backups' total size in MB", int, 0, 10_000_000),
    # The configured model's yes/no second opinion on staged candidates (curator.pipeline
    # .guard_opinion): "on" skips the demo model (too small to judge), "always" asks it too
    "guard_model_opinion": Rule(
        "model's second opinion on candidates", str, choices=("on", "off", "always")
    ),
    # p(yes) from which the model's second opinion flags a candidate
    "guard_opinion_threshold": Rule("second-opinion flag threshold", float, 0.0, 1.0),
}


def _number(value: float) -> str:
    return _short(f"{value:g}" if isinstance(value, float) else str(value))


def _short(text: str, limit: int = 60) -> str:
    """A value quoted in a one-line message: a hostile one may be megabytes long."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _spelled(value: Any) -> str:
    """A value as a person wrote it in a setting (``true``, ``null``), not as Python's repr."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return repr(value)


def check_value(key: str, value: Any) -> tuple[Any, str | None]:
    """``(value converted to the key's type, None)`` or ``(value, one-line problem)``."""
    rule = RULES.get(key)
    if rule is None:
        return value, f"unknown setting {key!r} (known: {', '.join(RULES)})"
    name = f"{rule.label} ({key})"
    if value is None or (rule.kind is str and value == ""):
        return (None, None) if rule.optional else (value, f"{name} must be set")
    if rule.kind is bool:
        return (value, None) if isinstance(value, bool) else (value, f"{name} must be true/false")
    if rule.kind is str:
        if not isinstance(value, str):
            return value, f"{name} must be text"
        if rule.choices and value not in rule.choices:
            return value, f"{name} must be one of {', '.join(rule.choices)}, got {_short(value)!r}"
        if key == "server_url":
            return value, server_url_problem(value)
        return value, None
    if rule.kind is tuple:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            return value, f"{name} must be a list of names"
        return tuple(sorted({v.strip().lower() for v in value if v.strip()})), None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value, f"{name} must be a number, got {_short(_spelled(value))}"
    if rule.kind is int:
        if isinstance(value, float) and not value.is_integer():
            return value, f"{name} must be a whole number, got {_short(_spelled(value))}"
        value = int(value)
    else:
        value = float(value)
        if not math.isfinite(value):
            return value, f"{name} must be a finite number, got {_short(_spelled(value))}"
    if rule.low is not None and rule.high is not None and not rule.low <= value <= rule.high:
        return value, (
            f"{name} must be between {_number(rule.low)} and {_number(rule.high)}, "
            f"got {_number(value)}"
        )
    return value, None


@dataclass(frozen=True)
class Settings:
    """Every setting, typed; build it with :meth:`from_mapping` to get it validated."""

    model_path: str | None = None  # None: the bundled demo model
    n_gpu_layers: int = -1  # all layers; a CPU-only build ignores it
    n_ctx: int = 4096
    n_threads: int | None = None  # None: llama.cpp's choice
    flash_attn: bool = False
    seed: int = 42
    temperature: float = 0.0
    skip_threshold: float = 0.95
    update_threshold: float = 0.70
    decay_rate: float = 0.95
    top_k: int = 50
    min_chars: int = 30
    min_words: int = 3
    drop_degenerate: bool = True  # a repeated phrase, mostly digits, too few distinct words
    max_output_tokens: int = 4000
    untrusted_sources: tuple[str, ...] = ("dm", "replies")
    update_refreshes_decay: bool = False
    extract_max_lines: int = 12
    calibrate_labels: bool = False
    backend: str = "local"  # "local": the model file; "server": server_url
    server_url: str | None = None
    server_model: str | None = None  # None: the server's first model
    backup_interval_minutes: int = 30  # curator.gui.window.auto_backup; 0: no automatic backups
    backup_max_total_mb: int = 2000  # curator.store.backup.prune_backups; 0: no size bound
    guard_model_opinion: str = "on"  # on | off | always (curator.pipeline.guard_opinion)
    guard_opinion_threshold: float = 0.5

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, ignore_unknown: bool = False) -> Settings:
        """Defaults overridden by ``values``, validated; raises :class:`SettingsError`.

        ``ignore_unknown`` is for what is read from a database (a key written by another
        version is not an error there); input from a person is checked strictly.
        """
        converted: dict[str, Any] = {}
        for key, value in values.items():
            if key not in RULES and ignore_unknown:
                continue
            converted[key], problem = check_value(key, value)
            if problem is not None:
                raise SettingsError(problem)
        settings = cls(**converted)
        problems = settings.problems()
        if problems:
            raise SettingsError(problems[0])
        return settings

    def problems(self) -> list[str]:
        """Cross-field rules (each value is already within its own bounds)."""
        found = []
        if self.update_threshold >= self.skip_threshold:
            found.append(
                "the skip threshold (skip_threshold) must be higher than the update "
                f"threshold (update_threshold): {_number(self.skip_threshold)} <= "
                f"{_number(self.update_threshold)}"
            )
        if self.backend == "server" and not self.server_url:
            found.append(
                "the server backend (backend=server) needs a model server URL (server_url)"
            )
        return found

    def with_changes(self, changes: Mapping[str, Any]) -> Settings:
        """A validated copy with ``changes`` applied (raises :class:`SettingsError`)."""
        return Settings.from_mapping({**self.as_dict(), **changes})

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


DEFAULTS = Settings()


def server_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be saved as the model server's address, or None.

    The same rule as ``--server`` and ``$CURATOR_SERVER`` (:mod:`curator.core.server_url`):
    a user name or password in the URL would be stored in the database in clear text,
    which the API key never is, so such a URL is refused with the way to pass a key.
    """
    return _server_url_problem(url, "the model server URL (server_url)")


def decode_json(text: str | bytes) -> Any:
    """A JSON value, or ValueError; nesting too deep for the parser is a ValueError too."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _saved_values(store: Store, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, text in store.execute('SELECT "key", "value" FROM "setting"'):
        if str(key) in skip:
            continue
        try:
            values[str(key)] = decode_json(text)
        except (TypeError, ValueError):
            raise SettingsError(
                f"the saved setting {key!r} is not valid JSON: {_short(repr(text))}"
                f"{_REPAIR.format(key=key)}"
            ) from None
    return values


_REPAIR = " (save a new value with `curator settings {key}=VALUE`, or {key}=null for the default)"


def _validated(values: Mapping[str, Any]) -> Settings:
    try:
        return Settings.from_mapping(values, ignore_unknown=True)
    except SettingsError as exc:
        bad = next((k for k in values if k in RULES and check_value(k, values[k])[1]), None)
        hint = _REPAIR.format(key=bad) if bad is not None else ""
        raise SettingsError(f"saved settings: {exc}{hint}") from None


def load_settings(store: Store) -> Settings:
    """The saved settings over the defaults, validated (once per operation)."""
    return _validated(_saved_values(store))


def changed_settings(store: Store, changes: Mapping[str, Any]) -> Settings:
    """What the settings would be with ``changes`` saved (validated; nothing written).

    ``None`` for a key means its default. The saved values of the keys being changed are
    not read at all: a hostile or damaged saved value (wrong type, bad JSON) is repaired
    by saving a new one, so a broken setting never locks the user out of the command
    that fixes it.
    """
    return settings_with(_saved_values(store, skip=frozenset(changes)), changes)


def settings_with(saved: Mapping[str, Any], changes: Mapping[str, Any]) -> Settings:
    """What the settings would be with ``changes`` over ``saved`` (validated; nothing read
    or written): a window checks its form against the values it last read, with no
    round trip to the database on its GUI thread; the save checks them again."""
    for key, value in changes.items():
        if value is None and key in RULES:
            continue
        _, problem = check_value(key, value)
        if problem is not None:
            raise SettingsError(problem)
    given = {key: value for key, value in changes.items() if value is not None}
    kept = {key: value for key, value in saved.items() if key not in changes}
    return _validated({**kept, **given})


def update_settings(store: Store, changes: Mapping[str, Any]) -> Settings:
    """Validate and save several settings in one transaction: all of them or none.

    ``None`` (e.g. "the demo model", "automatic threads", or any key's default) removes
    the saved value, so the default applies again. A new decay rate re-ranks every
    pattern in the same transaction. Returns the settings now in force.
    """
    with store.write():
        try:
            old_rate = load_settings(store).decay_rate
        except SettingsError:
            old_rate = math.nan  # a broken saved value being repaired: re-rank to be sure
        new = changed_settings(store, changes)
        for key, change in changes.items():
            value = getattr(new, key)
            if change is None or value is None:
                store.db.execute_sql('DELETE FROM "setting" WHERE "key" = ?', (key,))
            else:
                store.db.execute_sql(
                    'INSERT INTO "setting" ("key", "value") VALUES (?, ?) '
                    'ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value"',
                    (key, json.dumps(value, ensure_ascii=False)),
                )
        if new.decay_rate != old_rate:
            _rerank(new.decay_rate)
    return new


def untrusted_sources(store: Store) -> frozenset[str]:
    """The episode sources marked untrusted (lower case), for the memory-poisoning flags."""
    return frozenset(load_settings(store).untrusted_sources)


def set_setting(store: Store, key: str, value: Any) -> Settings:
    """One validated setting (see :func:`update_settings`)."""
    return update_settings(store, {key: value})


def _rerank(rate: float) -> None:
    """Recompute every pattern's stored ranking key for a new decay rate.

    The key folds the rate in (``log(importance) + days * log(1/rate)``), so a key
    written under the old rate would keep ordering the prompt by it.
    """
    rows = list(Pattern.select(Pattern.id, Pattern.importance, Pattern.distilled_at))
    for row in rows:
        row.rank_key = rank_key(row.importance, row.distilled_at, rate=rate)
    Pattern.bulk_update(rows, fields=[Pattern.rank_key], batch_size=500)
