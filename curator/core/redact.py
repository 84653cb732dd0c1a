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

A server may also echo the API key back in any field of a broken answer (``n_ctx:
"sk-..."``), where no pattern can recognise it as a secret. So the program remembers the
keys it sends (:func:`remember_secret`) and masks each of them wherever it appears.

:func:`one_line` makes a message one line a terminal shows as written: a model id or a
header value from a hostile server may carry terminal escapes (``ESC[2J`` clears the
screen), backspaces or a right-to-left override that makes a message say something else.
"""

from __future__ import annotations

import functools
import re
import unicodedata

MASK = "***"
MIN_SECRET_CHARS = 8
"""A shorter remembered secret is not masked literally: masking "abc" everywhere would
garble messages, and a key that short is guessable anyway."""

_SECRETS: set[str] = set()


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """URL credentials, authorization values and secret parameters: compiled on the
    first text that needs them, not on import (every command imports this module; few
    have a message to redact)."""
    # scheme://userinfo@ : the userinfo may hold anything but "/", "?", "#", "@" and
    # spaces; the last "@" before the host ends it (RFC 3986: "@" is not in a host).
    userinfo = re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,31}://)[^/?#@\s]*@")
    auth_header = re.compile(
        r"(?i)\b(authorization|proxy-authorization)([\"']?\s*[:=]\s*[\"']?)"
        r"(?:(bearer|basic|token)\s+)?"
        r"[^\s,;'\"]+"
    )
    # Names that are secrets wherever they stand (``password=…`` in a message), and
    # generic names that are secrets only as a URL's query parameter (``?key=…``): a
    # message such as "expected KEY=VALUE" must stay readable.
    secret_param = re.compile(
        r"(?i)(\b)(api[_-]?key|access[_-]?token|client[_-]?secret|password|passwd|secret)"
        r"=([^&#\s'\"]+)"
        r"|([?&;])(token|key|sig|signature)=([^&#\s'\"]+)"
    )
    return userinfo, auth_header, secret_param


def redact(text: str) -> str:
    """``text`` with URL credentials, authorization values and secret parameters masked."""
    if not text:
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    userinfo, auth_header, secret_param = _patterns()
    text = userinfo.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = auth_header.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) + ' ' if m.group(3) else ''}{MASK}",
        text,
    )
    return secret_param.sub(
        lambda m: (
            f"{m.group(1)}{m.group(2)}={MASK}" if m.group(2) else f"{m.group(4)}{m.group(5)}={MASK}"
        ),
        text,
    )


def has_url_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password before its host."""
    return _patterns()[0].search(url.strip()) is not None


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` (an API key this program sends) in every later :func:`redact`.

    For the life of the process: a key once sent may come back in any later answer.
    """
    if secret and len(secret) >= MIN_SECRET_CHARS:
        _SECRETS.add(secret)


def one_line(text: str) -> str:
    """``text`` as one readable line: runs of blanks become one space, and every other
    control or invisible format character (ESC, BEL, backspace, bidi overrides,
    zero-width characters) is shown as its escape (``\\x1b``, ``\\u202e``)."""
    out = []
    for word in text.split():
        for ch in word:
            if unicodedata.category(ch) in ("Cc", "Cf"):
                out.append(ascii(ch)[1:-1])
            else:
                out.append(ch)
        out.append(" ")
    return "".join(out[:-1])


def shown_url(text: str, limit: int = 60) -> str:
    """A URL as a refusal quotes it: one line, short, and nothing that may be a password.

    A malformed URL may hide a password from :func:`redact`'s pattern (``me:pw@host``
    without a scheme, or ``http://me:pa/ss@host``, whose unescaped "/" ends the user
    part for a parser): then everything before the last "@" is masked.
    """
    text = redact(" ".join(text.split()))
    if "@" in text and not has_url_credentials(text.replace(f"{MASK}@", "")):
        text = f"{MASK}@" + text.rsplit("@", 1)[1]
    return text if len(text) <= limit else text[: limit - 3] + "..."
