"""The speed a run shows is generated tokens per second of generation, or nothing.

Before, the window read "19.3 tokens/s" during classification, which generates no token
(it was the prompt evaluation rate under the generation's name), and "0.2 tokens/s" at
the end of a distill step: one token divided by the seconds since the call began, prompt
processing included.
"""

from __future__ import annotations

import io
import math

from hypothesis import given
from hypothesis import strategies as st

from curator.cli.pipeline import ProgressPrinter
from curator.pipeline.progress import GenerationRate, Progress, speed_text


def test_no_figure_without_generated_tokens() -> None:
    assert speed_text(Progress("classify", 1, 4)) == ""
    assert speed_text(Progress("extract", 0, 2, 0.0, "batch 1/2")) == ""


def test_prompt_evaluation_is_named_as_such() -> None:
    progress = Progress("classify", 1, 4, message="episode 1", prompt_tokens_per_s=19.3)
    assert progress.tokens_per_s == 0.0
    assert speed_text(progress) == "19 prompt tokens/s"


def test_generation_figure() -> None:
    assert speed_text(Progress("extract", 0, 2, 12.25)) == "12.2 tokens/s"


def test_the_time_before_the_first_token_is_not_counted() -> None:
    """A call starts at t=0; the prompt takes 5 s; then two more tokens in 0.5 s."""
    rate = GenerationRate()
    assert rate.per_s == 0.0
    rate.token(now=5.0)  # the first token: it came after the prompt
    assert rate.per_s == 0.0  # one token: no generation time measured yet
    rate.token(now=5.25)
    rate.token(now=5.5)
    assert rate.per_s == 4.0  # 2 tokens after the first, in 0.5 s (not 3 / 5.5)


def test_the_printer_shows_no_zero_figure() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer(Progress("classify", 1, 2, message="episode 1", prompt_tokens_per_s=40.0))
    printer(Progress("extract", 0, 1, 0.0, "batch 1/1"))
    printer(Progress("refine", 0, 1, 7.5, "batch 1/1"))
    assert stream.getvalue().splitlines() == [
        "classify 1/2 (40 prompt tokens/s) episode 1",
        "extract 0/1 batch 1/1",
        "refine 0/1 (7.5 tokens/s) batch 1/1",
    ]


@given(
    gaps=st.lists(st.floats(0.0, 5.0, allow_nan=False), max_size=20),
    start=st.floats(0.0, 1e6, allow_nan=False),
)
def test_rate_is_tokens_after_the_first_over_their_time(gaps: list[float], start: float) -> None:
    rate = GenerationRate()
    times: list[float] = []
    now = start
    for gap in gaps:
        now += gap
        times.append(now)
        rate.token(now=now)
    value = rate.per_s
    assert math.isfinite(value) and value >= 0.0
    if len(times) < 2 or times[-1] <= times[0]:
        assert value == 0.0
    else:
        expected = (len(times) - 1) / (times[-1] - times[0])
        assert math.isclose(value, expected if math.isfinite(expected) else 0.0, rel_tol=1e-9)


@given(
    generated=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.0)),
    prompt=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.0)),
)
def test_speed_text_never_shows_a_meaningless_figure(generated: float, prompt: float) -> None:
    text = speed_text(Progress("s", 0, 1, tokens_per_s=generated, prompt_tokens_per_s=prompt))
    assert "nan" not in text.lower() and "inf" not in text.lower()
    shows_generated = math.isfinite(generated) and round(generated, 1) > 0
    shows_prompt = math.isfinite(prompt) and round(prompt) > 0
    if shows_generated:
        assert text == f"{generated:.1f} tokens/s"
    elif shows_prompt:
        assert text == f"{prompt:.0f} prompt tokens/s"
    else:
        assert text == ""
    if text:  # a figure that rounds to zero reads as "nothing generated": not shown
        assert float(text.split(" ", 1)[0]) > 0
