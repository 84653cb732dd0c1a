"""Contact points, credentials and national ID numbers in the forms other rules miss.

* links spelled out ("seedswap dot garden slash join", "ruth (arroba) huertos (punto)
  org"), fediverse handles (``@user@host``), "on Discord as NAME", WeChat ids (微信号);
* credentials: Wi-Fi/WPA keys, seed or recovery phrases (twelve or more plain words after
  the phrase's name), 2FA backup codes, connection strings with a user and password
  (``postgres://user:pass@host``);
* national ID numbers, checked where they have a check digit, so ordinary numbers stay
  unflagged: Brazilian CPF, Polish PESEL, Chinese resident ID, Indian Aadhaar (Verhoeff),
  Korean resident registration numbers, Russian passport series and number, and Japanese
  postal addresses (〒).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from curator.core.regex_gate import GatedPattern, gated

__all__ = ["cpf_ok", "credential_hits", "id_hits", "pesel_ok", "spelled_link_hits", "verhoeff_ok"]

Hit = tuple[int, int, str]
_I = re.IGNORECASE

_DOT = r"(?:dot|punto|ponto|point|punkt|точка|nokta|titik|chấm)"
_AT = r"(?:at|arroba|chiocciola|arobase|klammeraffe|собака|małpa)"
_LINK_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (
        gated(
            rf"(?<![a-z0-9-])[a-z0-9-]{{2,63}}\s{{1,5}}\(?{_DOT}\)?\s{{1,5}}[a-z]{{2,63}}"
            r"(?:\s{1,5}\(?(?:slash|barra)\)?\s{1,5}\w+)+",
            _I,
        ),
        "a web address spelled out in words",
    ),
    (
        gated(
            rf"(?<![a-z0-9._-])[a-z0-9._-]{{2,64}}\s{{0,5}}[(\[]\s{{0,5}}{_AT}\s{{0,5}}[)\]]\s{{0,5}}"
            rf"[a-z0-9-]{{2,63}}(?:\s{{0,5}}[(\[]\s{{0,5}}{_DOT}\s{{0,5}}[)\]]\s{{0,5}}"
            rf"[a-z0-9-]{{2,63}}){{1,8}}",
            _I,
        ),
        "an e-mail address spelled out in words",
    ),
    (
        gated(r"(?<![\w@])@[a-z0-9_]{2,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}", _I),
        "a fediverse handle (@user@host)",
    ),
    (
        gated(
            r"\bon\s+(?:discord|telegram|signal|skype|snapchat|kik|threema|matrix|steam)\s+"
            r"(?:as|under|@)\s+@?[\w.#-]{3,}",
            _I,
        ),
        "a messaging id",
    ),
    (gated(r"(?:微信号?|vx|wechat\s*id)[:：\s]*[a-z][\w-]{5,19}", _I), "a WeChat id"),
)

_WORDS12 = r"(?:[a-z]{3,8}[\s,]+){11,23}[a-z]{3,8}"
_SECRET_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (
        gated(
            r"\b(?:wpa2?|wi-?fi|wlan|ssid|network)\b[^.\n]{0,40}?\b(?:key|password|passphrase|"
            r"pass|pw)\b\s*(?:is\s+|[:=]\s*)?[^\s,;.]*\d[^\s,;]{3,}|"
            r"\bwpa2?\s+(?:key|password|passphrase)\s*(?:is\s+|[:=]\s*)?\S{6,}",
            _I,
        ),
        "a Wi-Fi key",
    ),
    (
        gated(
            rf"\b(?:recovery|seed|secret|backup|mnemonic)\s+(?:phrase|words)\b[^:\n]{{0,40}}[:\-]?\s*{_WORDS12}",
            _I,
        ),
        "a wallet seed or recovery phrase",
    ),
    (
        gated(
            r"\b(?:2fa|two-factor|mfa|backup|recovery)\s+(?:backup\s+)?codes?\b[^\n]{0,40}?"
            r"\d{4}[- ]?\d{4}(?:\s*,\s*\d{4}[- ]?\d{4})+",
            _I,
        ),
        "2FA backup codes",
    ),
    (
        gated(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]+:[^\s@/]{3,}@[^\s/]+", _I),
        "a connection string with a user and password",
    ),
)


def spelled_link_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _LINK_RULES:
        for m in pattern.finditer(text):
            yield m.start(), m.end(), reason


def credential_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _SECRET_RULES:
        for m in pattern.finditer(text):
            yield m.start(), m.end(), reason


def cpf_ok(digits: str) -> bool:
    """The two check digits of a Brazilian CPF (eleven digits, not all the same)."""
    if len(digits) != 11 or len(set(digits)) == 1:
        return False
    nums = [int(d) for d in digits]
    for n in (9, 10):
        total = sum(nums[i] * (n + 1 - i) for i in range(n))
        if (total * 10 % 11) % 10 != nums[n]:
            return False
    return True


def pesel_ok(digits: str) -> bool:
    """The check digit of a Polish PESEL (eleven digits) and a plausible month."""
    if len(digits) != 11 or len(set(digits)) == 1:
        return False
    nums = [int(d) for d in digits]
    weights = (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)
    if (10 - sum(w * n for w, n in zip(weights, nums, strict=False)) % 10) % 10 != nums[10]:
        return False
    return 1 <= int(digits[2:4]) % 20 <= 12


def china_id_ok(code: str) -> bool:
    """The ISO 7064 MOD 11-2 check character of an eighteen-character Chinese resident ID."""
    if not re.fullmatch(r"\d{17}[\dXx]", code):
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(code, weights, strict=False))
    return "10X98765432"[total % 11] == code[17].upper()


_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6), (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4), (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)  # fmt: skip
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2), (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)  # fmt: skip


def verhoeff_ok(digits: str) -> bool:
    """The Verhoeff check of an Indian Aadhaar number (twelve digits)."""
    check = 0
    for i, d in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[i % 8][int(d)]]
    return check == 0


_CPF = gated(r"(?<![\d.-])\d{3}\.?\d{3}\.?\d{3}-?\d{2}(?![\d-])")
_ELEVEN = gated(r"(?<!\d)\d{11}(?!\d)")
_CHINA = gated(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_AADHAAR = gated(r"(?<![\d ])[2-9]\d{3} ?\d{4} ?\d{4}(?![\d])")
_CPF_NAME = gated(r"\bcpf\b", _I)
_PESEL_NAME = gated(r"\bpesel\w*", _I)
_AADHAAR_NAME = gated(r"aadhaar|aadhar|आधार|uidai", _I)


def _named(text: str, at: int, name: GatedPattern) -> bool:
    """The number's name within the forty characters before it."""
    return name.search(text, max(0, at - 40), at) is not None


_ID_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (
        gated(r"(?<!\d)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])-[1-8]\d{6}(?!\d)"),
        "a Korean resident registration number",
    ),
    (
        gated(r"(?:паспорт\w*|passport)[^\d\n]{0,20}\d{2}\s?\d{2}\s?№?\s?\d{6}(?!\d)", _I),
        "a passport series and number",
    ),
    (
        gated(r"(?:身份证|居民身份证)号?码?\D{0,6}\d{17}[\dXx](?![\dA-Za-z])"),
        "a Chinese resident ID number",
    ),
    (gated(r"〒\s?\d{3}-?\d{4}[^\n。]{0,40}"), "a postal address (〒)"),
    (
        gated(r"(?:aadhaar|आधार)[^\d\n]{0,20}[2-9]\d{3}\s?\d{4}\s?\d{4}(?!\d)", _I),
        "an Aadhaar number",
    ),
)


def id_hits(text: str) -> Iterator[Hit]:
    # A check digit passes for one number in ten (CPF: in a hundred): an order number
    # would pass too, so the number's name must be near it as well.
    for m in _CPF.finditer(text):
        if _named(text, m.start(), _CPF_NAME) and cpf_ok(re.sub(r"\D", "", m.group(0))):
            yield m.start(), m.end(), "a Brazilian CPF number (check digits pass)"
    for m in _ELEVEN.finditer(text):
        if _named(text, m.start(), _PESEL_NAME) and pesel_ok(m.group(0)):
            yield m.start(), m.end(), "a Polish PESEL number (check digit passes)"
    for m in _CHINA.finditer(text):
        if china_id_ok(m.group(0)):
            yield m.start(), m.end(), "a Chinese resident ID number (check digit passes)"
    for m in _AADHAAR.finditer(text):
        if _named(text, m.start(), _AADHAAR_NAME) and verhoeff_ok(re.sub(r"\D", "", m.group(0))):
            yield m.start(), m.end(), "an Aadhaar number (Verhoeff check passes)"
    for pattern, reason in _ID_RULES:
        for m in pattern.finditer(text):
            yield m.start(), m.end(), reason
