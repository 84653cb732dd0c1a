"""A model server's address and API key, checked by one rule wherever they are given.

The same URL arrives from ``--server``, ``$CURATOR_SERVER`` and Settings, and the same key
from ``--api-key``, ``$CURATOR_API_KEY``, the keyring and the Settings field. Each used to
be checked (or not) where it arrived, so one path refused what another silently changed:
a URL with ``user:password@`` saved nowhere but used with its credentials dropped, a port
out of range or an unclosed IPv6 bracket failing deep inside the HTTP client. Here are
the checks all of them share, as plain functions returning a one-line problem (or None),
so the store, the CLI and the HTTP backend can each raise their own error type.

A base URL is accepted both ways servers document it: ``http://host:8000`` and
``http://host:8000/v1`` (LM Studio, Ollama, vLLM and the OpenAI SDK all give the latter);
:func:`server_base_url` removes the ``/v1`` once, so the API paths are never doubled.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit, urlunsplit

from curator.core.redact import has_url_credentials
from curator.core.redact import shown_url as _short

KEY_FIX = (
    "give the API key separately (--api-key, $CURATOR_API_KEY, or the API key field in "
    "Settings, which keeps it in the system keyring)"
)


def server_url_problem(url: str, name: str = "the model server URL") -> str | None:
    """Why ``url`` cannot be used as a model server's base URL, or None.

    Credentials in the URL are refused rather than dropped: the URL is shown, logged and
    saved in clear text, which the API key never is.
    """
    text = url.strip()
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in text):
        # urlsplit drops a tab or line break silently and keeps a space in the host: the
        # URL used would not be the one given, or fail later as "connection refused".
        return f"{name} must not hold spaces or control characters: {_short(url)!r}"
    if has_url_credentials(text):
        return f"{name} must not contain a user name or password: {KEY_FIX}"
    if any(ch.isspace() or not ch.isprintable() for ch in text):
        return f"{name} contains a space or control character: {_short(url)!r}"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return f"{name} is not a valid URL: {_short(url)!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (
            f"{name} must start with http:// or https:// and name a host, "
            f"e.g. http://127.0.0.1:8080, got {_short(url)!r}"
        )
    if "%" in (parts.hostname or ""):
        return (
            f"{name} has an IPv6 zone (%...), which the HTTP client cannot connect to: "
            f"give the address without it, or a host name: {_short(url)!r}"
        )
    if parts.port == 0:
        return f"{name} has port 0, which no server listens on: {_short(url)!r}"
    if parts.username is not None or parts.password is not None:
        return f"{name} must not contain a user name or password: {KEY_FIX}"
    if parts.query or parts.fragment:
        return f"{name} must not have a query or fragment (?...#...): {_short(url)!r}"
    return None


def server_base_url(url: str) -> str:
    """The base the API paths (``/v1/models``...) are appended to.

    No credentials, no trailing slash, and no trailing ``/v1``: ``http://h:8000/v1/``
    and ``http://h:8000`` are the same server. IPv6 hosts keep their brackets. Never
    raises: an unparsable URL is returned stripped (check it with
    :func:`server_url_problem` first).
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if port:
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    if path.lower().endswith("/v1"):  # "/V1" too: one more way the same base is written
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, host, path, "", ""))


def api_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be sent as a bearer token, or None (the key is never quoted).

    An HTTP header carries visible ASCII only: a pasted key with a line break, a space
    at either end or a typographic character would otherwise fail inside the client.
    """
    if not key:
        return None
    if key != key.strip():
        return "the API key starts or ends with a space or line break: remove it"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        return "the API key contains a line break or control character: remove it"
    if not key.isascii():
        return "the API key contains non-ASCII characters (an HTTP header carries ASCII only)"
    return None
