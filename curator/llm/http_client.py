"""The one way an HTTP client is made: a proxy the environment names that cannot be used
is one sentence naming its variable, not an "unexpected" error.

httpx reads ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``ALL_PROXY`` when a client is made, and
refuses there what it cannot use: a SOCKS proxy without its optional package
(``ImportError``), a scheme it does not know (``ValueError``), a port that is not a
number (``InvalidURL``). Those reached the command line as "unexpected ImportError: ..."
(exit code 3), naming no variable.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from curator.core.redact import redact

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
"""The environment's proxy settings httpx reads (in either letter case)."""


def proxy_in_use(url: str) -> str:
    """`` (through the proxy given by $HTTPS_PROXY)`` when the environment sends a
    request for ``url`` through a proxy (its scheme's variable or ``ALL_PROXY``, and not
    bypassed by ``NO_PROXY``), else "": a connection that fails there is the proxy's as
    much as the server's, and the message must say which variable to look at."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    for variable in (f"{parts.scheme.upper()}_PROXY", "ALL_PROXY"):
        for name in (variable, variable.lower()):
            if os.environ.get(name) and not urllib.request.proxy_bypass(parts.hostname or ""):
                return f" (through the proxy given by ${name})"
    return ""


def proxy_problem(exc: BaseException) -> str:
    """Why the environment's proxy cannot be used, naming the variables that are set."""
    named = [
        f"${name}"
        for variable in PROXY_VARIABLES
        for name in (variable, variable.lower())
        if os.environ.get(name)
    ]
    where = ", ".join(named) or "the environment's proxy settings"
    return f"the proxy given by {where} cannot be used ({redact(str(exc))}); correct or unset it"


def http_client(error: type[Exception], **options: Any) -> httpx.Client:
    """``httpx.Client(**options)``; a proxy it refuses raises ``error`` with one sentence."""
    try:
        return httpx.Client(**options)
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
        raise error(proxy_problem(exc)) from None
