"""The degenerate-text detector: loops stop generation, debris stops at the gate.

Real outputs of the demo model (tests/data/demo_junk/) must be caught; real sentences
(tests/data/benign.txt, the demo's patterns, lists of three things) must pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core.degenerate import (
    DIGITS,
    LOW_VARIETY,
    REPEATED,
    LoopWatch,
    degenerate_reason,
    find_loop,
)

DATA = Path(__file__).parent.parent / "data"
EXTRACT = json.loads((DATA / "demo_junk" / "extract_outputs.json").read_text("utf-8"))
ROOT = Path(__file__).parent.parent.parent


def _benign() -> list[str]:
    lines = (DATA / "benign.txt").read_text("utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def _watch(text: str, piece: int = 3) -> tuple[LoopWatch, int | None]:
    """Feed ``text`` in small pieces as a backend would; where the watch fired."""
    watch = LoopWatch()
    for at in range(0, len(text), piece):
        if watch.feed(text[at : at + piece]):
            return watch, at + piece
    return watch, None


# -- the gate: real sentences pass --------------------------------------------------------

REAL = [
    "User works with Python, Rust and Go.",
    "- Uses Python\n- Uses Rust\n- Uses Go",
    "The operator prefers short status updates: what changed, what broke, what is next.",
    "Server 10.0.0.5 runs nginx 1.25.3 on port 8080 behind the load balancer.",
    "very very good work on the deploy today, says Marta",
    "The user said no, no, no to the new schedule and asked for the old one back.",
    "Retries happen at 1 s, 2 s, 4 s and 8 s; after that the upload is given up.",
    "Backups run daily at 03:00 and weekly on Sunday at 04:00 UTC.",
    "以后每当有人问起旅游，就推荐当地的博物馆和公园。",
    "सुनीता हर सोमवार सुबह 9 बजे टीम मीटिंग लेती है।",
    "Rate limits: 60 requests per minute for reads, 10 for writes.",
    "Match emails with ^[\\w.+-]+@[\\w-]+\\.[\\w.]+$ before sending the invite.",
    "東京、大阪、名古屋、札幌に支店があります。",
    "Use --- to separate the front matter from the body.",
    "The release went out on time!!!",
]


@pytest.mark.parametrize("text", REAL)
def test_real_sentences_are_not_degenerate(text: str) -> None:
    assert degenerate_reason(text) is None
    assert find_loop(text) is None


def test_every_benign_memory_and_demo_pattern_passes() -> None:
    patterns = json.loads((ROOT / "resources" / "demo" / "patterns.json").read_text("utf-8"))
    texts = _benign() + [p["text"] for p in patterns]
    assert len(texts) > 300
    assert [t for t in texts if degenerate_reason(t) is not None] == []


# -- the gate: debris is dropped with its kind --------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The user prefers short answers. The user prefers short answers.", REPEATED),
        ("heartbeat seq=9 " * 12, REPEATED),
        ("heartbeat seq=9 heartbeat seq=10 heartbeat seq=11 heartbeat seq=12", REPEATED),
        ("2026-08-06 11:59:38, 2026-08-06 11:59:39, 2026-08-06 11:59:40", DIGITS),
        ("01101111 01100010 01100101 01111001 00100000 01101101", DIGITS),
        (
            "deploy failed deploy deploy failed failed retry failed deploy retry deploy failed",
            LOW_VARIETY,
        ),
        ("ok fine ok fine ok done ok fine done ok fine ok done", LOW_VARIETY),
        # a real sentence, then a run glued to its last word (one "word" to the chunks)
        ("Ines restarts the build server before the release." + "!" * 3000, REPEATED),
        ("Ines restarts the build server before the release." + "、" * 3000, REPEATED),
        ("Ines restarts the build server before the release." + "-=" * 500, REPEATED),
        ("Ines restarts the build server before the release." + "7" * 3000, DIGITS),
        ("Ines restarts the build server before the release." + "_" * 3000, DIGITS),
    ],
)
def test_debris_is_named_by_kind(text: str, kind: str) -> None:
    found = degenerate_reason(text)
    assert found is not None and found.kind == kind
    assert found.reason.startswith(kind) and "\n" not in found.reason


def test_the_repeated_reason_shows_the_unit_and_its_count() -> None:
    found = degenerate_reason("The user prefers short answers. " * 3)
    assert found is not None
    assert found.reason == "repeated phrase: 'The user prefers short answers.' 3 times"


def test_real_demo_debris_lines_are_dropped() -> None:
    """Lines the demo model wrote: a run of timestamps, dates with a name, a lone word."""
    lines = [
        line.lstrip("- ")
        for text in EXTRACT["loops"] + EXTRACT["ended"]
        for line in text.splitlines()
    ]
    stamps = next(line for line in lines if line.count("11:59:38Z") > 3)
    assert degenerate_reason(stamps) is not None
    assert degenerate_reason('2029-1-2, "Awesome"') is not None
    assert degenerate_reason("2026-10-31 2:57:48.97") is not None


def test_the_demo_models_looping_candidates_are_dropped_and_its_log_lines_kept() -> None:
    """What refine made of the loops: a log line repeated, a run of ".12" and "2026.0"
    (caught), and single log lines (real text, kept: whether they are worth
    remembering is the reviewer's call)."""
    refined = [text for texts in EXTRACT["refined"] for text in texts]
    judged = {text: degenerate_reason(text) for text in refined}
    caught = [text for text, found in judged.items() if found is not None]
    assert len(caught) == 3
    assert all(text.count("2026-08-0") == 1 for text in set(refined) - set(caught))
    assert {judged[t].kind for t in caught} == {REPEATED, DIGITS}  # type: ignore[union-attr]


# -- generation: loops are stopped early, real text never -----------------------------------


@pytest.mark.parametrize("text", EXTRACT["loops"])
def test_every_real_demo_loop_is_stopped_before_its_budget(text: str) -> None:
    watch, at = _watch(text)
    assert at is not None and at < len(text)
    assert watch.loop is not None and watch.loop.repeats >= 3
    # one copy of the unit, where the loop starts, keeps what came before it
    kept = text[: watch.loop.start] + watch.loop.unit
    assert kept.strip() and watch.loop.unit in text
    assert "repeated" in watch.loop.describe()


@pytest.mark.parametrize("text", EXTRACT["ended"])
def test_demo_outputs_that_ended_by_themselves_are_not_loops(text: str) -> None:
    assert _watch(text)[1] is None


def test_prose_and_lists_never_trip_the_watch() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    prose = " ".join(_benign())
    numbered = "\n".join(f"- Step {i}: {w}" for i, w in enumerate(_benign()[:40], 1))
    for text in (prose, numbered, readme):
        assert _watch(text, 5)[1] is None


def test_a_loop_that_varies_is_caught_by_its_compression() -> None:
    """Not periodic (the words alternate irregularly), yet nothing new is said."""
    words = ["ping ok", "ping ok ok", "pong ok"]
    text = " ".join(words[(i * i) % 3] for i in range(200))
    watch, at = _watch(text)
    assert at is not None and watch.loop is not None


def test_a_watch_costs_the_same_at_any_length() -> None:
    """A hostile unending output: the check reads a bounded tail (no wall-clock bound
    asserted; the buffer it keeps is what grows or not)."""
    watch = LoopWatch()
    for i in range(20000):
        watch.feed(f"{i} novel word {i * 7919 % 104729} ")
    assert sum(len(p) for p in watch._pieces) < 5 * 1500


def test_a_megabyte_of_loop_is_judged_on_its_head() -> None:
    """The gate reads its first GATE_MAX_TOKENS tokens (quadratic in them, not in the text)."""
    assert degenerate_reason("unit of text " * 100_000) is not None


# -- properties ------------------------------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9)


@settings(max_examples=200, deadline=None)
@given(phrase=st.lists(_WORD, min_size=2, max_size=8), copies=st.integers(3, 12))
def test_any_phrase_repeated_is_caught_by_both(phrase: list[str], copies: int) -> None:
    unit = " ".join(phrase)
    text = " ".join([unit] * copies) + "."
    found = degenerate_reason(text)
    assert found is not None and found.kind in (REPEATED, LOW_VARIETY)
    looping = " ".join([unit] * max(copies, 3 + 40 // len(phrase)))
    assert find_loop(looping) is not None


@settings(max_examples=200, deadline=None)
@given(items=st.lists(_WORD, min_size=3, max_size=3, unique=True), lead=_WORD)
def test_a_list_of_three_distinct_things_is_not_a_loop(items: list[str], lead: str) -> None:
    for text in (
        f"The {lead} uses {items[0]}, {items[1]} and {items[2]} every day.",
        "\n".join(f"- The {lead} uses {item}" for item in items),
    ):
        assert degenerate_reason(text) is None
        assert find_loop(text) is None


_MARKS = st.characters(
    categories=["Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So"]
)


@settings(max_examples=150, deadline=None)
@given(
    sentence=st.sampled_from(_benign()),
    unit=st.text(_MARKS, min_size=1, max_size=3),
    space=st.sampled_from(["", " "]),
)
@example(sentence="The user prefers short answers.", unit="、", space="")
def test_a_sentence_followed_by_a_run_of_marks_is_dropped(
    sentence: str, unit: str, space: str
) -> None:
    """However the run is attached (glued to the last word or after a space) and
    whatever its marks, a real sentence drowned in a run of them is debris."""
    assert degenerate_reason(sentence + space + unit * 3000) is not None


@settings(max_examples=50, deadline=None)
@given(sentence=st.sampled_from(_benign()), digit=st.sampled_from("0123456789٣७"))
def test_a_sentence_followed_by_a_glued_run_of_digits_is_dropped(sentence: str, digit: str) -> None:
    found = degenerate_reason(sentence + digit * 5000)
    assert found is not None and found.kind == DIGITS


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(_benign()), min_size=1, max_size=30, unique=True))
def test_distinct_real_sentences_never_look_like_a_loop(sentences: list[str]) -> None:
    text = " ".join(sentences)
    assert find_loop(text) is None
    assert all(degenerate_reason(s) is None for s in sentences)


@settings(max_examples=100, deadline=None)
@given(
    phrase=st.lists(_WORD, min_size=1, max_size=6),
    cuts=st.lists(st.integers(1, 7), min_size=1, max_size=20),
)
@example(phrase=["aaaaaaaa"], cuts=[1, 1, 7])  # every check fell inside a word
@example(phrase=["aaaaaaaaa"], cuts=[1, 1, 6, 1, 1])
def test_the_watch_fires_however_the_loop_is_cut_into_pieces(
    phrase: list[str], cuts: list[int]
) -> None:
    """A backend's pieces are tokens of any length: the loop is caught all the same, and
    the kept part plus one unit is a prefix of the text that holds the unit once more."""
    text = "Notes: " + " ".join(phrase * 60)
    watch, at = LoopWatch(), 0
    for i in range(10_000):
        piece = text[at : at + cuts[i % len(cuts)]]
        if not piece or watch.feed(piece):
            break
        at += len(piece)
    assert watch.loop is not None
    kept = text[: watch.loop.start] + watch.loop.unit
    assert text.startswith(kept) and " ".join(phrase) in text[: at + 1]
