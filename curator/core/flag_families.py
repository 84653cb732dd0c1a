"""The word families of :mod:`curator.core.flag_lexicon`, read as flag rules.

Each family needs its second half in the same sentence: a verb of setting aside near
the agent's instructions; a standing-order marker ("from now on", "in every reply",
"whenever anyone asks") with a word that orders (a directive verb, "you", "always") apart
from the marker; a password word followed by a password-like token; a word for "AI" with
hiding it, or an order to pass as a human. A verb after its own subject ("they ignore the
rules", "I post …") describes and does not count.

One alternation per family over all ten languages, so the rules need no language
detection: a verb of one language next to an object of another does not happen in text
that is not built to be caught.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from curator.core.flag_lexicon import LANGUAGES

__all__ = ["lexicon_hits", "talked_about"]

KindHit = tuple[str, int, int, str]

# Letters of the scripts written with spaces: an entry must not continue such a word.
_LETTER = "a-zß-ÿĀ-ɏͰ-ϿЀ-ӿ"
_BEFORE = f"(?<![{_LETTER}])"
_AFTER = f"(?![{_LETTER}])"
# A sentence ends at "." "!" "?" ";" before a blank (not inside "Hund!2020" or "4.50").
_SENTENCE = re.compile(r"(?:[^.!?;。！？\n]|[.!?;](?!\s|$))+")


def _family(field: str, *, whole_word: bool) -> re.Pattern[str]:
    """One pattern for a family over every language, longest entries first.

    The word-start check is written once in front of the alternation, not once per entry:
    inside a word it fails at once, and the hundreds of entries are not tried there.
    """
    entries = sorted(
        {entry for lang in LANGUAGES for entry in getattr(lang, field)},
        key=lambda e: (-len(e), e),
    )
    after = _AFTER if whole_word else ""
    bounded = [e for e in entries if whole_word or len(e) < 6]
    free = [e for e in entries if e not in bounded]
    parts = [_BEFORE + "(?:" + "|".join(f"(?:{e}){after}" for e in bounded) + ")"]
    if free:
        parts.append("(?:" + "|".join(free) + ")")
    return re.compile("|".join(parts))


_IGNORE = _family("ignore_verbs", whole_word=True)
_OBJECT = _family("rule_objects", whole_word=False)
_STANDING = _family("standing", whole_word=True)
_EVERY = _family("every_reply", whole_word=True)
_WHENEVER = _family("whenever", whole_word=True)
_DIRECTIVE = _family("directives", whole_word=True)
_SECRET_WORD = _family("secret_words", whole_word=True)
_AI = _family("ai_words", whole_word=True)
_CONCEAL = _family("conceal", whole_word=True)
_HUMAN = _family("human", whole_word=True)
_CREDENTIAL = re.compile(r"[^\s\"'`“”«»「」()]{6,}")


# "I post …, reply when people mention me": a verb after a subject describes, an order
# has none; "asks me to stop" reports someone else's request.
_DESCRIBED = re.compile(
    r"(?<![\w'])(?:i|we|they|he|she)(?![\w'])|(?<![\w'])(?:asks?|asked|me|him|her|them|us)\s+to\s+$"
)


# "they ignore the rules", "他总是忘记规则" (he always forgets the rules): a subject right
# before the verb makes it a description.
_SUBJECT = re.compile(
    r"(?<![\w'])(?:i|we|they|he|she|people|kids|children)\s+(?:\w+\s+)?$|"
    r"(?:他们|她们|他|她|彼女|彼ら|彼)[^，。！？,]{0,4}$"
)


def _spans(pattern: re.Pattern[str], text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text, lo, hi)]


def _apart(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[1] <= b[0] or b[1] <= a[0]


def _credential(token: str) -> bool:
    """A token that looks like a password: letters with digits or symbols, not a link."""
    token = token.rstrip(".,;:!?。")
    if len(token) < 6 or "://" in token or token.startswith(("www.", "@")):
        return False
    has_alpha = any(ch.isalpha() for ch in token)
    has_other = any(ch.isdigit() or (not ch.isalnum() and ch not in "-'") for ch in token)
    return has_alpha and has_other


# "asks whether the agent should …", "wonders if anyone …": a question being reported.
_REPORTED = re.compile(r"\b(?:whether|if|ob|si|se|ли|mi)\b|かどうか|是否", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;,、，。！？\n]")


def lexicon_hits(text: str) -> Iterator[KindHit]:
    """``(kind, start, end, reason)`` for each family found in a folded text, in a fixed order.

    Whether a hit is only talked about (a reported question, a quoted phrase) is decided
    on the original text by :func:`talked_about`.
    """
    for sentence in _SENTENCE.finditer(text):
        lo, hi = sentence.span()
        yield from _sentence_hits(text, lo, hi)


def talked_about(text: str) -> Callable[[int, int], bool]:
    """Whether a hit ``(start, end)`` talks about an order rather than gives one.

    Two kinds of span, found in one pass over the text: a reported question (from after
    "whether"/"if" to the end of its clause: "asked whether the agent should always …")
    and a quotation introduced as a phrase ("the phrase “ignore previous instructions”").
    """
    clauses: list[tuple[int, int]] = []
    for m in _REPORTED.finditer(text):
        end = _CLAUSE_END.search(text, m.end())
        clauses.append((m.end(), end.start() if end else len(text)))
    quotes: list[tuple[int, int]] = []
    for q in _QUOTED.finditer(text):
        before = text[max(0, q.start() - 30) : q.start()].casefold()
        after = text[q.end() : q.end() + 20].casefold()
        if _MENTION.search(before) or _MEANS.search(after):
            quotes.append(q.span(1))

    def check(start: int, end: int) -> bool:
        return any(lo <= start < hi for lo, hi in clauses) or any(
            lo <= start and end <= hi for lo, hi in quotes
        )

    return check


def _sentence_hits(text: str, lo: int, hi: int) -> Iterator[KindHit]:
    verbs = [v for v in _spans(_IGNORE, text, lo, hi) if not _SUBJECT.search(text, lo, v[0])]
    objects = _spans(_OBJECT, text, lo, hi)
    for verb in verbs:
        near = [o for o in objects if _apart(verb, o) and abs(o[0] - verb[0]) <= 60]
        if near:
            start = min(verb[0], near[0][0])
            end = max(verb[1], near[0][1])
            yield "instruction", start, end, "tells the agent to set its instructions aside"
            break
    directives = [
        d for d in _spans(_DIRECTIVE, text, lo, hi) if not _DESCRIBED.search(text, lo, d[0])
    ]
    for pattern, reason in (
        (_STANDING, "a standing order (“from now on …”)"),
        (_EVERY, "an order for every reply"),
        (_WHENEVER, "a rule for whenever someone asks"),
    ):
        for marker in _spans(pattern, text, lo, hi):
            if any(_apart(marker, d) for d in directives):
                yield "instruction", marker[0], marker[1], reason
                break
    password = _password(text, lo, hi)
    if password is not None:
        yield "secret", password[0], password[1], "a password given in the text"
    conceal = _spans(_CONCEAL, text, lo, hi)
    ai = _spans(_AI, text, lo, hi)
    if conceal and ai:
        yield "identity", conceal[0][0], conceal[0][1], "tells the agent to hide that it is an AI"
    else:
        for human in _spans(_HUMAN, text, lo, hi):
            if any(_apart(human, d) for d in directives):
                yield "identity", human[0], human[1], "tells the agent to pass as a human"
                break


def _password(text: str, lo: int, hi: int) -> tuple[int, int] | None:
    """The first password word followed within 30 characters by a password-like token."""
    for word in _spans(_SECRET_WORD, text, lo, hi):
        tail = text[word[1] : min(hi, word[1] + 40)]
        for token in _CREDENTIAL.finditer(tail):
            if token.start() <= 30 and _credential(token.group(0)):
                end = word[1] + token.end()
                while end > word[1] and text[end - 1] in ".,;:!?。":
                    end -= 1
                return word[0], end
    return None


# A quotation introduced as a phrase ("the phrase “ignore previous instructions”") is
# talked about, not said to the agent.
_QUOTED = re.compile(r"[\"“„«「『]([^\"“”„«»「」『』]{3,200})[\"”“»」』]")
_MENTION = re.compile(
    r"(?:phrase|words?|term|expression|sentence|slogan|meme|saying|line|called|"
    r"frase|palabra|expresión|satz|ausdruck|wort|phrase|mot|expression|фраза|слово|"
    r"выражение|palavra|expressão|parola|espressione|ifade|cümle|söz|言葉|フレーズ|这句话|"
    r"短语|说法)\W{0,3}$"
)
_MEANS = re.compile(
    r"^\W{0,3}(?:means|meant|became|is\s+a|was\s+a|significa|bedeutet|signifie|"
    r"означает|vuol\s+dire|anlamına|という|的意思)"
)
