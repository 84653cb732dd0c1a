"""Versioned prompt files: parsing, hashing, the constant prefix before the item."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from curator.llm.prompts import (
    ITEM,
    PROMPT_NAMES,
    PromptError,
    load_prompt,
    numbered,
    parse_prompt,
    prompt_dir,
)

VALUES = {
    "axioms": "1. one\n2. two",
    "identity": "I am a test.",
    "system_prompt": "SYSTEM",
    "category": "uncategorized",
}


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_shipped_prompts_parse_and_render(name: str) -> None:
    prompt = load_prompt(name)
    assert prompt.version >= 1
    assert prompt.sha256 == hashlib.sha256(prompt.path.read_bytes()).hexdigest()
    system, user_start = prompt.render(VALUES)
    assert system and user_start
    assert "{{" not in system + user_start  # every placeholder filled
    assert prompt.user.endswith(ITEM)  # the variable part comes last


def test_classify_prompt_carries_axioms_and_the_tie_rule() -> None:
    system, user_start = load_prompt("classify").render(VALUES)
    assert "1. one\n2. two" in user_start
    assert "When in doubt between constitutional and uncategorized, choose uncategorized" in (
        user_start
    )
    for label in ("constitutional", "noise", "uncategorized"):
        assert label in system + user_start


def test_optional_assistant_section_opens_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "demo.v1.txt"
    path.write_text("[system]\ns\n[user]\nu {{item}}\n\n[assistant]\nLabel:\n")
    prompt = parse_prompt(path)
    assert prompt.assistant == "Label:" and prompt.user == "u {{item}}"
    assert load_prompt("extract").assistant == ""


def test_newest_version_wins_and_old_ones_stay_loadable(tmp_path: Path) -> None:
    (tmp_path / "demo.v1.txt").write_text("[system]\nold\n[user]\nA {{item}}\n")
    (tmp_path / "demo.v2.txt").write_text("[system]\nnew\n[user]\nB {{item}}\n")
    assert load_prompt("demo", directory=tmp_path).system == "new"
    old = load_prompt("demo", version=1, directory=tmp_path)
    assert old.system == "old" and old.version == 1
    assert old.sha256 != load_prompt("demo", directory=tmp_path).sha256


@pytest.mark.parametrize(
    "text",
    [
        "[system]\nx\n[user]\n{{item}} and more\n",  # item not last
        "[user]\n{{item}}\n",  # no system section
        "[system]\n{{item}}\n[user]\n{{item}}\n",  # item in the system section
        "[system]\nx\n[user]\nno item\n",
        "[system]\nx\n[assistant]\ny\n[user]\n{{item}}\n",  # sections out of order
        "[system]\nx\n[user]\n{{item}}\n[assistant]\n{{item}}\n",
    ],
)
def test_malformed_prompts_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.v1.txt"
    path.write_text(text)
    with pytest.raises(PromptError):
        parse_prompt(path)


def test_missing_placeholder_value_is_an_error() -> None:
    with pytest.raises(PromptError, match="axioms"):
        load_prompt("classify").render({})


def test_numbered_lists() -> None:
    assert numbered([]) == "(none)"
    assert numbered(["a", "b"]) == "1. a\n2. b"


def test_prompt_dir_is_the_resources_folder() -> None:
    assert (prompt_dir() / "classify.v1.txt").is_file()
