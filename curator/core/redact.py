"""One redaction for every message, trace and log line that may carry a secret.

A URL's user name and password (``http://user:hunter2@host``), an ``Authorization``
header's value and ``api_key=...`` style query parameters must never reach a message a
person reads, a trace stored in the database or a log: a message is copied into bug
reports, a trace into backups. Every error path that formats a URL, a request or a
server's answer passes its text through :func:`redact` once, at the place where the
message is made; one function means one rule to test (``tests/core/test_redact.py``
checks it on generated URLs and texts).

What is replaced keeps its shape (``http://***@host``, ``Bearer ***``) so the reader still
sees *which* URL or header was meant.
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://userinfo@ : the userinfo may hold anything but "/", "?", "#", "@" and spaces;
# the last "@" before the host ends it (RFC 3986: "@" cannot appear in the host).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s]*@")
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization)(\s*[:=]\s*)(?:(bearer|basic|token)\s+)?"
    r"[^\s,;'\"]+"
)
_SECRET_PARAM = re.compile(
    r"(?i)([?&;]|\b)(api[_-]?key|access[_-]?token|token|key|password|passwd|secret|sig|signature)"
    r"=([^&#\s'\"]+)"
)


def redact(text: str) -> str:
    """``text`` with URL credentials, authorization values and secret parameters masked."""
    if not text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _AUTH_HEADER.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) + ' ' if m.group(3) else ''}{MASK}",
        text,
    )
    return _SECRET_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={MASK}", text)


def has_url_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password before its host."""
    return _URL_USERINFO.search(url.strip()) is not None
