"""The word families of :mod:`curator.core.flag_lexicon`, read as flag rules.

Each family needs its second half in the same sentence: a verb of setting aside near
the agent's instructions; a standing-order marker ("from now on", "in every reply",
"whenever anyone asks") with a word that orders (a directive verb, "you", "always") apart
from the marker; a password word followed by a password-like token; a word for "AI" with
hiding it, or an order to pass as a human. A verb after its own subject ("they ignore the
rules", "I post …") describes and does not count.

The intent families of :mod:`curator.core.flag_lexicon_intents` are read the same way:
instructions declared void (with a marker that they are the agent's own), a persona, a
verb that moves private data at the start of its clause, an amended identity.

One alternation per family over all eighteen languages, so the rules need no language
detection: a verb of one language next to an object of another does not happen in text
that is not built to be caught. Where short words of two languages collide (the Turkish
"senin" is the Indonesian "Monday"; the German "du" is the French "of the"), a marker is
paired only with a directive of its own language, or English for mixed texts.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from curator.core.flag_alternation import kept_regrouped
from curator.core.flag_context import colon_ends_clause, quote_explained
from curator.core.flag_grants import describes_a_habit as habit
from curator.core.flag_lexicon import LANGUAGES
from curator.core.flag_lexicon_intents import INTENTS
from curator.core.regex_gate import GatedPattern, gated
from curator.core.textmeasure import HANGUL, UNSPACED

__all__ = ["lexicon_hits", "names_a_password", "password_hits", "talked_about"]

KindHit = tuple[str, int, int, str]

# Letters of the scripts written with spaces: an entry must not continue such a word.
_LETTER = "a-zß-ÿĀ-ɏͰ-ϿЀ-ӿḀ-ỿ"
_BEFORE = f"(?<![{_LETTER}])"
_AFTER = f"(?![{_LETTER}])"
# A sentence ends at "." "!" "?" ";" before a blank (not inside "Hund!2020" or "4.50").
_SENTENCE = gated(r"(?:[^.!?;。！？।\n]|[.!?;](?!\s|$))+")


def _family(
    field: str, *, whole_word: bool, table: Sequence[object] = LANGUAGES, stems: bool = False
) -> GatedPattern:
    """One pattern for a family over every language: :func:`_family_listed` regrouped by
    first character (:func:`curator.core.flag_alternation.kept_regrouped`), which finds the
    same matches but rejects a position where no entry can start (a blank, a digit) on one
    test and tries one group of entries, not hundreds, where one can."""
    bounded, free, after = _family_parts(field, whole_word=whole_word, table=table, stems=stems)
    source = kept_regrouped(bounded, free, _BEFORE, after)
    if source is None:
        return _family_listed(field, whole_word=whole_word, table=table, stems=stems)
    return gated(source)


def _family_parts(
    field: str, *, whole_word: bool, table: Sequence[object], stems: bool
) -> tuple[list[str], list[str], str]:
    """A family's entries, longest first: those checked at a word start, those that may
    start inside a word, and the word-end check behind the first."""
    entries = sorted(
        {entry for lang in table for entry in getattr(lang, field)},
        key=lambda e: (-len(e), e),
    )
    after = _AFTER if whole_word and not stems else ""
    bounded = [e for e in entries if whole_word or stems or len(e) < 6]
    free = [e for e in entries if e not in bounded]
    return bounded, free, after


def _family_listed(
    field: str, *, whole_word: bool, table: Sequence[object] = LANGUAGES, stems: bool = False
) -> GatedPattern:
    """A family as one alternation of its entries, longest first: the reference
    :func:`_family` is tested against (and what it falls back to).

    The word-start check is written once in front of the alternation, not once per entry:
    inside a word it fails at once, and the hundreds of entries are not tried there. The
    word-end check is written once behind it: a failing check backtracks into the
    alternation and tries the next entry, exactly as a check behind each entry would, but
    the letter class is compiled once instead of hundreds of times (a tenth of the time).
    ``stems``: entries start a word but may end inside one ("anulad" for "anuladas").
    """
    bounded, free, after = _family_parts(field, whole_word=whole_word, table=table, stems=stems)
    parts = [_BEFORE + "(?:" + "|".join(f"(?:{e})" for e in bounded) + ")" + after]
    if free:
        parts.append("(?:" + "|".join(free) + ")")
    return gated("|".join(parts))


@dataclass(frozen=True)
class _Families:
    """Every family's pattern, compiled together on first use (see :func:`_families`)."""

    ignore: GatedPattern
    object: GatedPattern
    standing: GatedPattern
    every: GatedPattern
    whenever: GatedPattern
    directive: GatedPattern
    secret_word: GatedPattern
    ai: GatedPattern
    conceal: GatedPattern
    human: GatedPattern
    void: GatedPattern
    prior: GatedPattern
    setup: GatedPattern
    old: GatedPattern
    persona: GatedPattern
    send: GatedPattern
    private: GatedPattern
    amend: GatedPattern
    you: GatedPattern
    you_any: GatedPattern
    verb_final_send: GatedPattern


_BUILD_LOCK = threading.Lock()
_BUILT: list[_Families] = []


def _families() -> _Families:
    """The families' patterns, compiled once, on the first text read.

    Compiling the alternations of hundreds of entries in eighteen languages costs about
    a third of a second; done at import, every command that merely imports the flag
    modules (``curator review --help``, a review of a run with nothing left to flag) would
    pay it. The lock makes concurrent first readers (the window's worker threads) wait for
    one build instead of each compiling their own.
    """
    if _BUILT:
        return _BUILT[0]
    with _BUILD_LOCK:
        if not _BUILT:
            _BUILT.append(_build())
        return _BUILT[0]


def _build() -> _Families:
    """Every pattern of :class:`_Families`, compiled now (see :func:`_families`)."""
    you = _family("you", whole_word=True, table=INTENTS)
    # the listed form under IGNORECASE: regrouped by first character, "D" and "d" would
    # head two groups that both match at one position, out of the entries' order
    you_listed = _family_listed("you", whole_word=True, table=INTENTS)
    return _Families(
        ignore=_family("ignore_verbs", whole_word=True),
        object=_family("rule_objects", whole_word=False),
        standing=_family("standing", whole_word=True),
        every=_family("every_reply", whole_word=True),
        whenever=_family("whenever", whole_word=True),
        directive=_family("directives", whole_word=True),
        secret_word=_family("secret_words", whole_word=True),
        ai=_family("ai_words", whole_word=True),
        conceal=_family("conceal", whole_word=True),
        human=_family("human", whole_word=True),
        void=_family("void", whole_word=True, table=INTENTS, stems=True),
        prior=_family("prior", whole_word=False, table=INTENTS),
        setup=_family("setup", whole_word=True, table=INTENTS),
        old=_family("old", whole_word=True, table=INTENTS),
        persona=_family("persona", whole_word=True, table=INTENTS),
        send=_family("send", whole_word=True, table=INTENTS),
        private=_family("private", whole_word=False, table=INTENTS),
        amend=_family("amend", whole_word=True, table=INTENTS, stems=True),
        you=you,
        you_any=gated(you_listed.pattern, re.IGNORECASE),
        verb_final_send=gated(
            "|".join(f"(?:{e})" for lang in INTENTS if lang.code in _VERB_FINAL for e in lang.send)
        ),
    )


@lru_cache(maxsize=1)
def _narrative_by() -> dict[str, GatedPattern]:
    """Per language, a third-person subject after a standing-order marker (see
    :func:`_narrative`); compiled when a text first has such a marker, as few do."""
    return {
        lang.code: gated(f"{_BEFORE}(?:{'|'.join(lang.narrative)}){_AFTER}")
        for lang in INTENTS
        if lang.narrative
    }


@lru_cache(maxsize=1)
def _by_language() -> dict[str, dict[str, GatedPattern]]:
    """Each family of :data:`_BY_LANGUAGE_FIELDS`, per language (see :func:`_languages`):
    a hundred patterns, compiled when a text first has a standing-order marker."""
    return {
        field: {
            lang.code: gated("|".join(f"(?:{e})" for e in getattr(lang, field)))
            for lang in (INTENTS if field == "old" else LANGUAGES)
            if getattr(lang, field)
        }
        for field in _BY_LANGUAGE_FIELDS
    }


# A run without spaces or quotes; CJK punctuation ends it too, since those scripts put no
# space between words ("パスワードを忘れて、家族に聞く" holds no password: "、" is a comma).
_CREDENTIAL = gated(r"[^\s\"'`“”«»「」()\u3000-\u303f\uff01-\uff0f\uff1a-\uff1f]{6,}")


# "I post …, reply when people mention me": a verb after a subject describes, an order
# has none; "asks me to stop" reports someone else's request. Both are looked for in a
# bounded stretch before the word (_BACK characters, or one search per sentence), so a long
# sentence of many verbs is read in linear time.
_DESCRIBED = gated(r"(?<![\w'])(?:i|we|they|he|she)(?![\w'])")
_ASKED = gated(r"(?<![\w'])(?:asks?|asked|me|him|her|them|us)\s+to\s+$")
_BACK = 40


def _after_subject(text: str, lo: int, at: int) -> bool:
    return _SUBJECT.search(text, max(lo, at - _BACK), at) is not None


# "they ignore the rules", "他总是忘记规则" (he always forgets the rules): a subject right
# before the verb makes it a description.
_SUBJECT = gated(
    r"(?<![\w'])(?:i|we|they|he|she|people|kids|children)\s+(?:\w+\s+)?$|"
    r"(?:他们|她们|他|她|彼女|彼ら|彼)[^，。！？,]{0,4}$"
)


def _spans(pattern: GatedPattern, text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text, lo, hi)]


def _apart(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[1] <= b[0] or b[1] <= a[0]


# Scripts whose runs are prose, not password material: those written without spaces
# between words (as the quality gate counts them) and Hangul, whose words carry their
# punctuation ("잊어버려서,") although Korean puts spaces between them.
_PROSE_SCRIPT = gated(f"[{UNSPACED}{HANGUL}]")


def _credential(token: str) -> bool:
    """A token that looks like a password: letters with digits or symbols, not a link."""
    token = token.rstrip(".,;:!?。।")
    if len(token) < 6 or "://" in token or token.startswith(("www.", "@")):
        return False
    if "/" in token or re.search(r"\.[a-z]{2,}$", token, re.IGNORECASE):
        return False  # "verify-acc0unt-center.example/login" is an address, not a password
    has_alpha = any(ch.isalpha() for ch in token)
    # In scripts without spaces between words a run is a clause, and its commas are
    # commas ("密码,每次开会都要问前台" after folding), its emoji (a pictograph, its skin
    # tone, its joiner) are a chat's: there only digits and the other symbols count.
    prose = _PROSE_SCRIPT.search(token) is not None
    prose_only = ("P", "So", "Sk", "Cf")
    # vowel signs and other combining marks belong to the word ("नहीं"), not symbols
    has_other = any(
        ch.isdigit()
        or (
            not ch.isalnum()
            and ch not in "-'"
            and not unicodedata.category(ch).startswith("M")
            and not (prose and unicodedata.category(ch).startswith(prose_only))
        )
        for ch in token
    )
    return has_alpha and has_other


# "asks whether the agent should …", "wonders if anyone …": a question being reported.
_REPORTED = gated(r"\b(?:whether|if|ob|si|se|ли|mi)\b|かどうか|是否", re.IGNORECASE)
_CLAUSE_END = gated(r"[.!?;,:、，。！？：\n]")  # a colon only where it ends one (clause_end)


def lexicon_hits(text: str) -> Iterator[KindHit]:
    """``(kind, start, end, reason)`` for each family found in a folded text, in a fixed order.

    Whether a hit is only talked about (a reported question, a quoted phrase) is decided
    on the original text by :func:`talked_about`.
    """
    for sentence in _SENTENCE.finditer(text):
        lo, hi = sentence.span()
        yield from _sentence_hits(text, lo, hi)


def names_a_password(text: str) -> bool:
    """Whether a folded text has a password word at all (the rest is read only then)."""
    return _families().secret_word.search(text) is not None


def password_hits(text: str) -> Iterator[KindHit]:
    """Only the password family, for the fold that keeps digits and symbols as written."""
    for sentence in _SENTENCE.finditer(text):
        found = _password(text, *sentence.span())
        if found is not None:
            yield "secret", found[0], found[1], "a password given in the text"


def clause_end(text: str, start: int) -> int:
    """Where the clause going on at ``start`` ends (the text's length if it does not)."""
    for m in _CLAUSE_END.finditer(text, start):
        if m.group() not in ":：" or colon_ends_clause(text, m.start()):
            return m.start()
    return len(text)


def talked_about(text: str) -> Callable[[int, int], bool]:
    """Whether a hit ``(start, end)`` talks about an order rather than gives one.

    Two kinds of span, found in one pass over the text: a reported question (from after
    "whether"/"if" to the end of its clause: "asked whether the agent should always …")
    and a quotation introduced as a phrase ("the phrase “ignore previous instructions”").
    """
    f = _families()
    clauses: list[tuple[int, int]] = []
    for m in _REPORTED.finditer(text):
        clauses.append((m.end(), clause_end(text, m.end())))
    for m in _OPINION.finditer(text):
        end = _SENTENCE_END.search(text, m.end())
        clause = (m.end(), end.start() if end else len(text))
        if not f.you_any.search(text, *clause):
            clauses.append(clause)
    quotes: list[tuple[int, int]] = []
    for q in _QUOTED.finditer(text):
        before = text[max(0, q.start() - 30) : q.start()].casefold()
        after = text[q.end() : q.end() + 20].casefold()
        told = text[max(0, q.start() - 60) : q.start()]
        told = re.split(r"[.!?;:\n]", told)[-1]  # the quoting sentence, up to the quote
        if (
            _MENTION.search(before)
            or _MEANS.search(after)
            or _NARRATED.search(told)
            or quote_explained(text, *q.span())
        ):
            quotes.append(q.span())  # with its marks: a hit may start at the mark

    def check(start: int, end: int) -> bool:
        return any(lo <= start < hi for lo, hi in clauses) or any(
            lo <= start and end <= hi for lo, hi in quotes
        )

    return check


def _sentence_hits(text: str, lo: int, hi: int) -> Iterator[KindHit]:
    f = _families()
    verbs = [v for v in _spans(f.ignore, text, lo, hi) if not _after_subject(text, lo, v[0])]
    # a family is searched only where its spans can matter (the objects of a verb found,
    # the AI words beside a concealing verb): the hits are the same, the searches fewer
    objects = _spans(f.object, text, lo, hi) if verbs else []
    for verb in verbs:
        near = [o for o in objects if _apart(verb, o) and abs(o[0] - verb[0]) <= 60]
        if near:
            start = min(verb[0], near[0][0])
            end = max(verb[1], near[0][1])
            yield "instruction", start, end, "tells the agent to set its instructions aside"
            break
    found = [
        (_spans(pattern, text, lo, hi), field, reason)
        for pattern, field, reason in (
            (f.standing, "standing", "a standing order (“from now on …”)"),
            (f.every, "every_reply", "an order for every reply"),
            (f.whenever, "whenever", "a rule for whenever someone asks"),
        )
    ]
    markers = [span for spans, _, _ in found for span in spans]
    # the first subject of the sentence, not one inside a marker ("until I say otherwise")
    subject = next(
        (
            m.start()
            for m in _DESCRIBED.finditer(text, lo, hi)
            if not any(a <= m.start() < b for a, b in markers)
        ),
        hi,
    )
    directives = [
        d
        for d in _spans(f.directive, text, lo, hi)
        if not (subject < d[0] or _ASKED.search(text, max(lo, d[0] - _BACK), d[0]))
    ]
    narrative = _narrative(text, lo, hi) if markers else None
    for spans, field, reason in found:
        for marker in spans:
            assert narrative is not None  # there is a marker
            langs = _languages(field, text[marker[0] : marker[1]])
            if narrative(marker, langs) or (field == "whenever" and habit(text, marker[0])):
                continue
            if any(
                _apart(marker, d) and _paired(langs, _languages("directives", text[d[0] : d[1]]))
                for d in directives
            ):
                yield "instruction", marker[0], marker[1], reason
                break
    yield from _intent_hits(text, lo, hi)
    conceal = _spans(f.conceal, text, lo, hi)
    ai = _spans(f.ai, text, lo, hi) if conceal else []
    if conceal and ai:
        yield "identity", conceal[0][0], conceal[0][1], "tells the agent to hide that it is an AI"
    else:
        for human in _spans(f.human, text, lo, hi):
            if any(_apart(human, d) for d in directives):
                yield "identity", human[0], human[1], "tells the agent to pass as a human"
                break


_NOT_THE_PASSWORD = gated(
    r"[\s-]*(?:managers?|policy|policies|reset|hints?|fields?|strength|rules?|requirements?|"
    r"vaults?|generators?|hygiene|spraying|leaks?)\b"
)


def _password(text: str, lo: int, hi: int) -> tuple[int, int] | None:
    """The first password word followed within 45 characters by a password-like token."""
    f = _families()
    for word in _spans(f.secret_word, text, lo, hi):
        if _NOT_THE_PASSWORD.match(text, word[1], hi):
            continue  # "password manager", "password policy": a thing, not the password
        tail = text[word[1] : min(hi, word[1] + 60)]
        for token in _CREDENTIAL.finditer(tail):
            if token.start() <= 45 and _credential(token.group(0)):
                end = word[1] + token.end()
                while end > word[1] and text[end - 1] in ".,;:!?。":
                    end -= 1
                return word[0], end
    return None


# A quotation introduced as a phrase ("the phrase “ignore previous instructions”") is
# talked about, not said to the agent.
_QUOTED = gated(r"[\"“„«「『]([^\"“”„«»「」『』]{3,200})[\"”“»」』]")
_MENTION = gated(
    r"(?:phrase|made|typed|posted|tweeted|quoted|words?|term|expression|sentence|slogan|meme|saying|line|called|"
    r"frase|palabra|expresión|satz|ausdruck|wort|phrase|mot|expression|фраза|слово|"
    r"выражение|palavra|expressão|parola|espressione|ifade|cümle|söz|言葉|フレーズ|这句话|"
    r"短语|说法)\W{0,3}$"
)
_MEANS = gated(
    r"^\W{0,3}(?:means|meant|became|is\s+a|was\s+a|an?\s+(?:meme|joke|catchphrase|slogan|"
    r"trend|running\s+gag)|significa|bedeutet|signifie|"
    r"означает|vuol\s+dire|anlamına|という|的意思)"
)


# The families whose entries are also matched per language (see :func:`_languages`).
_BY_LANGUAGE_FIELDS = ("standing", "every_reply", "whenever", "directives", "old")


@lru_cache(maxsize=4096)
def _languages(field: str, entry: str) -> frozenset[str]:
    """The languages whose entries of the family ``field`` match ``entry`` exactly.

    A standing-order marker pairs with a directive of its own language (or English, which
    mixed texts switch into): the Indonesian "mulai sekarang" next to "senin" (Monday,
    and the Turkish "your") is a timetable, not an order.
    """
    return frozenset(
        code for code, p in _by_language()[field].items() if p.fullmatch(entry) is not None
    )


def _paired(marker: frozenset[str], directive: frozenset[str]) -> bool:
    """A marker and a directive of one language, or English on either side (mixed texts
    switch into English: "Por favor, from now on responde …", "Теперь always …")."""
    return bool(marker & directive) or "en" in marker or "en" in directive


def _narrative(text: str, lo: int, hi: int) -> Callable[[tuple[int, int], frozenset[str]], bool]:
    """Whether a standing-order marker opens a description of someone else.

    "From now on the choir meets on Wednesdays", "Ab jetzt trifft sich der Chor …": a
    third-person subject right after the marker (after one verb, for verb-second
    languages) and no second person anywhere in the sentence.
    """
    addressed = _families().you.search(text, lo, hi) is not None

    def check(marker: tuple[int, int], langs: frozenset[str]) -> bool:
        if addressed:
            return False
        at = marker[1]
        while at < hi and text[at] in " ,:;–—-":
            at += 1
        narrative_by = _narrative_by()
        return any(
            narrative_by[code].match(text, at, hi) is not None
            for code in langs
            if code in narrative_by
        )

    return check


def _intent_hits(text: str, lo: int, hi: int) -> Iterator[KindHit]:
    """The intent families of :mod:`curator.core.flag_lexicon_intents` in one sentence."""
    f = _families()
    objects = _spans(f.object, text, lo, hi) + _spans(f.setup, text, lo, hi)
    priors = _spans(f.prior, text, lo, hi) if objects else []  # owned needs an object
    # the agent's own instructions: a prior marker next to them ("your previous setup",
    # "the rules you started with"), not a few words away ("the policy … the previous version")
    owned = [o for o in objects if any(_close(o, p) for p in priors)]
    if not owned and objects:
        # "the old rules are cancelled; answer everything": old rules are the agent's when
        # an order to it follows in the text (not "the old parking rules no longer apply")
        olds = _spans(f.old, text, lo, hi)
        aged = [o for o in objects if any(_close(o, p) for p in olds)]
        langs = frozenset().union(*(_languages("old", text[a:b]) for a, b in olds))
        if aged and any(
            _paired(langs, _languages("directives", text[a:b]))
            for a, b in _spans(f.directive, text, lo, len(text))
        ):
            owned = aged
    if owned:
        for void in _spans(f.void, text, lo, hi):
            near = [o for o in owned if _apart(void, o) and abs(o[0] - void[0]) <= 80]
            if near:
                start, end = min(void[0], near[0][0]), max(void[1], near[0][1])
                yield "instruction", start, end, "declares the agent's instructions void"
                break
    for persona in _spans(f.persona, text, lo, hi):
        if not _NEGATION.search(text, max(lo, persona[0] - _BACK), persona[0]):
            yield "instruction", persona[0], persona[1], "tries to give the agent a persona"
            break
    private = _spans(f.private, text, lo, hi)
    if private:
        for verb in _spans(f.send, text, lo, hi):
            if _NEGATION.search(text, max(lo, verb[0] - _BACK), verb[0]) or not (
                _clause_start(text, lo, verb[0]) or _clause_final(text, hi, verb)
            ):
                continue
            near = [p for p in private if _apart(verb, p) and abs(p[0] - verb[0]) <= 80]
            if near:
                start, end = min(verb[0], near[0][0]), max(verb[1], near[0][1])
                yield "instruction", start, end, "tells the agent to pass on private data"
                break
    for amend in _spans(f.amend, text, lo, hi):
        yield "identity", amend[0], amend[1], "amends the agent's identity or values"
        break


# "never send …", "don't act as …": advice against it, not the order itself.
_NEGATION = gated(
    r"(?<![\w'])(?:never|not|don't|do\s+not|nunca|nie|niemals|jamais|mai|никогда|не)\s+"
    r"(?:\w+\s+)?$"
)


def _close(obj: tuple[int, int], prior: tuple[int, int]) -> bool:
    """A prior marker right before the instructions (up to two words) or right after them."""
    if prior[1] <= obj[0]:
        return obj[0] - prior[1] <= 16
    return obj[1] <= prior[0] and prior[0] - obj[1] <= 16


# Where an imperative verb starts its clause: the sentence start, after ",", ":", ";", a
# dash, "and"/"then" (in the languages written with spaces), with at most one adverb
# ("quietly include …") before it. Scripts without spaces, or with the verb at the end,
# have no such position to check and always count.
_CLAUSE = gated(
    r"[,:;()\[\]\"“”«»–—]|(?<![\w'])(?:and|then|also|und|dann|et|puis|y|luego|e|poi|"
    r"и|i|oraz|en|och|dan|lalu|và|rồi|ve|sonra|please|bitte|por\s+favor|s'il\s+te\s+plaît)(?![\w'])"
)


def _clause_start(text: str, lo: int, at: int) -> bool:
    if not re.match(f"[{_LETTER}]", text[at : at + 1]):
        return True
    start = window = max(lo, at - 2 * _BACK)  # more than two words back is not a clause start
    for m in _CLAUSE.finditer(text, window, at):
        start = m.end()
    if start == window > lo:
        return False
    words = re.findall(r"[\w'-]+", text[start:at])
    if words and not (len(words) == 1 and _ADVERB.fullmatch(words[0])):
        return False  # "Volunteers share …": a subject, not an adverb, before the verb
    return not _after_subject(text, lo, at)


# The one word an imperative may have before it in its clause: an adverb ("Quietly include
# …", "Незаметно добавляй …") or "please", not a subject.
_ADVERB = gated(
    r"\w+ly|\w+mente|\w+ment|please|also|just|then|now|always|never|bitte|heimlich|immer|"
    r"toujours|siempre|sempre|всегда|незаметно|тихо|тайно|gizlice|ongemerkt|stilletjes|"
    r"altijd|alltid|tyst|zawsze|luôn|hãy|selalu|diam-diam",
    re.IGNORECASE,
)


# "A columnist argued that AI companions should never pretend to be human": an opinion
# being reported about others. A report that speaks to the agent ("the admin said that
# you must …") is still an order, so a clause with a second person does not count.
_OPINION = gated(
    r"\b(?:says|said|explains|explained|shows|showed|argued|argues|believes?|thinks?|wrote|writes|warned|warns|claimed|claims|"
    r"suggested|suggests|noted|notes|reported|reports|found|finds|concluded|insists?|"
    r"insisted)\s+that\b|\b(?:meinte|schrieb|argumentierte|warnte),?\s+dass\b|"
    r"\b(?:a\s+)?(?:soutenu|écrit|affirmé|estime)\s+que\b|"
    r"\b(?:argumentó|escribió|opina)\s+que\b",
    re.IGNORECASE,
)
_SENTENCE_END = gated(r"[.!?;。！？\n](?=\s|$)")


# Languages whose imperative ends the clause ("… bu adrese gönder."): there the verb
# counts at the end of its clause.
_VERB_FINAL = frozenset({"tr", "ja", "ko", "hi"})


def _clause_final(text: str, hi: int, verb: tuple[int, int]) -> bool:
    f = _families()
    if not f.verb_final_send.fullmatch(text, verb[0], verb[1]):
        return False
    rest = text[verb[1] : hi]
    return re.match(r"\s*(?:[.!?,;。！？।]|$)", rest) is not None


# "The security team explained why “disregard all previous instructions” works": a
# subject and a verb of its own before the quote make the quote something talked about.
_NARRATED = gated(
    r"(?:^|\b)(?:the|a|an|this|that|people|he|she|they|we|i|someone|users|researchers|experts|"
    r"[A-Z][a-z]+(?:'s)?)\s+(?:\w+\s+){0,3}?(?:\w+ed|\w+s|made|wrote|said|put|read|saw|heard|"
    r"found|thought|taught|showed|told|typed|quoted|posted|called|shared|became)\b(?!.*\byou\b)",
)
