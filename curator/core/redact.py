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
import json
import re
import unicodedata
from typing import Any

MASK = "***"
MIN_SECRET_CHARS = 8
"""A shorter remembered secret is not masked literally: masking "abc" everywhere would
garble messages, and a key that short is guessable anyway."""

PREFIX_CHARS = 12
"""A remembered secret's first characters, from which on a piece of it is masked: a
message that cuts a long value short ("sk-proj-A1b2C3d4...") must not show most of a key."""

_SECRETS: set[str] = set()
_FORMS: list[str] = []
"""Every way a remembered secret may come back, longest first (see :func:`_forms`)."""

# Parts of a parameter's name (``X-Amz-Signature``, ``hf_token``, ``apiKey``) that make
# its value a secret: wherever it stands, or only with another part before or after it
# (``api_token=…`` is a secret, "token=abc in the docs" a word), or in a URL's query.
_ALWAYS = frozenset({"pwd", "jwt"})
_ALWAYS_WITHIN = ("password", "passwd", "passphrase", "secret", "credential", "signature", "apikey")
"""Words that make a name a secret's also inside a longer part (``sslpassword``)."""
_WITH_ANOTHER = frozenset({"token", "key", "auth", "pass", "sig", "session"})
_IN_A_QUERY = _ALWAYS | _WITH_ANOTHER | {"code"}


def _forms(secret: str) -> list[str]:
    """The secret as a server or a message may write it back: as given, percent-encoded
    (a URL), escaped as a JSON string, and with its blanks run together (a one-line
    message)."""
    from urllib.parse import quote, quote_plus

    forms = {
        secret,
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        " ".join(secret.split()),
    }
    return [f for f in forms if len(f) >= MIN_SECRET_CHARS]


def _pieces(text: str, form: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that begin with ``form``'s first :data:`PREFIX_CHARS`
    characters (all of it when it is shorter) and go on as far as ``form`` does: a piece
    of the secret however it was cut."""
    head = form[:PREFIX_CHARS]
    found = []
    at = text.find(head)
    while at != -1:
        end = at + len(head)
        while end < len(text) and end - at < len(form) and text[end] == form[end - at]:
            end += 1
        found.append((at, end))
        at = text.find(head, at + 1)
    return found


def mask_secrets(text: str) -> str:
    """``text`` with each remembered secret masked, in every form it may come back in.
    The pieces of every form are found in the text as it is and merged, so two forms
    that share a beginning (a key percent-encoded with ``%20`` or with ``+``) mask the
    longer piece, whichever comes first."""
    pieces = sorted(
        p for form in _FORMS if form[:PREFIX_CHARS] in text for p in _pieces(text, form)
    )
    if not pieces:
        return text
    out: list[str] = []
    shown_up_to = 0
    for start, end in pieces:
        if start < shown_up_to:  # overlaps the piece before: one mask for both
            if end > shown_up_to:
                shown_up_to = end
            continue
        out.extend((text[shown_up_to:start], MASK))
        shown_up_to = end
    out.append(text[shown_up_to:])
    return "".join(out)


def scrubbed(value: Any) -> Any:
    """A decoded JSON answer with every remembered secret masked in its strings (keys
    too): what a server sends back enters the program, its messages, traces and database
    without the key it was sent, however the answer is later cut or quoted."""
    if not _FORMS:
        return value
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {scrubbed(k): scrubbed(v) for k, v in value.items()}
    return value


def _name_parts(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p for p in re.split(r"[\s_.\-]+", spaced.casefold()) if p]


def _secret_name(name: str, in_query: bool) -> bool:
    parts = _name_parts(name)
    if any(p in _ALWAYS or any(w in p for w in _ALWAYS_WITHIN) for p in parts):
        return True
    if in_query:
        return any(p in _IN_A_QUERY for p in parts)
    return len(parts) > 1 and any(p in _WITH_ANOTHER for p in parts)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """URL credentials, authorization values and parameters: compiled on the first text
    that needs them, not on import (every command imports this module; few have a
    message to redact)."""
    # scheme://userinfo@ : the userinfo may hold anything but "/", "?", "#", "@" and
    # spaces; the last "@" before the host ends it (RFC 3986: "@" is not in a host).
    userinfo = re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,31}://)[^/?#@\s]*@")
    auth_header = re.compile(
        r"(?i)\b(authorization|proxy-authorization)([\"']?\s*[:=]\s*[\"']?)"
        r"(?:(bearer|basic|token)\s+)?"
        r"[^\s,;'\"]+"
    )
    # name=value, also quoted ('a b') as libpq's key=value strings write values with
    # blanks; whether the value is a secret is decided by the name (_secret_name).
    parameter = re.compile(
        r"(?P<before>[?&;#]|(?<![\w.\-]))(?P<name>[A-Za-z][\w.\-]{0,63})(?P<eq>\s*=\s*)"
        r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^&#\s'\"]+)"
    )
    return userinfo, auth_header, parameter


def _masked_parameter(m: re.Match[str]) -> str:
    if not _secret_name(m["name"], m["before"] in ("?", "&", ";", "#")):
        return m[0]
    return f"{m['before']}{m['name']}{m['eq']}{MASK}"


def redact(text: str) -> str:
    """``text`` with remembered secrets, URL credentials, authorization values and
    secret parameters masked."""
    if not text:
        return text
    text = mask_secrets(text)
    userinfo, auth_header, parameter = _patterns()
    text = userinfo.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = auth_header.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) + ' ' if m.group(3) else ''}{MASK}",
        text,
    )
    return parameter.sub(_masked_parameter, text)


def has_url_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password before its host."""
    return _patterns()[0].search(url.strip()) is not None


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` (an API key this program sends) in every later :func:`redact`.

    For the life of the process: a key once sent may come back in any later answer.
    """
    if secret and len(secret) >= MIN_SECRET_CHARS and secret not in _SECRETS:
        _SECRETS.add(secret)
        _FORMS[:] = sorted({f for s in _SECRETS for f in _forms(s)}, key=len, reverse=True)


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
