"""Saved settings: one JSON value per key in the ``setting`` table.

The keys and defaults are listed in :data:`DEFAULTS`; the GUI's Settings pane and the CLI
read the same values, so a model chosen in the window is what ``curator classify`` uses.
"""

from __future__ import annotations

from typing import Any

from curator.core.scoring import rank_key
from curator.store.db import Store
from curator.store.models import Pattern, Setting

DEFAULTS: dict[str, Any] = {
    "model_path": None,  # None: the bundled demo model
    "n_gpu_layers": -1,  # all layers; a CPU-only build ignores it
    "n_ctx": 4096,
    "n_threads": None,  # None: llama.cpp's choice
    "flash_attn": False,
    "seed": 42,
    "temperature": 0.0,
    "skip_threshold": 0.95,
    "update_threshold": 0.70,
    "decay_rate": 0.95,
    "top_k": 50,
    "min_chars": 30,
    "min_words": 3,
    "max_output_tokens": 4000,
    "update_refreshes_decay": False,  # an UPDATE moves the decay reference to its commit
}


def get_setting(store: Store, key: str) -> Any:
    del store
    row = Setting.get_or_none(Setting.key == key)
    if row is None:
        return DEFAULTS.get(key)
    return row.value


def all_settings(store: Store) -> dict[str, Any]:
    del store
    values = dict(DEFAULTS)
    values.update({row.key: row.value for row in Setting.select()})
    return values


def set_setting(store: Store, key: str, value: Any) -> None:
    set_settings(store, {key: value})


def set_settings(store: Store, values: dict[str, Any]) -> None:
    """Save several settings in one transaction: all of them or none.

    ``None`` (e.g. "the demo model", "automatic threads") removes the saved value, so the
    default applies again (the column cannot hold NULL).
    """
    with store.write():
        old_rate = float(get_setting(store, "decay_rate"))
        for key, value in values.items():
            if value is None:
                Setting.delete().where(Setting.key == key).execute()
            else:
                Setting.insert(key=key, value=value).on_conflict_replace().execute()
        new_rate = float(get_setting(store, "decay_rate"))
        if new_rate != old_rate:
            _rerank(new_rate)


def _rerank(rate: float) -> None:
    """Recompute every pattern's stored ranking key for a new decay rate.

    The key folds the rate in (``log(importance) + days * log(1/rate)``), so a key
    written under the old rate would keep ordering the prompt by it.
    """
    rows = list(Pattern.select(Pattern.id, Pattern.importance, Pattern.distilled_at))
    for row in rows:
        row.rank_key = rank_key(row.importance, row.distilled_at, rate=rate)
    Pattern.bulk_update(rows, fields=[Pattern.rank_key], batch_size=500)
