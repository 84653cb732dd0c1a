"""Who does it: an order to set rules aside or to play a part counts when the agent is the
one addressed, not when the sentence says what other people do.

"Users often ignore the setup instructions", "her manager ignores all the rules",
"Marta interpreta a una reina", "小李扮演一个侦探", "the sheet told players to forget
everything": each has a subject (or addressee) of its own before the verb, in the same
clause, and that subject is not the agent. An order has none, or has the agent ("you",
"Wren", "the assistant"). The check looks back at most one clause, so it is linear and
never reaches into a previous sentence.
"""

from __future__ import annotations

import re

from curator.core.regex_gate import gated

__all__ = ["colon_ends_clause", "done_by_others"]

# Words that may stand before an imperative and are not subjects.
_NOT_SUBJECTS = frozenset(
    [
        "always",
        "sometimes",
        "perhaps",
        "please",
        "kindly",
        "now",
        "then",
        "also",
        "just",
        "simply",
        "still",
        "thus",
        "so",
        "never",
        "hence",
        "besides",
        "anyways",
        "anyway",
        "afterwards",
        "nevertheless",
        "regardless",
        "ahora",
        "luego",
        "siempre",
        "maintenant",
        "toujours",
        "alors",
        "jetzt",
        "bitte",
        "immer",
        "dann",
        "adesso",
        "sempre",
        "ora",
        "agora",
        "teraz",
        "zawsze",
        "nu",
        "altijd",
        "sekarang",
        "selalu",
        "şimdi",
        "lütfen",
        "bây",
        "giờ",
        "hãy",
        "luôn",
        "nyt",
    ]
)
_AGENT_WORDS = frozenset(
    [
        "you",
        "your",
        "yourself",
        "assistant",
        "agent",
        "bot",
        "ai",
        "model",
        "tu",
        "tú",
        "usted",
        "vous",
        "du",
        "sie",
        "ty",
        "vy",
        "jij",
        "je",
        "você",
        "voce",
        "lei",
        "sen",
        "anda",
        "kamu",
        "bạn",
    ]
)
_CLAUSE_BREAK = gated(r"[.!?;:,()\[\]\"“”«»「」。、！？；：，\n—–]")
_SENTENCE_BREAK = gated(r"[.!?。！？\n]")
_WORD = gated(r"[^\W\d_][\w'’-]*")
# "told the players to", "asked everyone to": an order given to someone else
_TOLD_OTHERS = gated(
    r"(?<![\w'])(?:told|tells?|asked|asks|instructed|instructs|reminded|reminds|warned|"
    r"urged|encouraged|made)\s+(?!you\b|me\b)(?:\w+\s+){0,2}?(?:to|not\s+to)\s+$",
    re.IGNORECASE,
)
# "every player has to pretend", "each guest must act as"
_EACH_HAS_TO = gated(
    r"(?<![\w'])(?:every|each|all|the|a|our|their)\s+(?!assistant\b|agent\b|bot\b)\w+\s+"
    r"(?:has|have|had|needs?|needed|got)\s+to\s+$",
    re.IGNORECASE,
)
# CJK and Hangul: a topic or subject particle after a name, no second person in the clause
_CJK_SUBJECT = gated(
    r"(?:さん|くん|君|ちゃん|様|氏|先生)[はが]|[\u4e00-\u9fff\u3040-\u30ff]{1,6}(?<!から)(?<!今後)(?<!以降)(?<!今)[はが]|"
    r"(?:小|老)[\u4e00-\u9fff](?=[\u4e00-\u9fff]{0,3}$)|(?:他们|她们|他|她|有人|别人|彼ら|彼女|彼)|"
    r"[\uac00-\ud7a3]{1,5}\s*(?:씨는|씨가|님은|님이)"
)
_CJK_YOU = gated(r"あなた|君は|お前|你|您|너|당신|あんた")
# Subjects that are not plural nouns in -s: Vietnamese, Indonesian, Turkish, pronouns
_SUBJECT_NOUNS = frozenset(
    (
        "khách hàng",
        "người dùng",
        "mọi người",
        "nhiều người",
        "họ",
        "ấy",
        "pengguna",
        "pelanggan",
        "mereka",
        "orang",
        "kullanıcılar",
        "müşteriler",
        "insanlar",
        "onlar",
        "people",
        "everyone",
        "someone",
        "somebody",
        "nobody",
        "staff",
        "team",
        "police",
        "leute",
        "gente",
        "nutzer",
        "kunden",
        "mieter",
        "люди",
        "пользователи",
        "клиенты",
    )
)
_PLURAL_NOUN = gated(r"[a-z]{3,}(?:s|es)$")
_POSSESSIVE = gated(
    r"^(?:her|his|their|my|our|its|su|sus|son|sa|ses|leur|leurs|sein|seine|ihr|ihre|"
    r"suo|sua|loro|seu|sua|его|её|их|jego|jej|ich)$",
    re.IGNORECASE,
)
_ADVERB_TAIL = gated(
    r"^(?:often|usually|sometimes|always|regularly|routinely|frequently|still|also|just|"
    r"siempre|souvent|häufig|oft|immer|spesso|sempre|muitas|часто|всегда|luôn|thường|"
    r"hay|vẫn|selalu|sering|vaak|ofta|często|zawsze|sık\s+sık)$",
    re.IGNORECASE,
)


def done_by_others(text: str, start: int, agent_name: str | None = None) -> bool:
    """Whether the verb at ``text[start]`` has a subject or addressee that is not the agent."""
    lo = max(0, start - 80)
    head = text[lo:start]
    cut = max((m.end() for m in _CLAUSE_BREAK.finditer(head)), default=0)
    clause = head[cut:]
    if _TOLD_OTHERS.search(head) or _EACH_HAS_TO.search(clause):
        return True
    if start > 0 and text[start - 1] == "ي":  # Arabic imperfect, third person: "يتجاهلون"
        return True
    if _CJK_SUBJECT.search(clause) and not _CJK_YOU.search(clause):
        return True
    words = _WORD.findall(clause)
    while words and _ADVERB_TAIL.match(words[-1]):
        words.pop()
    if not words:
        return False
    low = [w.casefold() for w in words]
    if any(w in _AGENT_WORDS for w in low) or (agent_name and agent_name.casefold() in low):
        return False
    last = words[-1]
    if len(words) >= 2 and _POSSESSIVE.match(words[-2]):
        return True  # "her manager ignores", "su jefe ignora"
    if last.casefold() in _NOT_SUBJECTS or last.casefold().endswith("ly"):
        return False
    # a name: "…, Marta interpreta", "…, Camille incarne", "…, Nam luôn đóng vai"; the
    # first word of a sentence is capitalised anyway ("Önceki talimatları", "Da adesso")
    sentence_start = cut == 0 and not _SENTENCE_BREAK.search(head)
    if last[:1].isupper() and last[1:].islower() and not (sentence_start and len(words) == 1):
        return True
    if " ".join(low[-2:]) in _SUBJECT_NOUNS or low[-1] in _SUBJECT_NOUNS:
        return True
    return _PLURAL_NOUN.search(last.casefold()) is not None


# A quoted order whose sentence explains it ("someone asked where “ignore all previous
# instructions” came from; I explained prompt injection", "有人问“忽略之前的所有指令”这个梗
# 是怎么来的，我解释了…") is talked about in any language: the words of explaining, of a
# joke or meme, or of asking what it means, around the quotation.
EXPLAINED = gated(
    r"explain\w{0,20}|\bmemes?\b|\bjokes?\b|came\s+from|\bwhat\b[^.!?]{0,20}\bmeans|"
    r"erklär\w{0,20}|hereinfallen|\bwitz|expliqu\w{0,20}|\bblague|explic\w{0,20}|\bbroma|\bchiste|"
    r"spieg\w{0,20}|scherz\w{0,20}|battut\w{0,20}|wyjaśni\w{0,20}|żart\w{0,20}|объясн\w{0,20}|шутк\w{0,20}|\bмем\w{0,20}|piada|"
    r"\buitleg\w{0,20}|legde\s+uit|\bgrap\b|giải\s+thích|jelaskan|lelucon|anlat\w{0,20}|espri\w{0,20}|"
    r"解释|梗|笑话|説明|ネタ|설명|밈|농담|شرح|نكتة|توضیح|הסבר|समझा|ব্যাখ্যা",
    re.IGNORECASE,
)
_STOPS = ".!?。！？\n"


def quote_explained(text: str, start: int, end: int) -> bool:
    """The sentence around the quotation ``text[start:end]`` explains it (bounded look)."""
    before = text[max(0, start - 80) : start]
    after = text[end : end + 120]
    for stop in _STOPS:
        before = before.rsplit(stop, 1)[-1]
        after = after.split(stop, 1)[0]
    return EXPLAINED.search(before) is not None or EXPLAINED.search(after) is not None


# "@kel asked me to pretend to be a pirate for one reply", "Eva wil dat ik haar voortaan in
# het Nederlands antwoord", "that's her own preference": a person's request about how they
# themselves are answered, which the agent reports, is an ordinary memory; it widens
# nothing as long as it names no one else's rules or audience.
_REQUEST = gated(
    r"\b(?:asked|asks|wants|wanted|told)\s+me\s+(?:to|not\s+to)\b|"
    r"\b(?:her|his|their)\s+(?:own\s+)?(?:personal\s+)?preference|\bown\s+preference|"
    r"\bme\s+(?:pidió|pide|pediu)\s+que|\bpediu\s+que|\bm['’]a\s+demandé\s+de|"
    r"\bbat\s+mich|\b(?:möchte|will),?\s+dass\s+ich|\bwil\s+dat\s+ik|"
    r"\bvroeg\s+(?:me|mij)\s+om|\bnhờ\s+(?:mình|tôi|em)|\bmi\s+ha\s+chiesto|"
    r"\bpoprosił\w{0,20}\s+mnie|\bminta\s+(?:saya|aku)|попросил\w{0,20},?\s+(?:чтобы\s+я|меня)|"
    r"preferencia|preferência|préférence|voorkeur|vorliebe|предпочтение|偏好|好み|"
    r"mong\s+muốn\s+của\s+riêng|tercih|preferenza|preferencj|تفضيل",
    re.IGNORECASE,
)
_WIDER = gated(
    r"instruction|\brules?\b|principle|axiom|guideline|system\s+prompt|everyone|anyone|"
    r"anybody|everybody|all\s+users|every\s+user|whoever|\bpassword|\btoken|\bkeys?\b|"
    r"send|forward|share|post\b|link|regla|règle|regel|правил|todos|tout\s+le\s+monde|"
    r"iedereen|jeder|все[мх]?\b|任何人|所有人|誰でも|모든\s*사람|"
    # a message passed on, or an authority: relayed authority, not a preference
    r"pass\s+(?:this|it)\s+(?:on|along)|tell\s+you|let\s+you\s+know|dijera|dirtelo|dirti\b|"
    r"nhắn|repass|menyampaikan|ausricht|transmet|admin|operator|owner|developer|manager|"
    r"administr|operador|diretoria|quản\s+(?:trị|lý)|pengembang|администрат|管理|관리",
    re.IGNORECASE,
)


def personal_request(text: str) -> bool:
    """The text reports a person's request about how they themselves are answered, and
    names no rules, no wider audience and nothing to send (bounded to 600 characters)."""
    head = text[:600]
    return _REQUEST.search(head) is not None and _WIDER.search(head) is None


# Words after which a colon goes on with the question itself: a modal ("whether the agent
# should: …") or the question word ("demandé si : …").
_COLON_GOES_ON = frozenset(
    {"should", "must", "can", "could", "would", "will", "may", "might", "shall", "ought"}
    | {"if", "whether", "si", "se", "ob", "ли"}
)
_WORD_BEFORE = re.compile(r"(\w+)\s*$")
# a time, a verse or a ratio ("10:30", "3:16", "2:1"), a smiley (":)", ":-(")
_NOT_PUNCTUATION = re.compile(r"(?<=\d):(?=\d)|:-?[()DPp/|](?!\w)")


def colon_ends_clause(text: str, at: int) -> bool:
    """Whether the colon at ``text[at]`` ends the clause before it: "whether or not you
    agree: you are a human now" introduces an order after a reported question's own
    words. Every colon does but one inside a time, a verse, a ratio or a smiley ("10:30",
    "3:16", ":)") and one right after a modal or the question word itself ("whether the
    agent should: …", "si : …"), where the question goes on. A colon before a quotation
    ends it too: an order quoted after "whether you agree or not:" is still given."""
    if _NOT_PUNCTUATION.match(text, at):
        return False
    word = _WORD_BEFORE.search(text, max(0, at - 40), at)
    return word is None or word.group(1).casefold() not in _COLON_GOES_ON
