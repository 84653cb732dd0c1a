"""The quality gate measures text in any script: Chinese, Japanese and Thai have no spaces.

A gate that counts words by spaces dropped every Chinese or Japanese pattern as "1 word,
fewer than 3", and one that counts characters dropped a Chinese sentence that says as
much as an English one twice its length. These are real sentences (translations of
patterns the English tests keep) and real junk a model writes in those scripts.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core.degenerate import LOW_VARIETY, REPEATED
from curator.core.quality import QualityGate
from curator.core.textmeasure import measure

KEPT = [
    "用户喜欢在上班前的早上喝咖啡。",
    "在把提交推送到主分支之前，一定要先运行测试。",
    "部署服务器每天夜里两点重启。",
    "用户的女儿对花生过敏。",
    "ユーザーは仕事の前の朝にコーヒーを飲むのが好きです。",
    "メインブランチにコミットをプッシュする前に必ずテストを実行する。",
    "ユーザーの娘はピーナッツアレルギーがある。",
    "사용자는 출근 전 아침에 커피를 마시는 것을 좋아한다.",
    "사용자의 딸은 땅콩 알레르기가 있다.",
    "ผู้ใช้ชอบดื่มกาแฟในตอนเช้าก่อนไปทำงาน",
    "ต้องรันเทสต์ทุกครั้งก่อนพุชคอมมิตไปยังแบรนช์หลัก",
    "ลูกสาวของผู้ใช้แพ้ถั่วลิสง",
    "用户在 Python 项目里总是用 asyncio 库。",
]


@pytest.mark.parametrize("text", KEPT)
def test_real_sentences_in_scripts_without_spaces_pass(text: str) -> None:
    verdict = QualityGate().check(text)
    assert verdict.ok, verdict.reasons


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("好的", "fewer than 30"),  # "OK"
        ("谢谢你", "fewer than 30"),  # "thank you"
        ("はい、わかりました", "fewer than 30"),  # "yes, understood"
        ("ขอบคุณครับ", "fewer than 30"),  # "thank you"
        ("네 알겠습니다", "fewer than 30"),  # "yes, understood"
        ("哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈", REPEATED),
        ("好的好的好的好的好的好的好的好的好的好的", REPEATED),
        ("用户喜欢咖啡。用户喜欢咖啡。用户喜欢咖啡。用户喜欢咖啡。", REPEATED),
        ("ありがとうありがとうありがとうありがとうありがとう", REPEATED),
        ("555555555555555555555555555555555555", "fewer than 3"),
        ("ครับครับครับครับครับครับครับครับครับครับครับ", REPEATED),
        ("좋아요 좋아요 좋아요 좋아요 좋아요 좋아요 좋아요", REPEATED),
    ],
)
def test_junk_in_those_scripts_is_dropped(text: str, reason: str) -> None:
    verdict = QualityGate().check(text)
    assert not verdict.ok
    assert any(reason in r for r in verdict.reasons), verdict.reasons


def test_the_reason_says_how_a_weighed_length_was_counted() -> None:
    """A reviewer reading "6 characters" of a six-ideograph text would not see why the
    weighing mattered: the reason gives both numbers."""
    assert QualityGate().check("部署服务器。").reasons == (
        "6 characters (worth 16 in this script), fewer than 30",
    )
    # 13 ideographs weigh 39: 7 words of 6
    assert QualityGate(min_words=8).check("部署服务器每天夜里两点重启。").reasons == (
        "7 words, fewer than 8",
    )


def test_latin_text_is_measured_as_before() -> None:
    assert measure("  Retry later,ok  ").chars == 14
    assert measure("  Retry later,ok  ").words == 2
    assert measure("Extraordinarily-long-hyphenated-word").words == 1


_CJK = st.text(
    alphabet=st.sampled_from(
        list("用户喜欢在上班前的早上喝咖啡部署服务器每天夜里两点重启ユーザーはの朝にコーヒーを飲む")
    ),
    min_size=0,
    max_size=40,
)
_NO_SPACE = re.compile(r"(?<=[\u3040-\u30ff\u3400-\u9fff])\s+(?=[\u3040-\u30ff\u3400-\u9fff])")


@settings(deadline=None, max_examples=300)
@given(_CJK, st.lists(st.sampled_from([" ", "  ", "\u3000", "\n"]), max_size=40), st.data())
@example("用户喜欢在上班前的早上喝咖啡", [" "] * 13, None)
def test_spaces_between_cjk_characters_change_nothing(
    text: str, spaces: list[str], data: st.DataObject | None
) -> None:
    """Chinese and Japanese are written without spaces, but a text may carry some (a
    model's tokenizer, a copy from a justified layout): the verdict is the same with
    and without them, and with them anywhere."""
    spaced = ""
    for i, ch in enumerate(text):
        spaced += ch
        if i < len(spaces) and i + 1 < len(text):
            spaced += spaces[i]
    assert _NO_SPACE.sub("", spaced) == text
    gate = QualityGate()
    plain, with_spaces = gate.check(text), gate.check(spaced)
    assert plain.ok == with_spaces.ok, (plain, with_spaces)
    assert measure(text) == measure(spaced)


@settings(deadline=None, max_examples=200)
@given(st.lists(st.sampled_from(KEPT[:9]), min_size=1, max_size=3))
def test_sentences_joined_pass_as_they_pass_alone(parts: list[str]) -> None:
    """Two good sentences are one good text, however they are joined."""
    gate = QualityGate()
    for joiner in ("", " ", "\n"):
        assert gate.check(joiner.join(parts)).ok or len(set(parts)) < len(parts)


@pytest.mark.parametrize(
    "text",
    [
        "是的是的对对对是的对是的对是的对对是的是对是",
        "あいあいうあいうあいあうあいうあいうあいあうあい",
    ],
)
def test_a_long_text_of_a_few_characters_is_too_little_distinct_text(text: str) -> None:
    """Each character of a script without spaces is one token to the debris rules, so a
    line of three characters shuffled is junk, not a sentence of one long word."""
    verdict = QualityGate().check(text)
    assert not verdict.ok and verdict.kind in (LOW_VARIETY, REPEATED), verdict


def test_a_hostile_megabyte_is_measured_on_its_first_part_only() -> None:
    """Every character is weighed, so the measure stops after MAX_MEASURED_CHARS: a
    megabyte of mixed scripts is judged as its first page is (by counting, not timing)."""
    from curator.core.textmeasure import MAX_MEASURED_CHARS

    text = "a 用 " * 250_000
    size = measure(text)
    assert size == measure(text * 4)  # what follows the first part changes nothing
    assert size.chars == MAX_MEASURED_CHARS


_CJK_PUNCTUATED = st.text(
    alphabet=st.sampled_from(
        list(
            "用户喜欢在上班前的早上喝咖啡部署服务器ユーザーはの朝にコーヒーを飲む。、「」，！？：（）"
        )
    ),
    min_size=0,
    max_size=40,
)


@settings(deadline=None, max_examples=300)
@given(
    _CJK_PUNCTUATED,
    st.lists(st.sampled_from([" ", "\u3000", "\n", "\u200b", " \u200b"]), max_size=40),
)
@example("用户喜欢「简短」的回答", [" "] * 10)
@example("用户喜欢简短的回答。", [" "] * 9)
@example("咖啡部署服务器喝的早", ["\u200b"] * 9)
@example("、、、、に上上上上上上上前", ["\u200b"] * 4 + [" \u200b"] * 2)
@example("、、、、、、、、、、に上上上上上前", [" ", " "])  # the digits rule's chunks
def test_spaces_beside_cjk_punctuation_and_zero_width_spaces_change_nothing(
    text: str, spaces: list[str]
) -> None:
    """The punctuation of Chinese and Japanese (。、「」, fullwidth ，！？) is part of
    the unspaced text, so a space beside it is as meaningless as one between two
    ideographs; a zero-width space (a segmenter's word break, invisible) is too. Neither
    may make a text long enough to pass."""
    spaced = ""
    for i, ch in enumerate(text):
        spaced += ch
        if i < len(spaces) and i + 1 < len(text):
            spaced += spaces[i]
    gate = QualityGate()
    plain, with_spaces = gate.check(text), gate.check(spaced)
    assert plain.ok == with_spaces.ok, (plain, with_spaces)
    assert measure(text) == measure(spaced)


_COMPOSED = st.text(
    alphabet=st.sampled_from(list("사용자는짧은답변을선호한다매일아침커피 éàüñçøå")),
    min_size=0,
    max_size=40,
)


@settings(deadline=None, max_examples=300)
@given(_COMPOSED)
@example("사용자는 짧은 답변을 좋아")
@example("éééééééééééééééééé ààà üü")
@example("àà 는 는는는는는는는는는는는는")  # decomposed, its accents were a repeated unit
def test_a_decomposed_text_measures_as_its_composed_form(text: str) -> None:
    """Korean decomposed into jamo (one syllable, two or three letters; as a file name
    or a copy from some systems gives it) and Latin with combining accents are the same
    text as their composed forms: they must not weigh more and pass more easily."""
    composed = unicodedata.normalize("NFC", text)
    decomposed = unicodedata.normalize("NFD", text)
    assert measure(decomposed) == measure(composed)
    gate = QualityGate()
    assert gate.check(decomposed).ok == gate.check(composed).ok


def _interleave(text: str, marks: list[str]) -> str:
    """``text`` with ``marks[i]`` after its character ``i`` (never after the last)."""
    return "".join(ch + (marks[i] if i < len(marks) and i + 1 < len(text) else "")
                   for i, ch in enumerate(text))  # fmt: skip


def _same_verdict_and_size(text: str, other: str) -> None:
    gate = QualityGate()
    assert gate.check(text).ok == gate.check(other).ok, (gate.check(text), gate.check(other))
    assert measure(text) == measure(other)


_UNSPACED_SCRIPTS = st.sampled_from(
    [
        "用户喜欢在上班前的早上喝咖啡部署服务器每天夜里两点重启",
        "ﾕｰｻﾞｰﾊｼｺﾞﾄﾉﾏｴﾉｱｻﾆｺｰﾋｰｦﾉﾑﾉｶﾞｽｷﾃﾞｽ",  # halfwidth katakana
        "𠀀𠀁𠀂𠀃𠀄𠀅𠀆𠀇𠀈𠀉𠀊",  # Han, extension B
        "ㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ",  # katakana phonetic extensions
        "ລູກສາວຂອງຜູ້ໃຊ້ແພ້ຖົ່ວດິນ",  # Lao
        "ကော်ဖီကိုမနက်တိုင်းသောက်တယ်",  # Myanmar
    ]
).flatmap(lambda chars: st.lists(st.sampled_from(chars), min_size=3, max_size=40).map("".join))


@settings(deadline=None, max_examples=150)
@given(
    _UNSPACED_SCRIPTS,
    st.lists(
        st.sampled_from([" ", "\u3000", "\n", "\u200b", "\u2060", "\ufeff", "\u200d", " \u2060"]),
        max_size=40,
    ),
)
@example("ﾕｰｻﾞｰﾊｼｺﾞﾄﾉﾏｴﾉｱｻﾆｺｰﾋｰｦﾉﾑﾉｶﾞｽｷﾃﾞｽ", [" "] * 40)  # one "word" to the tokens
@example("用户喜欢在上班前的", ["\u2060"] * 8)  # a word joiner made it long enough
@example("用户喜欢在上班前的早上喝咖啡", ["\u2060\u2060 "] * 13)  # "mostly symbols"
def test_spaces_and_invisible_characters_in_any_unspaced_script_change_nothing(
    text: str, marks: list[str]
) -> None:
    """Every script the measure reads without spaces is one token a character to the
    debris rules too, and an invisible format character (a word joiner, a byte-order
    mark, a zero-width joiner) neither lengthens a text nor splits it."""
    _same_verdict_and_size(text, _interleave(text, marks))


@settings(deadline=None, max_examples=100)
@given(
    st.lists(st.sampled_from(["Python", "TypeScript", "Kotlin", "Alpha", "Go"]), min_size=2),
    st.sampled_from(["、", "。", "，", "・", "「"]),
    st.sampled_from([" ", "\u3000", "\u200b", "  "]),
)
@example(["Alpha", "Beta", "Gamma", "Delta", "Epsilon"], "、", " ")
def test_spaces_beside_cjk_punctuation_between_latin_words_change_nothing(
    words: list[str], mark: str, space: str
) -> None:
    """CJK punctuation separates words and is none itself: "Alpha、Beta" is two words, as
    "Alpha 、 Beta" is, whatever the spaces beside the mark."""
    _same_verdict_and_size(mark.join(words), (space + mark + space).join(words))


@pytest.mark.parametrize("unit", [" 、", "、 ", "\u3000、", " 12:34", "\u2060"])
def test_the_debris_rules_read_a_bounded_start_of_a_hostile_megabyte(unit: str) -> None:
    """Each rule reads at most the first GATE_MAX_TOKENS tokens (or MAX_MEASURED_CHARS
    characters), so what follows them changes nothing (by counting, not timing)."""
    from curator.core.degenerate import GATE_MAX_TOKENS, degenerate_reason

    start = "用户喜欢在上班前的早上喝咖啡。" + unit * GATE_MAX_TOKENS * 2
    assert degenerate_reason(start + unit * 500_000) == degenerate_reason(start + "a" * 10**6)
