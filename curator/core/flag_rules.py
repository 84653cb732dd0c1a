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

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

from curator.core.flag_handle_roles import names_a_person_inside
from curator.core.flag_normalise import decoded_base64
from curator.core.regex_gate import GatedPattern, gated

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
_INSTRUCTION_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (
        gated(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|"
            r"every\s+)*(?:previous|prior|above|earlier|preceding|former|original|existing|"
            r"other|system)?\s*(?:instructions?|rules?|prompts?|guidelines?|directives?|"
            r"messages?|context|constraints?|safeguards?|everything)",
            _I,
        ),
        "tells the agent to ignore its instructions",
    ),
    (
        # "your original instructions are void", "everything above this line is obsolete":
        # the instructions of the agent (qualified so: not "the old parking rules") annulled
        gated(
            r"\b(?:(?:your|the\s+(?:previous|prior|earlier|original|initial|above|system))\s+"
            r"(?:\w+\s+)?(?:instructions?|rules|directions|guidelines|directives|prompt|"
            r"programming|constraints)|(?:previous|prior|earlier|original|initial)\s+"
            r"(?:instructions?|directions|directives|prompts?)|everything\s+(?:above|before)"
            r"(?:\s+this\s+(?:line|message|point))?)\s+(?:is|are|as|were)\s+(?:now\s+|hereby\s+)?"
            r"(?:void|null|obsolete|invalid|cancell?ed|revoked|irrelevant|outdated|"
            r"no\s+longer\s+(?:valid|in\s+effect|relevant))\b",
            _I,
        ),
        "declares the agent's instructions void",
    ),
    (
        gated(r"\b(?:going\s+forward|in\s+(?:the\s+)?future|next\s+time)\s*,?\s+" + _AGENT, _I),
        "a standing order for future conversations",
    ),
    (
        gated(r"(?:^|[.!?;\n][^\S\n]*)(?:always|never)\s+[a-z]{3,}\b", _I),
        "an imperative sentence (“Always …” / “Never …”)",
    ),
    (
        gated(
            r"\b" + _AGENT + r"\s+(?:must|should|shall|have\s+to|has\s+to|needs?\s+to|"
            r"are\s+to|is\s+to|are\s+required\s+to|is\s+required\s+to|will\s+now|"
            r"ought\s+to|had\s+better)\b(?!\s+not\s+be\s+surprised)",
            _I,
        ),
        "an instruction addressed to the agent",
    ),
    (
        gated(
            r"\b(?:always|never)\s+(?:\w+\s+){0,2}?" + _VERB + r"\b[^.!?\n]{0,80}?"
            r"\bwhen(?:ever)?\s+(?:asked|someone|somebody|anyone|a\s+user|the\s+user|users?|"
            r"people|you|they|he|she)\b",
            _I,
        ),
        "an “always/never … when asked” rule",
    ),
    (
        gated(
            r"(?:^|[.!?:;\n][^\S\n]*|\"\s*)(?:always|never|do\s+not|don't|please|make\s+sure\s+to|"
            r"be\s+sure\s+to|remember\s+to)\s+" + _VERB + r"\b",
            _I,
        ),
        "an imperative sentence (an order, not an observation)",
    ),
    (
        gated(
            r"(?:^|[.!?:;\n][^\S\n]*)(?:reply|respond|answer|send|forward|recommend|share|tell|"
            r"direct|refer|link|promote|ignore|report)\s+(?:to\s+)?(?:every|all|any|each)\b",
            _I,
        ),
        "an imperative sentence (an order, not an observation)",
    ),
    (
        gated(
            r"(?:^|[.!?:;\n][^\S\n]*)" + _VERB + r"\s+(?:\w+\s+){0,3}?(?:to|with|at|via)\s+"
            r"(?:https?://|www\.|\S+@\S+|\+?\d)",
            _I,
        ),
        "an imperative sentence pointing somewhere",
    ),
    (
        # Addressed to the agent, not a topic: "prompt injection" or "jailbreak" alone is
        # what security people talk about; "reveal your system prompt" is an attack.
        gated(
            r"\b(?:(?:reveal|show|print|repeat|output|leak|share|display|dump|disclose|paste|"
            r"tell\s+(?:me|us))\s+(?:me\s+|us\s+)?(?:your|the)\s+(?:\w+\s+)?(?:system\s+prompt|"
            r"system\s+message|hidden\s+(?:prompt|instructions?|text)|initial\s+instructions|"
            r"instructions|configuration|prompt)|your\s+(?:system\s+prompt|system\s+message|"
            r"hidden\s+instructions?|instructions)|"
            # "developer mode on Jack's Android phone" is a device setting, not a jailbreak
            r"developer\s+mode(?!\s+(?:on|of|in|for)\s+(?:[\w']+\s+){0,3}?(?:phones?|android|"
            r"iphone|ipad|device|tablet|laptop|browser|chrome|firefox|pixel|samsung|tv|router|"
            r"console|xbox|playstation|windows|mac|car)\b)|DAN\s+mode|"
            r"do\s+anything\s+now|(?:enable|enter|activate|switch\s+to|unlock)\s+"
            r"(?:\w+\s+)?jailbr[eo]a?k\w*|jailbr[eo]a?k\w*\s+mode|"
            r"(?:new|updated)\s+instructions?\s*(?:follow|below|:)|"
            r"your\s+(?:new\s+|real\s+|true\s+)?(?:role|persona|task|objective|programming))\b",
            _I,
        ),
        "talks about the agent's prompt or role",
    ),
    (
        gated(
            r"\b(?:act\s+as|pretend\s+(?:to\s+be|you\s+are)|role-?play\s+as|you\s+are\s+now|"
            r"you\s+are\s+no\s+longer|from\s+here\s+on\s+you\s+are|simulate\s+being)\b",
            _I,
        ),
        _ROLE_REASON,
    ),
    (
        gated(
            r"<\|[a-z_]{2,30}\|>|<\|?/?(?:system|user|assistant|im_start|im_end|endoftext|"
            r"eot_id|start_header_id|end_header_id|begin_of_text)\|?>|\[/?INST\]|<<\s*/?SYS\s*>>|"
            r"</?s>|<start_of_turn>|<end_of_turn>|^[^\S\n]*#{2,}[^\S\n]*(?:system|instruction|response)\b|"
            r"(?:^|\n)[^\S\n]*(?:system|assistant)\s*:\s",
            _I | re.MULTILINE,
        ),
        "a chat-template or role token",
    ),
    (
        gated(
            r"</?(?:tool_call|tool_use|function_call|function|invoke|tool)\b[^>]*>|"
            r"\"(?:function_call|tool_calls?|arguments|tool_name)\"\s*:|"
            r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\"",
            _I,
        ),
        "tool-call syntax",
    ),
    (
        gated(
            r"```|\b(?:curl|wget)\s+-?\S|\brm\s+-[rf]+\b|\bsudo\s+\w|\|\s*(?:ba|z)?sh\b|"
            r"\$\([^)]*\)|\beval\s*\(|\bexec\s*\(|\bos\.system\b|\bsubprocess\.|"
            r"\bimport\s+(?:os|subprocess|socket|requests)\b|\bpowershell\b|\bchmod\s+\+x\b|"
            r";\s*drop\s+table\b|\bnc\s+-[elvp]+\b|\bbase64\s+-d\b|<script\b|javascript:",
            _I,
        ),
        "code or shell syntax",
    ),
)


# A third-person subject right before a role phrase: "attackers pretend to be …",
# "kids pretend they are …", "the actor who acts as …".
_THEY = gated(
    r"\b(?:they|he|she|we|i|who|that|people|kids|children|[a-z]+(?:ers|ists|ors|ians))\s+"
    r"(?:often\s+|sometimes\s+|usually\s+|may\s+|can\s+|will\s+|would\s+|often\s+)?$|"
    r"\b(?:was|were|been|is|are)\s+(?:asked|told|instructed|prompted|made)\s+to\s+$",
    _I,
)
_NEGATED = gated(r"\b(?:never|not|n't|no\s+longer|refuses?\s+to)\s*(?:\w+\s+)?$", _I)


def instruction_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _INSTRUCTION_RULES:
        for m in pattern.finditer(text):
            start, end = m.span()
            if reason == _ROLE_REASON and _NEGATED.search(text[max(0, start - 24) : start]):
                continue  # "I never pretend to be one" declines the role
            if reason == _ROLE_REASON and _THEY.search(text[max(0, start - 32) : start]):
                continue  # "attackers pretend to be the IT department": others' roles
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
# "(dot)", "[dot]" or " dot " between the labels of a spelled-out address. Every
# whitespace run is bounded: an unbounded one next to another could split a long blank
# stretch in every way (quadratic), and an address is never spelled with more.
_SPELLED_DOT = r"(?:\s{0,5}\(dot\)\s{0,5}|\s{0,5}\[dot\]\s{0,5}|\s{1,5}dot\s{1,5})"
_LINK_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (
        # bounded, possessive runs: unbounded ones rescanned the rest of the text from every "!["
        gated(r"!\[[^\]\n]{0,500}+\]\([^)\s]{1,2000}+[^)]{0,2000}+\)", _I),
        "a markdown image (can leak data on load)",
    ),
    (
        gated(r"\b(?:https?|hxxps?|ftp|file|data|ipfs)\s*(?::|\[:\])\s*//\S+", _I),
        "a link",
    ),
    (gated(r"\bwww\s*(?:\.|\[\.\]|\(\.\))\s*[\w-]+\S*", _I), "a link"),
    (
        gated(
            r"\b[\w.+-]{1,64}@[\w-]{1,63}(?:(?:\.|\[\.\]|\(\.\))[\w-]{1,63}){0,8}"
            r"(?:\.|\[\.\]|\(\.\))"
            r"(?:" + _TLDS + r")\b",
            _I,
        ),
        "an e-mail address",
    ),
    (
        # obfuscated: "name [at] host.com", "name (at) host (dot) com", "name at host dot com"
        gated(
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
        gated(
            r"\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.|\[\.\]|\(\.\))){1,8}(?:" + _TLDS + r")"
            r"(?![\w-])(?:/\S*)?",
            _I,
        ),
        "a domain name",
    ),
    (
        gated(
            r"\b(?:t\.me|wa\.me|discord\.gg|bit\.ly|tinyurl)\b|"
            r"\b(?:telegram|whatsapp|signal|discord|wechat|kik|snapchat)\b[^.\n]{0,30}?@\w{3,}",
            _I,
        ),
        "a messaging contact",
    ),
    (
        # "@leakbot", "DM @helpdesk_real": a handle is a contact point like an address;
        # an e-mail address is not one (its "@" follows a word character)
        gated(r"(?<![\w.@+-])@[A-Za-z_][A-Za-z0-9_.]{2,31}(?<!\.)(?![\w@])"),
        "a messaging handle",
    ),
    (
        gated(r"\b(?:discord|telegram|signal|skype|kik)\b[^.\n]{0,20}?\b\w{3,32}#\d{4}\b", _I),
        "a messaging handle",
    ),
    (
        # "Find me on Signal, username maria.91", "WeChat ID: lm_8823", "Skype me: live:.cid…":
        # a messaging app, then an id-like name (with a digit, "_" or "."; a plain word is
        # no handle: "the line: busy")
        gated(
            r"\b(?:signal|wechat|weixin|line|skype|telegram|tg|whatsapp|discord|threema|kik|"
            r"snapchat|snap|instagram|insta|ig|viber|qq|icq|matrix|session|tiktok|wire)\b"
            r"[^\n.]{0,25}?(?:\bid\b|\busername\b|\buser\s*name\b|\bhandle\b|\bnick\w*|:)"
            r"\s*(?:is\s+|[:=]\s*)?(?:live:)?[\w.:-]*?[\d_.][\w.:-]*[a-z0-9]",
            _I,
        ),
        "a messaging handle",
    ),
    (
        # "example dot com slash promo": an address spelled out (not "the dot com bubble")
        gated(
            r"(?<![\w-])(?!(?:the|a|an|this|that|of)\b)[\w-]{2,63}"
            r"(?:" + _SPELLED_DOT + r"[\w-]{1,63}){0,3}"
            r"" + _SPELLED_DOT + r"(?:" + _TLDS + r")\b"
            r"(?!\s+(?:bubble|era|boom|crash|companies|company|startups?))"
            r"(?:\s{1,5}slash\s{1,5}[\w-]{1,63})*",
            _I,
        ),
        "a link spelled out",
    ),
    (
        gated(
            r"(?<![\w+])(?:\+|00)\d{1,3}[\s.-]?\(?\d{1,4}\)?(?:[\s.-]?\d{2,4}){2,4}(?!\w)|"
            r"(?<![\w+-])\(\d{3}\)\s?\d{3}[\s.-]\d{4}(?!\w)|"
            r"(?<![\w+-])\d{3}[.-]\d{3}[.-]\d{4}(?![\w-])|"
            r"(?<![\w+-])0\d{2,4}[\s-]\d{3,4}[\s-]?\d{3,4}(?![\w-])",
        ),
        "a phone number",
    ),
    (
        gated(
            r"\b(?:call|text|phone|ring|whatsapp|sms|tel|mobile|cell)\b[^.\n]{0,20}?"
            r"(?<!\d)\d(?:[\s.-]?\d){7,13}(?!\d)",
            _I,
        ),
        "a phone number",
    ),
)

# The phone-number rules, shared with the personal rule (a number reaches a person).
PHONE_PATTERNS = tuple(pattern for pattern, reason in _LINK_RULES if reason == "a phone number")
_DOMAIN_LIKE_WORDS = gated(r"^(?:e\.g|i\.e|a\.m|p\.m|u\.s|etc)\b", _I)
_SUBJECT_FOLLOWS = gated(r"(?:'s|\u2019s)?[^\S\n]+\w")
_CLOSING = "\"')]\u201d\u2019"
_SENTENCE_ENDS = ".!?\u3002\uff01\uff1f"  # also 。！？
# What may stand between a sentence's start and its first word: spaces, a list item's
# mark, an opening quotation mark or bracket, ¿ ¡, and invisible marks (direction marks
# and embeddings, a BOM, a zero-width space); the line break is told apart after.
_OPENERS = gated(
    "[\\s\"'(\\[*\u2022\u2013\u2014\u00ab\u00bf\u00a1\u201c\u2018\u300c\u300e\uff08\\-"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]*\\Z"
)


def names_a_person(text: str, start: int, end: int) -> bool:
    """An ``@handle`` that opens the text or a sentence, followed by a word: the subject
    of a memory about that person ("@kel prefers short answers", "@omar_k's team ..."),
    not a contact point.

    An agent on a social platform knows its users by their handles, and its memories
    about them start with the handle (in 147 of 161 memories that named a handle, in a
    set of ordinary memories written for the agent); flagged as "a messaging handle", each
    of them was a false alarm. A handle pushed as a contact point sits where a
    destination does, after a verb or a preposition ("send it to @x", "DM @x", "канал
    @x", "Contact: @x"), which this leaves flagged in every language.
    """
    if _SUBJECT_FOLLOWS.match(text, end) is None:
        return False
    window = max(0, start - 64)  # bounded: a text of many handles stays linear
    before = text[window:start]
    lead = _OPENERS.search(before)
    if lead is not None:
        opened, before = before[lead.start() :], before[: lead.start()]
        if "\n" in opened and not before.rstrip().endswith((":", "\uff1a")):
            return True  # a line of its own (a list of memories), not "Contact:\n@x"
    before = before.rstrip().rstrip(_CLOSING)
    return before[-1] in _SENTENCE_ENDS if before else window == 0


def _next_handle_start(text: str, end: int) -> int:
    """Where the handle after "and" following the one ending at ``end`` starts (or -1)."""
    m = _NEXT_HANDLE.match(text, end, min(len(text), end + 12))
    return m.end() - 1 if m else -1


_NEXT_HANDLE = gated(r"[^\S\n]+\S{1,3}[^\S\n]+@")


def link_hits(text: str) -> Iterator[Hit]:
    previous_person = -1
    for pattern, reason in _LINK_RULES:
        for m in pattern.finditer(text):
            if reason == "a domain name" and _DOMAIN_LIKE_WORDS.match(m.group(0)):
                continue
            if reason == "a phone number" and looks_like_date(m.group(0)):
                continue
            if reason == "a messaging handle" and m.group(0).startswith("@"):
                person = names_a_person(text, m.start(), m.end()) or names_a_person_inside(
                    text, m.start(), m.end(), previous_person == m.start()
                )
                if person:
                    previous_person = _next_handle_start(text, m.end())
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


def looks_like_date(s: str) -> bool:
    return bool(
        re.fullmatch(r"\s*\d{4}[-./]\d{1,2}[-./]\d{1,2}\s*|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}", s)
    )


# -- credentials and secrets ----------------------------------------------------------------

_SECRET_RULES: tuple[tuple[GatedPattern, str], ...] = (
    (gated(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{16,}"), "an API key (sk-…)"),
    (gated(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), "a payment API key"),
    (gated(r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"), "a GitHub token"),
    (gated(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key"),
    (gated(r"\bAIza[0-9A-Za-z_-]{30,}"), "a Google API key"),
    (gated(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (gated(r"\bglpat-[A-Za-z0-9_-]{16,}"), "a GitLab token"),
    (gated(r"\bhf_[A-Za-z0-9]{20,}"), "a Hugging Face token"),
    (gated(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "a JWT"),
    (gated(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (
        # "the door code for the flat is 7391", "OTP code 552 901", "Türcode 4711"
        gated(
            r"\b(?:(?:door|gate|alarm|entry|access|safe|lock|garage|building|wi-?fi|otp|"
            r"verification|security|2fa|one-time|sms|login|confirmation|unlock|bank)\s+"
            r"(?:code|pin|passcode|number)|pin(?:\s+(?:code|number))?|passcode|otp|"
            r"(?:safe|lock|padlock|locker)\s+(?:code|combination|combo)|combination|key\s*code|"
            r"türcode|pin-?code|zugangscode|code\s+(?:de\s+la\s+porte|d'accès|pin)|"
            r"código(?:\s+de\s+(?:acceso|la\s+puerta|verificación))?|codice(?:\s+(?:pin|"
            r"d'accesso|del\s+portone))?|код(?:\s+(?:от\s+двери|доступа|подтверждения))?|"
            r"kapı\s+kodu|deurcode|pinkod|portkod|kode\s+(?:pintu|otp|akses)|暗证号码|驗證碼|"
            r"验证码|暗証番号)\b"
            # the digits right after it, or after a copula or ":" ("… for the flat is 7391"),
            # not a year further on ("PIN was stolen at an ATM in 2019")
            r"(?:[^.\n\d]{0,30}?(?:\b(?:is|was|are|lautet|ist|est|es|è|é|je|jest|är|adalah|"
            r"là|это)\b|[:=]|是|は)\s*|\s*)"
            r"(?<![\d.,])\d(?:[ -]?\d){3,9}(?![\d.,]\d)",
            _I,
        ),
        "a code or PIN given in the text",
    ),
    (
        # "login for the admin panel is root / hunter2": a user name and a password
        gated(
            r"\b(?:login|log-in|user(?:name)?|credentials?|admin|account)\b[^.\n]{0,40}?"
            r"(?<![\w/])[\w.@-]{2,32}\s*/\s*(?=[^\s/]*\d)[^\s/]{4,}",
            _I,
        ),
        "a user name and password",
    ),
    (
        gated(
            r"\b(?:password|passwd|passcode|pwd|pin|api[\s_-]?key|secret(?:[\s_-]?key)?|"
            r"access[\s_-]?token|auth[\s_-]?token|bearer|token|2fa\s+code|otp|"
            r"recovery\s+(?:code|phrase)|seed\s+phrase|mnemonic)"
            r"(?:\s+(?:is|was|=|:)|\s*[:=])\s*[\"'`]?[^\s\"'`]{4,}",
            _I,
        ),
        "a password or key given in the text",
    ),
)

_GIVEN = "a password or key given in the text"
# A plain word after "password is" that says where or how it is, not what it is.
_NOT_A_VALUE = gated(
    r"(?:is|was|=|:)\s*[\"'`]?(?:[a-z]+(?:ed|ing|ly)|the|a|an|not|never|now|also|still|"
    r"required|optional|secret|shared|written|hidden|empty|blank|weak|strong|long|short|too|"
    r"very|easy|hard|correct|wrong|incorrect|case|on|in|at|for|stored|saved|printed|taped|"
    r"same|different|known|unknown|available|expired|valid|invalid|sent|kept|stolen|taken|"
    r"lost|broken|forgotten|given|written|reused|leaked|compromised|wrong)$",
    _I,
)
_TOKEN = gated(r"[A-Za-z0-9+/_=-]{24,}")


def shannon_entropy(s: str) -> float:
    """Bits per character of ``s`` (uniform over 64 symbols: 6.0; English words: ~4)."""
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def secret_hits(text: str) -> Iterator[Hit]:
    for pattern, reason in _SECRET_RULES:
        for m in pattern.finditer(text):
            if reason == _GIVEN and _NOT_A_VALUE.search(m.group(0)):
                continue  # "the Wi-Fi password is printed at the desk": where, not what
            yield m.start(), m.end(), reason
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if decoded_base64(token, min_len=24) is not None:
            continue  # a base64 blob of text: the hidden-text rule reports it
        has_digit = any(ch.isdigit() for ch in token)
        has_alpha = any(ch.isalpha() for ch in token)
        if not (has_digit and has_alpha):
            continue
        if re.fullmatch(r"[0-9a-fA-F]{32,}", token) or shannon_entropy(token) >= 3.7:
            yield m.start(), m.end(), "a long random-looking string (a key or token?)"


# (personal identifiers: :mod:`curator.core.flag_personal`)

# -- hidden text ----------------------------------------------------------------------------

_ZERO_WIDTH = gated("[\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad\u034f]+")
_BIDI = gated("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]+")
_TAGS = gated("[\U000e0000-\U000e007f]+")
_PRIVATE = gated("[\ue000-\uf8ff\U000f0000-\U000ffffd]+")
# Drawn as nothing by every renderer, assigned to nothing yet: only a carrier of hidden data.
_UNASSIGNED_IGNORABLE = gated(
    "[\u2065\ufff0-\ufff8\ufffc\U000e0080-\U000e00ff\U000e01f0-\U000e0fff]+"
)
# One variation selector picks the look of the character before it (an emoji's colour);
# a run of them carries bytes (one selector each) that nothing shows.
_SELECTOR_RUN = gated("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
# Letters drawn as empty space: a run of them pads a line so that what follows falls past
# a list's cut, or makes a text look empty. A blank braille cell between braille cells is
# a space in braille.
_BLANK_LETTERS = gated("[\u115f\u1160\u3164\uffa0\u2800]+")
_BRAILLE = frozenset(chr(c) for c in range(0x2801, 0x2900))
_WORD = gated(r"\w+", re.UNICODE)
_BASE64 = gated(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{14,}={0,2}(?![A-Za-z0-9+/=])")


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


_JOINERS = "\u200c\u200d"


def _joins_letters(text: str, m: re.Match[str]) -> bool:
    """One ZWNJ/ZWJ that is part of the writing, not hidden: between two letters (or marks)
    of a script that is not Latin, Cyrillic or Greek (Persian "می‌رود", Urdu, Hindi), or
    a ZWJ inside an emoji sequence (👨‍👩‍👧). Those scripts and emoji need it to be
    spelled right; between Latin letters it only hides a word from a filter."""
    if len(m.group(0)) != 1 or m.group(0) not in _JOINERS or m.start() == 0:
        return False
    if m.end() >= len(text):
        return False
    before, after = text[m.start() - 1], text[m.end()]
    if m.group(0) == "\u200d" and _emoji(before) and _emoji(after):
        return True
    return _joining_script(before) and _joining_script(after)


def _emoji(ch: str) -> bool:
    return unicodedata.category(ch) == "So" or ch == "\ufe0f" or 0x1F3FB <= ord(ch) <= 0x1F3FF


def _joining_script(ch: str) -> bool:
    if ch.isascii() or not (ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc")):
        return False
    return _script(ch) == "OTHER" or unicodedata.category(ch) in ("Mn", "Mc")


def hidden_hits(text: str) -> Iterator[Hit]:
    for m in _ZERO_WIDTH.finditer(text):
        if not _joins_letters(text, m):
            yield m.start(), m.end(), "invisible zero-width characters"
    for m in _BIDI.finditer(text):
        yield m.start(), m.end(), "bidirectional override characters (text shown out of order)"
    for m in _TAGS.finditer(text):
        yield m.start(), m.end(), "invisible Unicode tag characters (hidden ASCII)"
    for m in _PRIVATE.finditer(text):
        yield m.start(), m.end(), "private-use characters"
    for m in _UNASSIGNED_IGNORABLE.finditer(text):
        yield m.start(), m.end(), "invisible unassigned characters (hidden data)"
    for m in _SELECTOR_RUN.finditer(text):
        yield m.start(), m.end(), "a run of variation selectors (hidden data)"
    for m in _BLANK_LETTERS.finditer(text):
        s, e = m.span()
        if not (m.group() == "\u2800" * (e - s) and _between_braille(text, s, e)):
            yield s, e, "blank letters (shown as empty space)"
    for m in () if text.isascii() else _WORD.finditer(text):
        # Latin next to kana, CJK or Hangul ("SNSに", "TRPG에서") is ordinary mixed
        # writing: only letters that can pass for each other (Latin, Cyrillic, Greek) mix.
        # A word of ASCII is of one alphabet (no look-alike is ASCII).
        if m.group(0).isascii():
            continue
        scripts = {_script(ch) for ch in m.group(0)} - {"", "OTHER"}
        if "LOOKALIKE" in scripts or (len(scripts) > 1 and "LATIN" in scripts):
            yield m.start(), m.end(), "a word mixing alphabets (look-alike letters)"
    for m in _BASE64.finditer(text):
        token = m.group(0)
        if decoded_base64(token) is not None:
            yield m.start(), m.end(), "a base64 blob that decodes to text"
        elif len(token) >= 48 and shannon_entropy(token) >= 4.5:
            yield m.start(), m.end(), "a base64-like blob"


def _between_braille(text: str, start: int, end: int) -> bool:
    return start > 0 and end < len(text) and {text[start - 1], text[end]} <= _BRAILLE


def control_hits(text: str) -> Iterator[Hit]:
    """C0/C1 control characters (ESC sequences hide or erase text on a terminal, NUL cuts it).

    Intake refuses them (:mod:`curator.core.textsafety`); this flags what a database
    written before that rule still holds, so the reviewer and ``curator audit`` see it.
    """
    from curator.core.textsafety import CONTROLS, control_name

    for m in CONTROLS.finditer(text):
        yield m.start(), m.end(), f"a control character {control_name(m.group())} (hides text)"
