"""Which model server to use, and its API key: one resolution for the CLI and the window.

The order is the same everywhere so a user can predict it: the command line's
``--server``/``--server-model``/``--api-key``, then the environment (``$CURATOR_SERVER``,
``$CURATOR_API_KEY``), then what Settings saved (backend "server" with its URL and model
id). The saved model id applies only to the saved URL: another server has other models.

The API key is never written to the database. Settings stores it in the system keyring
(Secret Service, macOS Keychain, Windows Credential Locker through the ``keyring``
package), under the server's URL without credentials. Where no keyring is usable (a
headless machine, CI) the key comes from ``$CURATOR_API_KEY`` only, and the window says so.
Plain values in and out: ``llm/`` does not read the settings table itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from curator.core.server_url import api_key_problem, server_url_problem
from curator.core.wording import plural
from curator.errors import CuratorError
from curator.llm.backend import GenerationRate
from curator.llm.http_backend import API_KEY_ENV, SERVER_ENV, HttpBackend, public_url
from curator.llm.server_http import ServerError, ServerLimits

log = logging.getLogger(__name__)

KEYRING_SERVICE = "memory-curator"
"""The keyring "service" under which API keys are saved (the user name is the URL)."""


class ApiKeyError(CuratorError):
    """The API key could not be saved (no usable keyring); one line, exit code 2."""

    exit_code = 2


@dataclass(frozen=True)
class ServerChoice:
    """The server a run will use; ``key_source`` says where the key came from."""

    url: str
    model: str | None
    api_key: str | None = field(repr=False)
    key_source: str  # "command line", "environment", "keyring" or "none"

    def open(self, n_ctx: int) -> HttpBackend:
        """Connect (lists the models, detects the server kind); raises ServerError.

        The deadlines are the defaults, or ``$CURATOR_SERVER_TIMEOUT`` and
        ``$CURATOR_SERVER_TOKEN_TIME`` when set (see :class:`ServerLimits`).
        """
        return HttpBackend(
            self.url,
            model=self.model,
            api_key=self.api_key,
            n_ctx=n_ctx,
            limits=ServerLimits.from_env(),
        )


def choose_server(
    backend: str,
    saved_url: str | None,
    saved_model: str | None,
    *,
    url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    use_saved: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ServerChoice | None:
    """The server to use, or None for the in-process model file.

    ``backend``/``saved_url``/``saved_model`` are the saved settings; ``url``/``model``/
    ``api_key`` the command line's flags; ``use_saved=False`` when the command line named
    a model file (which then wins over a saved server).
    """
    env = os.environ if environ is None else environ
    chosen, name = url, "--server"
    if not chosen and env.get(SERVER_ENV, "").strip():  # a blank variable is an unset one
        chosen, name = env[SERVER_ENV], f"${SERVER_ENV}"
    if not chosen and use_saved and backend == "server" and saved_url:
        chosen, name = saved_url, "the saved model server URL (server_url)"
    if not chosen:
        return None
    problem = server_url_problem(chosen, name)
    if problem:
        raise ServerError(problem)
    same_as_saved = saved_url is not None and public_url(chosen) == public_url(saved_url)
    model_id = model or (saved_model if same_as_saved else None) or None
    if api_key:
        return _with_key(chosen, model_id, api_key, "command line", "--api-key")
    from_env = env.get(API_KEY_ENV)
    if from_env and from_env.strip():
        return _with_key(chosen, model_id, from_env, "environment", f"${API_KEY_ENV}")
    stored = load_api_key(chosen)
    if stored:
        return _with_key(chosen, model_id, stored, "keyring", "the system keyring")
    return ServerChoice(chosen, model_id, None, "none")


def _with_key(url: str, model: str | None, key: str, source: str, name: str) -> ServerChoice:
    """The choice with ``key``, which must be sendable as a header (the key is not shown)."""
    problem = api_key_problem(key)
    if problem:
        raise ServerError(f"{problem} (from {name})")
    return ServerChoice(url, model, key, source)


# -- the system keyring ------------------------------------------------------------------------


def _keyring() -> Any:
    """The keyring module's active backend, or None when none is usable here."""
    try:
        import keyring
        from keyring.backends import fail
    except Exception:  # not installed, or broken by a third-party backend
        log.info("keyring unavailable", exc_info=True)
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        log.info("no keyring backend", exc_info=True)
        return None
    if isinstance(backend, fail.Keyring):
        return None
    if type(backend).__module__.startswith("keyring.backends.null"):
        return None  # keeps nothing: saving into it would silently lose the key
    return backend


def keyring_problem() -> str | None:
    """None when a system keyring can hold the API key, else why not (one line)."""
    backend = _keyring()
    if backend is None:
        return (
            f"no system keyring is available here: set ${API_KEY_ENV} in the environment "
            "that starts Memory Curator instead"
        )
    return None


def keyring_name() -> str:
    """The keyring backend's readable name (for the Settings pane), or ""."""
    backend = _keyring()
    return str(getattr(backend, "name", type(backend).__name__)) if backend is not None else ""


def load_api_key(url: str) -> str | None:
    """The key saved for ``url``'s server, or None (also when the keyring fails)."""
    backend = _keyring()
    if backend is None:
        return None
    try:
        value = backend.get_password(KEYRING_SERVICE, public_url(url))
    except Exception:  # a locked or broken keyring is the same as no key
        log.info("reading the API key from the keyring failed", exc_info=True)
        return None
    return str(value) if value else None


def save_api_key(url: str, key: str | None) -> None:
    """Save (or, with an empty ``key``, delete) the key for ``url``; raises ApiKeyError."""
    backend = _keyring()
    if backend is None:
        raise ApiKeyError(f"the API key was not saved: {keyring_problem()}")
    name = public_url(url)
    problem = api_key_problem(key or "")
    if problem:
        raise ApiKeyError(f"the API key was not saved: {problem}")
    try:
        if key:
            backend.set_password(KEYRING_SERVICE, name, key)
        elif backend.get_password(KEYRING_SERVICE, name) is not None:
            backend.delete_password(KEYRING_SERVICE, name)
    except Exception as exc:
        raise ApiKeyError(
            f"the system keyring refused the API key ({type(exc).__name__}); "
            f"set ${API_KEY_ENV} instead"
        ) from None


# -- "Test connection" -------------------------------------------------------------------------


METHOD_WORDS = {
    "exact": "exactly (the model's own log-probabilities)",
    "first-token-approx": "approximately (from the server's top log-probabilities)",
    "unscored": "without probabilities (the server returns none: constrained answers)",
}


@dataclass(frozen=True)
class ServerProbe:
    """What one test of a server found: who it is, its models, and how fast it answers."""

    url: str
    kind: str
    model: str
    models: tuple[str, ...]
    connect_s: float
    classify_s: float
    method: str
    tokens_per_s: float | None

    def describe(self) -> str:
        speed = f", {self.tokens_per_s:.0f} tokens/s" if self.tokens_per_s else ""
        others = len(self.models) - 1
        more = f" (and {plural(others, 'other model')})" if others > 0 else ""
        return (
            f"Connected to {self.kind} at {self.url}: model {self.model}{more}. "
            f"One classification took {self.classify_s:.2f} s{speed}; labels are scored "
            f"{METHOD_WORDS.get(self.method, self.method)}."
        )


def probe_server(choice: ServerChoice, n_ctx: int = 2048) -> ServerProbe:
    """Connect, run one classification and one short generation; raises ServerError.

    Slow on a loaded server (seconds): callers run it off the GUI thread.
    """
    import time

    start = time.perf_counter()
    backend = choice.open(n_ctx)
    try:
        connected = time.perf_counter() - start
        prefix = backend.chat_prefix(
            "Answer with one word: constitutional, noise or uncategorized.", ""
        )
        scores = backend.classify(
            prefix, "Always cite the source of a claim.", ("constitutional", "noise")
        )
        rate = GenerationRate()  # generation only: not the prompt, not the connection
        backend.complete(prefix, "Say hello.", max_tokens=16, on_token=lambda _: rate.token())
        speed = rate.per_s or None
        return ServerProbe(
            url=backend.url,
            kind=backend.kind,
            model=backend.model,
            models=tuple(backend.models),
            connect_s=connected,
            classify_s=scores.seconds,
            method=scores.method,
            tokens_per_s=speed,
        )
    finally:
        backend.close()
