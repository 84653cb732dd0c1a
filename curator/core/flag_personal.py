"""The ``personal`` flag rule: identifiers that point at one person.

Card numbers (checked with Luhn), IBANs (mod 97), account, passport and social security
numbers, postal addresses in several countries' formats (number then street, street then
number, "12 rue …", "calle Mayor 5"), postcodes and phone numbers. A phone number is also
a contact point (the ``link`` rule reports it too): a memory that carries someone's number
carries a way to reach that person. People's names are never flagged: ordinary memories are
full of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from curator.core.flag_rules import PHONE_PATTERNS, Hit, looks_like_date
from curator.core.regex_gate import GatedPattern, gated

_I = re.IGNORECASE


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    s = candidate.replace(" ", "").upper()
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    try:
        number = int("".join(str(int(ch, 36)) for ch in moved))
    except ValueError:
        return False
    return number % 97 == 1


_STREET = (
    r"(?:street|st|avenue|ave|road|rd|lane|ln|boulevard|blvd|drive|dr|court|ct|way|place|pl|"
    r"terrace|close|crescent|square|sq|highway|hwy|parkway|pkwy|strasse|straße|gasse|weg|"
    r"rue|calle|via)"
)
_CARD = gated(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = gated(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_PERSONAL_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (
        gated(r"\b\d{1,5}[a-z]?\s+(?:[A-Z][\w'-]+\s+){1,3}" + _STREET + r"\b\.?", _I),
        "a postal address",
    ),
    (gated(r"\b(?:P\.?\s?O\.?\s+Box|Postfach)\s+\d+", _I), "a postal address"),
    (gated(r"\b(?:apt|apartment|suite|flat)\s*#?\s*\d+[A-Z]?\b", _I), "a postal address"),
    (
        gated(r"\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b|\b[A-Z][a-z]+,\s+[A-Z]{2}\s+\d{5}\b"),
        "a postcode",
    ),
    (gated(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])"), "a social security number"),
    (
        # "her passport number is X4481923", "Reisepassnummer C01X00T47"
        gated(
            r"\b(?:passport|reisepass\w*|pass(?:nummer)?|pasaporte|passeport|passaporto|"
            r"passaporte|паспорт\w*|pasaport|paspoort|pass|id\s+card|ausweis\w*|dni|nie)\s*"
            r"(?:number|no\.?|num|nummer|número|numéro|numero|номер|numarası|nr\.?|#)?\s*"
            r"(?:is|es|est|è|ist|é|:|#)?\s*[A-Z]{0,2}\d[\dA-Z]{5,9}\b",
            _I,
        ),
        "a passport or ID number",
    ),
    (gated(r"(?:护照|パスポート)[^\n。]{0,8}?[A-Z]{0,2}\d{6,9}"), "a passport or ID number"),
    (
        # "Lindenstraße 12", "Keizersgracht 123", "Storgatan 5": the street name, then the number
        gated(
            r"\b[A-ZÄÖÜÅ][\wäöüßåé-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|damm|ufer|"
            r"straat|gracht|laan|plein|kade|gatan|vägen|gata|väg|ulica|caddesi|sokak|sokağı)"
            r"\s+\d{1,4}[a-z]?\b",
        ),
        "a postal address",
    ),
    (
        # "12 rue de la Paix", "calle Mayor 5", "via Roma 10", "rua Augusta, 200"
        gated(
            r"\b\d{1,4}(?:\s*bis)?,?\s+(?:rue|avenue|boulevard|bd|chemin|allée|place|impasse|"
            r"quai)\s+(?:de\s+la\s+|de\s+l'|du\s+|des\s+|de\s+)?[A-ZÉ][\w'-]+|"
            r"\b(?:calle|avenida|avda\.?|plaza|paseo|via|viale|piazza|corso|rua|travessa|"
            r"ulica|ul\.)\s+(?:de\s+|del\s+|della\s+|da\s+|do\s+)?[A-Z][\w'-]+"
            r"(?:\s+[A-Z][\w'-]+){0,2},?\s+(?:n[º°o]\.?\s*)?\d{1,4}\b",
        ),
        "a postal address",
    ),
    (
        # "10969 Berlin", "75008 Paris", "1012 AB Amsterdam" after a street and a comma
        gated(r"(?<=,\s)(?:\d{5}|\d{4}\s?[A-Z]{2}|\d{2}-\d{3})\s+[A-ZÄÖÜ][a-zäöüß]+\b"),
        "a postcode",
    ),
    (gated(r"\bsort\s+code\s*:?\s*\d{2}-\d{2}-\d{2}\b", _I), "a bank sort code"),
    (
        gated(
            r"\b(?:account|acct|routing|member|customer|policy|passport|licen[cs]e|"
            r"national\s+id|id|tax\s+id|ssn|iban|bsb|aba)\s*(?:number|no\.?|num|#)?\s*"
            r"(?:is|:|#)?\s*\d[\d -]{5,}\d",
            _I,
        ),
        "an account or identity number",
    ),
)


def personal_hits(text: str) -> Iterator[Hit]:
    # A phone number reaches a person: personal as well as a contact point (link).
    for pattern in PHONE_PATTERNS:
        for m in pattern.finditer(text):
            if not looks_like_date(m.group(0)):
                yield m.start(), m.end(), "a phone number (reaches a person)"
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and len(set(digits)) > 1:
            yield m.start(), m.end(), "a payment card number (passes the Luhn check)"
    for m in _IBAN.finditer(text):
        if iban_ok(m.group(0)):
            yield m.start(), m.end(), "a bank account number (IBAN)"
    for pattern, reason in _PERSONAL_RULES:
        for m in pattern.finditer(text):
            yield m.start(), m.end(), reason
