"""The secrets this program sends, masked in whatever form they come back.

A server may echo the API key it was sent in any field of an answer, and a model may be
made to write it: quoted, percent-encoded, JSON- or HTML-escaped, in capitals, with its
blanks run together, cut short by a message, or one token at a time. No pattern can
tell such text from any other, so the program remembers the keys it sends
(:func:`remember_secret`) and masks each of them, in each of those forms, wherever it
appears (:func:`mask_secrets`): in every string of every answer as it arrives
(:func:`scrubbed`) and in generated text as it streams (:class:`SecretHold`), before
anything is shown, stored, traced or cut short. :func:`curator.core.redact.redact`, the
one redaction of every message, applies it first.

A piece is masked from its first :data:`PREFIX_CHARS` characters on, and past the first
character where it stops matching the form as long as it goes on like a key (no blank,
quote or bracket): ``\\/`` for ``/`` or ``&amp;`` for ``&`` does not leave the rest of
the key shown. A piece cut from the left (a key's last characters alone) is not
recognised: no message here cuts a value that way.
"""

from __future__ import annotations

import re
import threading
from typing import Any

MASK = "***"
MIN_SECRET_CHARS = 8
"""A shorter remembered secret is not masked: masking "abc" everywhere would garble
messages, and a key that short is guessable anyway."""

PREFIX_CHARS = 12
"""A remembered secret's first characters, from which on a piece of it is masked: a
message that cuts a long value short ("sk-proj-A1b2C3d4...") must not show most of a key."""

_SECRETS: set[str] = set()
_FORMS: tuple[str, ...] = ()
"""Every way a remembered secret may come back, in lower case (:func:`_lower`), longest
first. Replaced whole, never changed in place: a reader on another thread iterates the
tuple it found, never a list being rewritten under it."""
_LOCK = threading.Lock()
"""Taken to remember a secret (the set is read whole to make the forms)."""

_KEY_LIKE_STOP = re.compile(r"[\s\"'<>()\[\]{},;`]")
"""Characters that end a key written in some escaped form (see the module)."""


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` (an API key this program sends) from now on, for the life of the
    process: a key once sent may come back in any later answer."""
    global _FORMS
    if not secret or len(secret) < MIN_SECRET_CHARS:
        return
    with _LOCK:
        if secret not in _SECRETS:
            _SECRETS.add(secret)
            forms = {f for s in _SECRETS for f in _forms(s)}
            _FORMS = tuple(sorted(forms, key=len, reverse=True))


def _lower(text: str) -> str:
    """``text`` in lower case, one character for one: the few letters whose lower case
    is longer ("İ") stay as they are, so positions in the two texts agree."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _forms(secret: str) -> set[str]:
    # imported here: every command imports this module (through the redaction of its
    # messages), few ever remember a key
    import base64
    import html
    import json
    from urllib.parse import quote, quote_plus

    escaped = json.dumps(secret)[1:-1]
    encoded = quote(secret, safe="")
    forms = {
        secret,
        encoded,
        re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), encoded),
        quote_plus(secret, safe=""),
        escaped,
        escaped.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
        " ".join(secret.split()),
        base64.b64encode(secret.encode("utf-8", "surrogatepass")).decode("ascii"),
    }
    return {_lower(f) for f in forms if len(f) >= MIN_SECRET_CHARS}


def _pieces(text: str, lowered: str, form: str) -> list[tuple[int, int]]:
    """Where ``form`` begins in ``lowered`` (``text`` in lower case) and how far its
    piece goes."""
    head = form[:PREFIX_CHARS]
    found = []
    at = lowered.find(head)
    while at != -1:
        end = at + len(head)
        while end < len(text) and end - at < len(form) and lowered[end] == form[end - at]:
            end += 1
        if end - at < len(form):  # it stopped matching: the rest may be written otherwise
            limit = min(len(text), end + 3 * (len(form) - (end - at)) + 8)
            stop = _KEY_LIKE_STOP.search(text, end, limit)
            end = stop.start() if stop else limit
        found.append((at, end))
        at = lowered.find(head, at + 1)
    return found


def _spans(text: str) -> list[tuple[int, int]]:
    """The pieces of every remembered secret in ``text``, merged where they overlap or
    touch, in order: forms that share a beginning mask the longest piece."""
    lowered = _lower(text)
    pieces = sorted(
        p for form in _FORMS if form[:PREFIX_CHARS] in lowered for p in _pieces(text, lowered, form)
    )
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    shown_up_to = 0
    for start, end in spans:
        out.extend((text[shown_up_to:start], MASK))
        shown_up_to = end
    out.append(text[shown_up_to:])
    return "".join(out)


def mask_secrets(text: str) -> str:
    """``text`` with each remembered secret masked, in every form it may come back in,
    in any letter case."""
    if not _FORMS or not text:
        return text
    return _masked(text, _spans(text))


def scrubbed(value: Any) -> Any:
    """A decoded JSON answer with every remembered secret masked in its strings (keys
    too). Raises RecursionError on an answer nested deeper than Python recurses, as
    ``json.loads`` may: the caller treats both as a malformed answer."""
    if not _FORMS:
        return value
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {scrubbed(k): scrubbed(v) for k, v in value.items()}
    return value


class SecretHold:
    """Generated text, streamed: each piece is given on at once except what may still
    become, or go on as, a remembered secret, which waits for the pieces after it. A key
    written one token at a time then reaches the screen, the loop watch and the stored
    text masked, never as its first tokens.

    What is given on is always a beginning of the whole text masked as one: the pieces
    are found in all the text so far, and the text is cut before any piece that reaches
    its end (it may go on) and before any end that may begin a form.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """What of the text so far may be shown now."""
        if not _FORMS:
            return piece
        text = self._held + piece
        lowered = _lower(text)
        cut = len(text)
        for form in _FORMS:
            for size in range(min(len(text), len(form) - 1), 0, -1):
                if len(text) - size < cut and form.startswith(lowered[-size:]):
                    cut = len(text) - size
                    break
        spans = _spans(text)
        for start, end in spans:
            if end >= cut or end == len(text):  # may go on: wait for the next pieces
                cut = min(cut, start)
                break
        shown = _masked(text[:cut], [(a, b) for a, b in spans if b <= cut])
        self._held = text[cut:]
        return shown

    def flush(self) -> str:
        """The rest, masked, once the generation has ended."""
        rest, self._held = self._held, ""
        return mask_secrets(rest)
