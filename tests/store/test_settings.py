"""One typed, validated Settings: bounds, types, the cross-field rule, storage, re-rank."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from curator.llm.backend import backend_settings
from curator.store.change_marker import CHANGE_COUNTER_KEY
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import Pattern
from curator.store.settings import (
    RULES,
    Settings,
    SettingsError,
    check_value,
    load_settings,
    update_settings,
)

SETTING_ROWS = f'SELECT count(*) FROM "setting" WHERE "key" != \'{CHANGE_COUNTER_KEY}\''
"""The saved settings, not the change counter every write bumps (curator.store.change_marker)."""


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "s.sqlite")
    yield s
    s.close()


def test_defaults_are_valid_and_cover_every_rule() -> None:
    assert Settings.from_mapping({}) == Settings()
    assert set(Settings().as_dict()) == set(RULES)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("n_ctx", 256, r"context size \(n_ctx\) must be between 512 and 131072, got 256"),
        ("n_ctx", 200000, r"between 512 and 131072"),
        ("n_ctx", 4096.5, r"whole number"),
        ("n_ctx", "4096", r"must be a number"),
        ("n_ctx", True, r"must be a number, got true$"),  # as written, not Python's True
        ("top_k", None, r"must be set"),
        ("n_threads", 0, r"threads \(n_threads\) must be between 1 and 256, got 0"),
        ("n_gpu_layers", -2, r"between -1 and 9999"),
        ("decay_rate", 1.5, r"between 0.5 and 1"),
        ("decay_rate", math.nan, r"finite"),
        ("skip_threshold", -0.1, r"between 0 and 1"),
        ("temperature", math.inf, r"finite"),
        ("top_k", 0, r"between 1 and 1000"),
        ("min_words", -1, r"between 0 and 1000"),
        ("max_output_tokens", 1, r"between 16 and 32768"),
        ("flash_attn", 1, r"true/false"),
        ("model_path", 3, r"must be text"),
        ("seed", None, r"must be set"),
        ("no_such_key", 1, r"unknown setting 'no_such_key'"),
    ],
)
def test_out_of_bounds_or_wrong_type_is_one_clear_line(key: str, value: object, message: str):
    with pytest.raises(SettingsError, match=message) as caught:
        Settings.from_mapping({key: value})
    assert "\n" not in str(caught.value)


def test_bounds_are_inclusive_and_optional_means_none() -> None:
    s = Settings.from_mapping({"n_ctx": 512, "decay_rate": 1, "n_threads": None, "model_path": ""})
    assert (s.n_ctx, s.decay_rate, s.n_threads, s.model_path) == (512, 1.0, None, None)
    assert isinstance(s.decay_rate, float)
    assert check_value("n_ctx", 2048.0) == (2048, None)


@pytest.mark.parametrize(("skip", "update"), [(0.6, 0.8), (0.7, 0.7)])
def test_skip_threshold_must_exceed_update_threshold(skip: float, update: float) -> None:
    with pytest.raises(SettingsError, match=r"skip threshold .* must be higher than the update"):
        Settings.from_mapping({"skip_threshold": skip, "update_threshold": update})
    with pytest.raises(SettingsError):
        Settings().with_changes({"update_threshold": 0.99})


def test_saved_values_round_trip_and_none_restores_the_default(store: Store) -> None:
    saved = update_settings(store, {"n_ctx": 2048, "model_path": "/m.gguf", "n_threads": 3})
    assert saved == load_settings(store)
    assert (saved.n_ctx, saved.model_path, saved.n_threads) == (2048, "/m.gguf", 3)
    assert store.execute('SELECT "value" FROM "setting" WHERE "key" = \'n_ctx\'') == [("2048",)]
    update_settings(store, {"model_path": None, "n_threads": None})
    assert load_settings(store).model_path is None and load_settings(store).n_threads is None
    assert store.execute(SETTING_ROWS) == [(1,)]


def test_a_refused_change_saves_nothing(store: Store) -> None:
    with pytest.raises(SettingsError):
        update_settings(store, {"top_k": 7, "skip_threshold": 0.5})  # 0.5 < update 0.7
    assert load_settings(store).top_k == 50
    assert store.execute(SETTING_ROWS) == [(0,)]


def test_a_damaged_saved_value_is_reported_not_used(store: Store) -> None:
    with store.write():
        store.db.execute_sql("INSERT INTO setting (key, value) VALUES ('n_ctx', '64')")
    with pytest.raises(SettingsError, match=r"saved settings: context size"):
        load_settings(store)


def test_unknown_saved_keys_from_another_version_are_ignored(store: Store) -> None:
    with store.write():
        store.db.execute_sql("INSERT INTO setting (key, value) VALUES ('future_key', '1')")
    assert load_settings(store) == Settings()


def test_decay_rate_change_reranks_patterns(store: Store) -> None:
    create_demo(store)
    before = {p.id: p.rank_key for p in Pattern.select()}
    assert before
    update_settings(store, {"decay_rate": 0.8})
    after = {p.id: p.rank_key for p in Pattern.select()}
    assert all(after[i] != before[i] for i in before)


def test_one_function_builds_the_backend_settings() -> None:
    s = Settings.from_mapping({"n_ctx": 1024, "n_threads": 2, "seed": 7, "temperature": 0.5})
    b = backend_settings(s, Path("/m.gguf"))
    assert (b.model_path, b.n_ctx, b.n_threads, b.seed, b.temperature) == (
        Path("/m.gguf"),
        1024,
        2,
        7,
        0.5,
    )
    assert (b.n_gpu_layers, b.flash_attn) == (s.n_gpu_layers, s.flash_attn)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backend": "gpu"}, r"model backend \(backend\) must be one of local, server"),
        ({"server_url": "ftp://host"}, r"must start with http:// or https://"),
        ({"server_url": "http://me:secret@host:8080"}, r"must not contain a user name or password"),
        ({"backend": "server"}, r"needs a model server URL"),
    ],
)
def test_the_server_settings_are_checked(store, changes: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        update_settings(store, changes)
    assert load_settings(store).backend == "local"  # nothing saved


def test_the_server_settings_round_trip(store) -> None:
    saved = update_settings(
        store, {"backend": "server", "server_url": "http://127.0.0.1:8080", "server_model": "m"}
    )
    assert (saved.backend, saved.server_url, saved.server_model) == (
        "server",
        "http://127.0.0.1:8080",
        "m",
    )
    assert load_settings(store) == saved
    assert update_settings(store, {"backend": None}).backend == "local"
