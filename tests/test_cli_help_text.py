"""Every help text of every verb renders as written: no "%%", no traceback.

argparse %-formats argument and subcommand help always, but a description only when it
happens to contain ``%(prog)``; so "95%%" was right in one place and printed literally in
the other (``curator insights --help`` said "95%%"). The parser now applies one rule to
all of them (:class:`curator.cli.HelpFormatter`): write ``%%`` for a percent sign.
"""

from __future__ import annotations

import argparse
import re
import string
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.cli import HelpFormatter, build_parser, main


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def test_every_verb_renders_its_help_without_escapes() -> None:
    parsers = list(_walk(build_parser()))
    assert len(parsers) > 20  # every verb, not just the top level
    for path, parser in parsers:
        text = parser.format_help()  # raises on a stray "%"
        assert "%%" not in text, f"curator {' '.join(path)} --help shows '%%'"
        assert "%(" not in text, f"curator {' '.join(path)} --help shows a placeholder"


def test_insights_help_says_95_percent(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["insights", "--help"])
    out = capsys.readouterr().out
    assert caught.value.code == 0
    assert "95% bootstrap" in " ".join(out.split()) and "%%" not in out


# Printable text with percent signs, placeholders-looking text and argparse's own words.
_TEXT = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + " %()s.,:-'"),
    min_size=1,
    max_size=80,
).filter(lambda t: t.strip() != "")


@settings(max_examples=100, deadline=None)
@given(description=_TEXT, help_text=_TEXT)
def test_percent_signs_render_alike_in_descriptions_and_help(
    description: str, help_text: str
) -> None:
    """Whatever the text, written with ``%%`` it renders as itself in both places."""
    parser = argparse.ArgumentParser(
        prog="curator x",
        description=description.replace("%", "%%"),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--flag", help=help_text.replace("%", "%%"))
    rendered = " ".join(parser.format_help().split())
    for original in (description, help_text):
        words = " ".join(original.split())
        assert words in rendered or _wrapped_in(words, rendered)


def _wrapped_in(words: str, rendered: str) -> bool:
    """argparse may break a long token at a hyphen; compare with all spaces removed."""
    squeeze = re.compile(r"\s+")
    return squeeze.sub("", words) in squeeze.sub("", rendered)
