"""One resolution of the model server and its key for the CLI and the window."""

from __future__ import annotations

from collections.abc import Iterator

import keyring
import pytest
from keyring.backends import fail

from curator.llm.server_choice import ApiKeyError, choose_server, keyring_problem, save_api_key

SAVED = ("server", "http://saved:8000", "saved-model")


@pytest.fixture(autouse=True)
def _no_keyring() -> Iterator[None]:
    """keyring's "fail" backend: what a headless machine without Secret Service has."""
    old = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(old)


def test_flags_then_environment_then_settings() -> None:
    env = {"CURATOR_SERVER": "http://env:8000"}
    assert choose_server(*SAVED, url="http://flag:1", environ=env).url == "http://flag:1"
    assert choose_server(*SAVED, environ=env).url == "http://env:8000"
    saved = choose_server(*SAVED, environ={})
    assert saved is not None and (saved.url, saved.model) == ("http://saved:8000", "saved-model")
    assert choose_server("local", "http://saved:8000", None, environ={}) is None
    assert choose_server(*SAVED, use_saved=False, environ={}) is None  # --model FILE


def test_the_saved_model_id_belongs_to_the_saved_server_only() -> None:
    other = choose_server(*SAVED, url="http://other:1", environ={})
    assert other is not None and other.model is None
    same = choose_server(*SAVED, url="http://saved:8000/", environ={})
    assert same is not None and same.model == "saved-model"


def test_the_key_comes_from_the_flag_then_the_environment() -> None:
    env = {"CURATOR_API_KEY": "from-env"}
    flag = choose_server(*SAVED, api_key="from-flag", environ=env)
    assert flag is not None and (flag.api_key, flag.key_source) == ("from-flag", "command line")
    from_env = choose_server(*SAVED, environ=env)
    assert from_env is not None and from_env.key_source == "environment"
    none = choose_server(*SAVED, environ={})
    assert none is not None and (none.api_key, none.key_source) == (None, "none")
    assert "from-env" not in repr(from_env)  # a key is never printed


def test_without_a_keyring_saving_a_key_is_a_clear_error() -> None:
    problem = keyring_problem()
    assert problem is not None and "CURATOR_API_KEY" in problem
    with pytest.raises(ApiKeyError, match="not saved: no system keyring"):
        save_api_key("http://saved:8000", "secret")
