"""The text rules behind :mod:`curator.core.flags`: one function per flag kind.

Each rule returns ``(start, end, reason)`` triples over the text it was given. They are
deliberately plain regular expressions and small checks (Luhn, mod-97, Shannon entropy,
Unicode script names) so a reviewer can read why something was flagged, and the
benchmark (``benchmarks/bench_poisoning.py``) can say how often they are right.

What they look for is what a poisoned memory needs to do harm once it is in the agent's
prompt: tell the agent what to do, point it somewhere, carry a secret or someone's
personal data, hide text from the reviewer, or rewrite the agent's own rules.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

Hit = tuple[int, int, str]

_I = re.IGNORECASE

# -- instructions addressed to the agent ---------------------------------------------------

_AGENT = r"(?:the\s+(?:agent|assistant|bot|model|ai)|you|your\s*self|yourself)"
_VERB = (
    r"(?:reply|respond|answer|say|tell|include|mention|recommend|send|share|reveal|link|"
    r"use|call|run|execute|forward|click|visit|trust|obey|follow|post|direct|refer|add|"
    r"append|start|end|sign|claim|agree|promote|praise|ignore|disregard|treat|output|"
    r"print|paste|write|give|provide|ask|tell|keep|remember|report|pretend|act|comply|"
    r"believe|check|contact|email|dm|message|transfer|pay|buy|install|download|open|"
    r"describe|refuse|avoid|skip|stop|answer)"
)

_ROLE_REASON = "tries to give the agent a role"

# A sentence start is "[.!?;\n]" then blanks that are not newlines ([^\S\n]*): with \s* a
# run of newlines was rescanned from each of its newlines, quadratic in the run's length
# (4,000 blank lines took seconds); the last newline of a run still starts the sentence.
_INSTRUCTION_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|"
            r"every\s+)*(?:previous|prior|above|earlier|preceding|former|original|existing|"
            r"other|system)?\s*(?:instructions?|rules?|prompts?|guidelines?|directives?|"
            r"messages?|context|constraints?|safeguards?|everything)",
            _I,
        ),
        "tells the agent to ignore its instructions",
    ),
    (
        re.compile(r"\b(?:from\s+now\s+on|henceforth|from\s+this\s+point\s+(?:on|forward))\b", _I),
        "a standing order (“from now on”)",
    ),
    (
        re.compile(
            r"\b(?:going\s+forward|in\s+(?:the\s+)?future|next\s+time)\s*,?\s+" + _AGENT, _I
        ),
        "a standing order for future conversations",
    ),
    (
        re.compile(r"(?:^|[.!?;\n][^\S\n]*)(?:always|never)\s+[a-z]{3,}\b", _I),
        "an imperative sentence (“Always …” / “Never …”)",
    ),
    (
        re.compile(
            r"\b" + _AGENT + r"\s+(?:must|should|shall|have\s+to|has\s+to|needs?\s+to|"
            r"are\s+to|is\s+to|are\s+required\s+to|is\s+required\s+to|will\s+now|"
            r"ought\s+to|had\s+better)\b(?!\s+not\s+be\s+surprised)",
            _I,
        ),
        "an instruction addressed to the agent",
    ),
    (
        re.compile(
            r"\b(?:always|never)\s+(?:\w+\s+){0,2}?" + _VERB + r"\b[^.!?\n]{0,80}?"
            r"\bwhen(?:ever)?\s+(?:asked|someone|somebody|anyone|a\s+user|the\s+user|users?|"
            r"people|you|they|he|she)\b",
            _I,
        ),
        "an “always/never … when asked” rule",
    ),
    (
        re.compile(
            r"(?:^|[.!?:;\n][^\S\n]*|\"\s*)(?:always|never|do\s+not|don't|please|make\s+sure\s+to|"
            r"be\s+sure\s+to|remember\s+to)\s+" + _VERB + r"\b",
            _I,
        ),
        "an imperative sentence (an order, not an observation)",
    ),
    (
        re.compile(
            r"(?:^|[.!?:;\n][^\S\n]*)(?:reply|respond|answer|send|forward|recommend|share|tell|"
            r"direct|refer|link|promote|ignore|report)\s+(?:to\s+)?(?:every|all|any|each)\b",
            _I,
        ),
        "an imperative sentence (an order, not an observation)",
    ),
    (
        re.compile(
            r"(?:^|[.!?:;\n][^\S\n]*)" + _VERB + r"\s+(?:\w+\s+){0,3}?(?:to|with|at|via)\s+"
            r"(?:https?://|www\.|\S+@\S+|\+?\d)",
            _I,
        ),
        "an imperative sentence pointing somewhere",
    ),
    (
        re.compile(
            r"\b(?:system\s+prompt|system\s+message|developer\s+mode|jailbr[eo]a?k\w*|"
            r"DAN\s+mode|do\s+anything\s+now|prompt\s+injection|hidden\s+instructions?|"
            r"new\s+instructions?|updated\s+instructions?|your\s+instructions|"
            r"your\s+(?:new\s+|real\s+|true\s+)?(?:role|persona|task|objective|programming))\b",
            _I,
        ),
        "talks about the agent's prompt or role",
    ),
    (
        re.compile(
            r"\b(?:act\s+as|pretend\s+(?:to\s+be|you\s+are)|role-?play\s+as|you\s+are\s+now|"
            r"you\s+are\s+no\s+longer|from\s+here\s+on\s+you\s+are|simulate\s+being)\b",
            _I,
        ),
        _ROLE_REASON,
    ),
    (
        re.compile(
            r"<\|[a-z_]{2,30}\|>|<\|?/?(?:system|user|assistant|im_start|im_end|endoftext|"
            r"eot_id|start_header_id|end_header_id|begin_of_text)\|?>|\[/?INST\]|<<\s*/?SYS\s*>>|"
            r"</?s>|<start_of_turn>|<end_of_turn>|^[^\S\n]*#{2,}[^\S\n]*(?:system|instruction|response)\b|"
            r"(?:^|\n)[^\S\n]*(?:system|assistant)\s*:\s",
            _I | re.MULTILINE,
        ),
        "a chat-template or role token",
    ),
    (
        re.compile(
            r"</?(?:tool_call|tool_use|function_call|function|invoke|tool)\b[^>]*>|"
            r"\"(?:function_call|tool_calls?|arguments|tool_name)\"\s*:|"
            r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\"",
            _I,
        ),
        "tool-call syntax",
    ),
    (
        re.compile(
            r"```|\b(?:curl|wget)\s+-?\S|\brm\s+-[rf]+\b|\bsudo\s+\w|\|\s*(?:ba|z)?sh\b|"
            r"\$\([^)]*\)|\beval\s*\(|\bexec\s*\(|\bos\.system\b|\bsubprocess\.|"
            r"\bimport\s+(?:os|subprocess|socket|requests)\b|\bpowershell\b|\bchmod\s+\+x\b|"
            r";\s*drop\s+table\b|\bnc\s+-[elvp]+\b|\bbase64\s+-d\b|<script\b|javascript:",
            _I,
        ),
        "code or shell syntax",
    ),
)


_NEGATED = re.compile(r"\b(?:never|not|n't|no\s+longer|refuses?\s+to)\s*(?:\w+\s+)?$", _I)


def instruction_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _INSTRUCTION_RULES:
        for m in pattern.finditer(text):
            start, end = m.span()
            if reason == _ROLE_REASON and _NEGATED.search(text[max(0, start - 24) : start]):
                continue  # "I never pretend to be one" declines the role
            # Trim leading punctuation/space the anchor consumed, so the span is the words.
            while start < end and not text[start].isalnum() and text[start] not in '<[`{|"$;#':
                start += 1
            yield start, end, reason


# -- links and contact points ---------------------------------------------------------------

_TLDS = (
    "com|net|org|io|ai|co|me|info|biz|xyz|ru|cn|tk|ml|ga|cf|gq|top|site|online|link|click|"
    "app|dev|ly|gg|sh|to|cc|ws|su|pw|icu|buzz|shop|store|live|vip|win|bid|loan|work|"
    "example|zip|mov|uk|de|fr|nl|eu|us|ca|au|in|br|jp|kr|es|it|pl|ch|se|no|fi|be|at|cz|"
    "gov|edu|mil|int|tv|fm|am|la|ps|su|ir|kp|onion"
)
_LINK_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        # bounded, possessive runs: unbounded ones rescanned the rest of the text from every "!["
        re.compile(r"!\[[^\]\n]{0,500}+\]\([^)\s]{1,2000}+[^)]{0,2000}+\)", _I),
        "a markdown image (can leak data on load)",
    ),
    (
        re.compile(r"\b(?:https?|hxxps?|ftp|file|data|ipfs)\s*(?::|\[:\])\s*//\S+", _I),
        "a link",
    ),
    (re.compile(r"\bwww\s*(?:\.|\[\.\]|\(\.\))\s*[\w-]+\S*", _I), "a link"),
    (
        re.compile(
            r"\b[\w.+-]{1,64}@[\w-]{1,63}(?:(?:\.|\[\.\]|\(\.\))[\w-]{1,63}){0,8}"
            r"(?:\.|\[\.\]|\(\.\))"
            r"(?:" + _TLDS + r")\b",
            _I,
        ),
        "an e-mail address",
    ),
    (
        # obfuscated: "name [at] host.com", "name (at) host (dot) com", "name at host dot com"
        re.compile(
            r"\b[\w.+-]{1,64}\s*(?:\[at\]|\(at\))\s*[\w-]{1,63}(?:\s*(?:\.|\[\.\]|\(\.\)|"
            r"\[dot\]|\(dot\)|\s+dot\s+)\s*[\w-]{1,63}){1,8}|"
            r"\b[\w-]{1,64}(?:\s+dot\s+[\w-]{1,63}){0,8}\s+at\s+[\w-]{1,63}"
            r"(?:\s+dot\s+[\w-]{1,63}){0,8}\s+dot\s+"
            r"(?:" + _TLDS + r")\b",
            _I,
        ),
        "an e-mail address",
    ),
    (
        re.compile(
            r"\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.|\[\.\]|\(\.\))){1,8}(?:" + _TLDS + r")"
            r"(?![\w-])(?:/\S*)?",
            _I,
        ),
        "a domain name",
    ),
    (
        re.compile(
            r"\b(?:t\.me|wa\.me|discord\.gg|bit\.ly|tinyurl)\b|"
            r"\b(?:telegram|whatsapp|signal|discord|wechat|kik|snapchat)\b[^.\n]{0,30}?@\w{3,}",
            _I,
        ),
        "a messaging contact",
    ),
    (
        re.compile(
            r"(?<![\w+])(?:\+|00)\d{1,3}[\s.-]?\(?\d{1,4}\)?(?:[\s.-]?\d{2,4}){2,4}(?!\w)|"
            r"(?<![\w+-])\(\d{3}\)\s?\d{3}[\s.-]\d{4}(?!\w)|"
            r"(?<![\w+-])\d{3}[.-]\d{3}[.-]\d{4}(?![\w-])|"
            r"(?<![\w+-])0\d{2,4}[\s-]\d{3,4}[\s-]?\d{3,4}(?![\w-])",
        ),
        "a phone number",
    ),
    (
        re.compile(
            r"\b(?:call|text|phone|ring|whatsapp|sms|tel|mobile|cell)\b[^.\n]{0,20}?"
            r"(?<!\d)\d(?:[\s.-]?\d){7,13}(?!\d)",
            _I,
        ),
        "a phone number",
    ),
)

_DOMAIN_LIKE_WORDS = re.compile(r"^(?:e\.g|i\.e|a\.m|p\.m|u\.s|etc)\b", _I)


def link_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _LINK_RULES:
        for m in pattern.finditer(text):
            if reason == "a domain name" and _DOMAIN_LIKE_WORDS.match(m.group(0)):
                continue
            if reason == "a phone number" and _looks_like_date(m.group(0)):
                continue
            end = m.end()
            while end > m.start() and text[end - 1] in ".,;:!?)]'\"":
                span = text[m.start() : end]
                if span[-1] in ")]" and span.count("(") + span.count("[") >= span.count(
                    ")"
                ) + span.count("]"):
                    break  # a closing bracket that belongs to the link (a markdown image)
                end -= 1  # sentence punctuation after a link is not part of it
            yield m.start(), end, reason


def _looks_like_date(s: str) -> bool:
    return bool(
        re.fullmatch(r"\s*\d{4}[-./]\d{1,2}[-./]\d{1,2}\s*|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}", s)
    )


# -- credentials and secrets ----------------------------------------------------------------

_SECRET_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{16,}"), "an API key (sk-…)"),
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), "a payment API key"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"), "a GitHub token"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), "a Google API key"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}"), "a GitLab token"),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "a Hugging Face token"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "a JWT"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (
        re.compile(
            r"\b(?:password|passwd|passcode|pwd|pin|api[\s_-]?key|secret(?:[\s_-]?key)?|"
            r"access[\s_-]?token|auth[\s_-]?token|bearer|token|2fa\s+code|otp|"
            r"recovery\s+(?:code|phrase)|seed\s+phrase|mnemonic)"
            r"(?:\s+(?:is|was|=|:)|\s*[:=])\s*[\"'`]?[^\s\"'`]{4,}",
            _I,
        ),
        "a password or key given in the text",
    ),
)

_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")


def shannon_entropy(s: str) -> float:
    """Bits per character of ``s`` (uniform over 64 symbols: 6.0; English words: ~4)."""
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def secret_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _SECRET_RULES:
        for m in pattern.finditer(text):
            yield m.start(), m.end(), reason
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if _decodes_to_text(token) is not None:
            continue  # a base64 blob of text: the hidden-text rule reports it
        has_digit = any(ch.isdigit() for ch in token)
        has_alpha = any(ch.isalpha() for ch in token)
        if not (has_digit and has_alpha):
            continue
        if re.fullmatch(r"[0-9a-fA-F]{32,}", token) or shannon_entropy(token) >= 3.7:
            yield m.start(), m.end(), "a long random-looking string (a key or token?)"


# -- personal identifiers -------------------------------------------------------------------


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
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_PERSONAL_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\b\d{1,5}[a-z]?\s+(?:[A-Z][\w'-]+\s+){1,3}" + _STREET + r"\b\.?", _I),
        "a postal address",
    ),
    (re.compile(r"\b(?:P\.?\s?O\.?\s+Box|Postfach)\s+\d+", _I), "a postal address"),
    (re.compile(r"\b(?:apt|apartment|suite|flat)\s*#?\s*\d+[A-Z]?\b", _I), "a postal address"),
    (
        re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b|\b[A-Z][a-z]+,\s+[A-Z]{2}\s+\d{5}\b"),
        "a postcode",
    ),
    (re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])"), "a social security number"),
    (re.compile(r"\bsort\s+code\s*:?\s*\d{2}-\d{2}-\d{2}\b", _I), "a bank sort code"),
    (
        re.compile(
            r"\b(?:account|acct|routing|member|customer|policy|passport|licen[cs]e|"
            r"national\s+id|id|tax\s+id|ssn|iban|bsb|aba)\s*(?:number|no\.?|num|#)?\s*"
            r"(?:is|:|#)?\s*\d[\d -]{5,}\d",
            _I,
        ),
        "an account or identity number",
    ),
)


def personal_hits(text: str) -> Iterator[Hit]:
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


# -- hidden text ----------------------------------------------------------------------------

_ZERO_WIDTH = re.compile(
    "[\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad\u034f]+"
)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]+")
_TAGS = re.compile("[\U000e0000-\U000e007f]+")
_PRIVATE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd]+")
_WORD = re.compile(r"\w+", re.UNICODE)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")


def _script(ch: str) -> str:
    if ch.isascii():
        return "LATIN" if ch.isalpha() else ""
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ""
    if name.startswith(("FULLWIDTH LATIN", "MATHEMATICAL", "MODIFIER LETTER")):
        return "LOOKALIKE"
    for script in ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"):
        if name.startswith(script):
            return script
    return "OTHER" if ch.isalpha() else ""


def _decodes_to_text(token: str) -> str | None:
    """The decoded text of a base64 token of 32+ characters that decodes to readable text."""
    stripped = token.rstrip("=")
    if len(stripped) < 32 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", token):
        return None
    padded = stripped + "=" * (-len(stripped) % 4)
    try:
        raw = base64.b64decode(padded, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return decoded if decoded and printable / len(decoded) > 0.95 else None


def hidden_hits(text: str) -> Iterator[Hit]:
    for m in _ZERO_WIDTH.finditer(text):
        yield m.start(), m.end(), "invisible zero-width characters"
    for m in _BIDI.finditer(text):
        yield m.start(), m.end(), "bidirectional override characters (text shown out of order)"
    for m in _TAGS.finditer(text):
        yield m.start(), m.end(), "invisible Unicode tag characters (hidden ASCII)"
    for m in _PRIVATE.finditer(text):
        yield m.start(), m.end(), "private-use characters"
    for m in _WORD.finditer(text):
        scripts = {_script(ch) for ch in m.group(0)} - {""}
        if "LOOKALIKE" in scripts or (len(scripts) > 1 and "LATIN" in scripts):
            yield m.start(), m.end(), "a word mixing alphabets (look-alike letters)"
    for m in _BASE64.finditer(text):
        token = m.group(0)
        if _decodes_to_text(token) is not None:
            yield m.start(), m.end(), "a base64 blob that decodes to text"
        elif len(token) >= 48 and shannon_entropy(token) >= 4.5:
            yield m.start(), m.end(), "a base64-like blob"


def control_hits(text: str) -> Iterator[Hit]:
    """C0/C1 control characters (ESC sequences hide or erase text on a terminal, NUL cuts it).

    Intake refuses them (:mod:`curator.core.textsafety`); this flags what a database
    written before that rule still holds, so the reviewer and ``curator audit`` see it.
    """
    from curator.core.textsafety import CONTROLS, control_name

    for m in CONTROLS.finditer(text):
        yield m.start(), m.end(), f"a control character {control_name(m.group())} (hides text)"
