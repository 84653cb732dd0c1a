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
keys it sends and masks each of them, in every form, wherever it appears
(:mod:`curator.core.secret_forms`); :func:`redact` does that first.

:func:`one_line` makes a message one line a terminal shows as written: a model id or a
header value from a hostile server may carry terminal escapes (``ESC[2J`` clears the
screen), backspaces or a right-to-left override that makes a message say something else.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from urllib.parse import unquote

from curator.core.secret_forms import MASK, mask_secrets

# Which parameters hold secrets, by the parts of their names (``X-Amz-Signature``,
# ``hf_token``, ``apiKey``, ``--api-key``): decided by the name, so that a message's
# ordinary ``sort_key=date``, ``session_count=3`` or ``max_tokens=128`` stays readable.
_SECRET_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "apikey",
    "apitoken",
    "accesstoken",
    "authtoken",
)
"""Secret wherever they stand, also inside a longer part (``sslpassword``)."""
_SECRET_PARTS = frozenset({"secret", "secrets", "credential", "credentials", "signature", "jwt"})
"""Secret as a part of their own (``client_secret``, but not ``secretary``)."""
_KEY_OWNERS = frozenset(
    {"api", "access", "secret", "private", "client", "auth", "master", "signing", "x"}
)
"""``…_key`` is a secret after one of these (``access_key``, not ``sort_key``)."""
_SECRET_LAST = frozenset({"token", "pwd", "sig", "sessionid"})
"""A name ending in one of these holds a secret (``hf_token``, ``db_pwd``)."""
_ALONE_IN_A_QUERY = frozenset(
    {
        "token",
        "key",
        "sig",
        "auth",
        "pass",
        "pwd",
        "pw",
        "session",
        "sessionid",
        "jsessionid",
        "code",
        "hmac",
        "otp",
        "pin",
        "bearer",
    }
)
"""Secret as a URL's query parameter or a command-line option even alone (``?key=``,
``;jsessionid=``, ``--token=``), but not as a part (``?country_code=``, ``?key_id=``)."""
_PLACEHOLDERS = frozenset({"USER", "USERNAME", "NAME", "USER:PASSWORD", "USER:PASS"})
"""The user parts of example URLs in messages (``postgresql://USER@HOST``): no secret."""


def _name_parts(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", unquote(name))
    return [p for p in re.split(r"[\s_.\-\[\]]+", spaced.casefold()) if p]


def _secret_name(name: str, in_query: bool) -> bool:
    """Whether the value after ``name`` is a secret (``in_query``: the name follows
    ``?``, ``&``, ``;`` or ``#``, or is a ``--option``)."""
    parts = _name_parts(name)
    if any(p in _SECRET_PARTS or any(w in p for w in _SECRET_WORDS) for p in parts):
        return True
    if in_query and len(parts) == 1 and parts[0] in _ALONE_IN_A_QUERY:
        return True
    if len(parts) < 2:
        return False
    last, before = parts[-1], parts[-2]
    return last in _SECRET_LAST or (last == "key" and before in _KEY_OWNERS)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """URL credentials, authorization values and parameters: compiled on the first text
    that needs them, not on import (every command imports this module; few have a
    message to redact)."""
    # scheme://userinfo@ : the userinfo may hold anything but "/", "?", "#" and spaces,
    # "@" included (a password "p@ss" sent as it is); the last "@" before the host ends it.
    userinfo = re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,31}://)([^/?#\s]*)@")
    auth_header = re.compile(
        r"(?i)\b(authorization|proxy-authorization)([\"']?\s*[:=]\s*[\"']?)"
        r"(?:(bearer|basic|token)\s+)?"
        r"[^\s,;'\"]+"
    )
    # name=value (and "name": value, as JSON writes it), the value also quoted ('a b',
    # as libpq's key=value strings write values with blanks; to the line's end when the
    # quote is not closed); --name=value as a command line writes an option. Whether
    # the value is a secret is decided by the name (_secret_name).
    parameter = re.compile(
        r"(?P<before>[?&;#]|(?<![\w.%\-\]]))(?P<name>-{0,2}[A-Za-z%][\w.%\-\[\]]{0,63})"
        r"(?P<eq>[ \t]*=[ \t]*|\"[ \t]*:[ \t]*)"
        r"(?P<value>'(?:[^'\\\n]|\\.)*'?|\"(?:[^\"\\\n]|\\.)*\"?|[^\s'\"]+)"
    )
    return userinfo, auth_header, parameter


def _masked_userinfo(m: re.Match[str]) -> str:
    if m[2] in _PLACEHOLDERS:
        return m[0]
    return f"{m[1]}{MASK}@"


def _masked_parameter(m: re.Match[str]) -> str:
    before, name, value = m["before"], m["name"], m["value"]
    in_query = before in ("?", "&", ";", "#")
    rest = ""
    if in_query and value[:1] not in ("'", '"'):
        # in a URL the value ends at the next parameter, which is judged on its own
        cut = re.search(r"[&#;]", value)
        if cut is not None:
            value, rest = (
                value[: cut.start()],
                _patterns()[2].sub(_masked_parameter, value[cut.start() :]),
            )
    if not _secret_name(name, in_query or name.startswith("-")):
        return f"{before}{name}{m['eq']}{value}{rest}"
    return f"{before}{name}{m['eq']}{MASK}{rest}"


_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}|xox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|hf_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16})(?![A-Za-z0-9_\-])"
)
"""Keys whose own shape says what they are, wherever they stand (an OpenAI or Anthropic
``sk-...``, GitHub, Slack, Hugging Face and AWS keys): a name is not always there."""


def redact(text: str) -> str:
    """``text`` with remembered secrets, URL credentials, authorization values, secret
    parameters and keys of a known shape masked."""
    if not text:
        return text
    text = _KEY_SHAPES.sub(MASK, mask_secrets(text))
    userinfo, auth_header, parameter = _patterns()
    text = userinfo.sub(_masked_userinfo, text)
    text = auth_header.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) + ' ' if m.group(3) else ''}{MASK}",
        text,
    )
    return parameter.sub(_masked_parameter, text)


_OPTION_SECRET_LAST = frozenset(
    {"key", "token", "secret", "password", "pass", "pwd", "passwd", "passphrase", "credential"}
)
"""An option whose name ends in one of these takes a secret (``--openai-key``,
``--llm-token``): on a command line the name is all there is to go by."""


def _secret_option(word: str) -> bool:
    """Whether ``word`` is an option (``--name``, no ``=value``) whose value is a secret."""
    if not word.startswith("-") or "=" in word:
        return False
    parts = _name_parts(word)
    joined = "".join(parts)
    return bool(parts) and (
        _secret_name(word, True)
        or parts[-1] in _OPTION_SECRET_LAST
        or any(w in joined for w in _SECRET_WORDS)
    )


def secret_arguments(words: Sequence[str]) -> list[str]:
    """The words of a command line that are a secret option's value (``--api-key KEY``):
    a message quoting one of them anywhere (argparse's "invalid choice: 'KEY'", when the
    option stood before the command) masks it (:func:`redact_arguments`). A word that is
    itself a long option (``--token --bogus``) is taken for one, not for a value."""
    return [
        word
        for previous, word in zip(["", *words], words, strict=False)
        if _secret_value(previous, word)
    ]


def _secret_value(previous: str, word: str) -> bool:
    """Whether ``word``, after ``previous``, is a secret option's value (a long option
    there is an option, not a value)."""
    return _secret_option(previous) and not word.startswith("--")


def redact_arguments(words: Sequence[str]) -> list[str]:
    """Command-line words as a message may quote them (argparse's "unrecognized arguments:
    ..."): each :func:`redact`-ed, and the word after a secret option (``--api-key KEY``,
    ``--password hunter2``) masked whole, blanks in it or not."""
    return [
        MASK if _secret_value(previous, word) else redact(word)
        for previous, word in zip(["", *words], words, strict=False)
    ]


def mask_words(text: str, words: Sequence[str]) -> str:
    """``text`` with each of ``words`` masked where it stands whole (quoted, or between
    blanks), the longest first."""
    for word in sorted(set(words), key=len, reverse=True):
        if word:
            text = re.sub(r"(?<![^\s'\"=])" + re.escape(word) + r"(?![^\s'\",)])", MASK, text)
    return text


def has_url_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password before its host."""
    return _patterns()[0].search(url.strip()) is not None


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
