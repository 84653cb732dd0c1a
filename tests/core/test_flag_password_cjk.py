"""A password word in a language written without spaces is not followed by a password
just because the clause after it has a comma.

"小林总是忘记公司会议室的无线网密码，每次开会都要问前台。" (Kobayashi always forgets the
meeting room's Wi-Fi password and asks reception) was flagged "a password given in the
text": with no spaces the rest of the clause read as one token, and its comma (a full-width
one, an ASCII one after folding) as the symbol a password has.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core.flags import detect


def _secrets(text: str) -> list[str]:
    return [f.match for f in detect(text, [], "") if f.kind == "secret"]


@pytest.mark.parametrize(
    "text",
    [
        "小林总是忘记公司会议室的无线网密码，每次开会都要问前台。",
        "みさきさんはいつも実家のWi-Fiのパスワードを忘れて、家族のグループで聞いている。",
        "민수 씨는 비밀번호를 자주 잊어버려서, 메모장에 힌트만 적어 둔다.",
        "เธอลืมรหัสผ่านบ่อย, เลยจดคำใบ้ไว้ในสมุด",
    ],
)
def test_a_password_talked_about_in_cjk_or_thai_is_not_a_secret(text: str) -> None:
    assert _secrets(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "管理员密码是Qx7!mRt2，记住它。",
        "Wi-Fiのパスワードは「Hk72!pqz」です。",
        "パスワード：Hk72pqz9",
        "비밀번호는 hunter2!입니다",
    ],
)
def test_a_password_given_in_cjk_text_is_still_a_secret(text: str) -> None:
    assert _secrets(text)


_HAN = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5), min_size=2, max_size=12)


@settings(deadline=None)
@given(clauses=st.lists(_HAN, min_size=1, max_size=4), comma=st.sampled_from("，、,;；"))
@example(clauses=["每次开会都要问前台"], comma="，")
def test_clauses_of_han_after_the_password_word_are_never_a_password(
    clauses: list[str], comma: str
) -> None:
    assert _secrets("他总是忘记密码" + comma + comma.join(clauses) + "。") == []


_EMOJI = st.sampled_from(
    ["😀", "😂😂", "👍🏽", "👨\u200d👩\u200d👧", "❤️", "★", "♥", "🙏🏻", "\u2728"]
)


@settings(deadline=None)
@given(clauses=st.lists(_HAN, min_size=1, max_size=3), emoji=st.lists(_EMOJI, max_size=3))
@example(clauses=["每次开会都要问前台"], emoji=["😀", "😀"])
@example(clauses=["每次都问前台"], emoji=["👨\u200d👩\u200d👧"])
@example(clauses=["每次都问前台"], emoji=["👍🏽"])
def test_emoji_in_a_clause_after_the_password_word_are_not_a_password(
    clauses: list[str], emoji: list[str]
) -> None:
    """A chat message in Chinese often ends its clauses with emoji; in a clause of a
    script without spaces an emoji (a symbol, its skin tone or its joiner) is no more a
    password's symbol than the clause's comma is."""
    text = "他总是忘记密码，" + "，".join(c + "".join(emoji) for c in clauses) + "。"
    assert _secrets(text) == []


def test_an_emoji_beside_a_real_password_leaves_it_a_secret() -> None:
    assert _secrets("管理员密码是Qx7!mRt2😀，记住它。")
    assert _secrets("wifi password: hunter2😀 keep it")
