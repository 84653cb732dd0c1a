"""Greedy decoding that checks the grammar on the chosen token only == the plain way.

The three distill steps (extract with the bullet-list grammar and its repeat penalty,
refine with the string-array grammar, importance with the number-array grammar) run on
8 demo episodes in two batches, each call made twice, once masking the vocabulary with
the grammar on every step (llama-cpp-python's sampler chain) and once the lazy way; every
output text must be identical.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from curator.core.parsing import ParseError, parse_string_array
from curator.llm.grammars import (
    bullet_list_grammar,
    number_array_grammar,
    number_array_max_tokens,
    string_array_grammar,
)
from curator.llm.llama_cpp_backend import LlamaCppBackend
from curator.llm.prompts import load_prompt, numbered
from curator.pipeline.distill import EXTRACT_REPEAT_PENALTY
from curator.pipeline.distill_plan import render_prefix
from curator.resources_path import resource_path
from curator.store.identity import EMPTY_IDENTITY
from curator.store.settings import Settings

pytestmark = pytest.mark.llm

# Two batches of four: six outputs per way, each grammar twice, with short prompts
# (evaluating the prompts, not the outputs, takes most of the time).
EPISODES = 8
PER_BATCH = 4
MAX_TOKENS = 96  # enough to cover list ends and grammar rejections, short enough to be quick


def _episodes(n: int) -> list[str]:
    texts: list[str] = []
    with resource_path("demo", "episodes.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            if "messages" in obj:
                texts.append("\n".join(f"{m['role']}: {m['content']}" for m in obj["messages"]))
            else:
                texts.append(obj["content"])
            if len(texts) == n:
                break
    return texts


WAYS = (False, True)
"""``lazy_grammar`` off (the plain way), then on."""


def _complete(backend: LlamaCppBackend, lazy: bool, prefix: str, item: str, **options: Any) -> str:
    backend.lazy_grammar = lazy
    try:
        return str(backend.complete(prefix, item, **options).text)
    finally:
        backend.lazy_grammar = True


def _three_steps(backend: LlamaCppBackend) -> dict[bool, list[str]]:
    """Each step's outputs, per way. Every call is made the plain way and then at once
    the lazy way, each way fed its own earlier outputs: while they agree the lazy call's
    prompt is the one the plain call left in the KV cache, so only the plain call pays
    for evaluating it (most of the time went there)."""
    prompts = {name: load_prompt(name) for name in ("extract", "refine", "importance")}
    prefix = {
        n: render_prefix(backend, p, EMPTY_IDENTITY, "uncategorized") for n, p in prompts.items()
    }
    episodes = _episodes(EPISODES)
    outputs: dict[bool, list[str]] = {lazy: [] for lazy in WAYS}
    for start in range(0, EPISODES, PER_BATCH):
        item = "\n".join(
            f"Episode {k + 1}:\n{text}\n"
            for k, text in enumerate(episodes[start : start + PER_BATCH])
        )
        notes = {
            lazy: _complete(
                backend,
                lazy,
                prefix["extract"],
                item,
                max_tokens=MAX_TOKENS,
                grammar=bullet_list_grammar(Settings().extract_max_lines),
                repeat_penalty=EXTRACT_REPEAT_PENALTY,
            )
            for lazy in WAYS
        }
        refined = {
            lazy: _complete(
                backend,
                lazy,
                prefix["refine"],
                notes[lazy],
                max_tokens=MAX_TOKENS,
                grammar=string_array_grammar(MAX_TOKENS),
            )
            for lazy in WAYS
        }
        patterns = {lazy: _patterns(refined[lazy], notes[lazy]) for lazy in WAYS}
        scores = {
            lazy: _complete(
                backend,
                lazy,
                prefix["importance"],
                numbered(patterns[lazy]),
                max_tokens=number_array_max_tokens(len(patterns[lazy])),
                grammar=number_array_grammar(len(patterns[lazy])),
            )
            for lazy in WAYS
        }
        for lazy in WAYS:
            outputs[lazy] += [notes[lazy], refined[lazy], scores[lazy]]
    return outputs


def _patterns(refined: str, notes: str) -> list[str]:
    try:
        patterns = parse_string_array(refined) or ["(none)"]
    except ParseError:  # cut by the token budget: score the notes' lines instead
        patterns = [line for line in notes.splitlines() if line.strip()] or ["(none)"]
    return patterns[:4]


def test_three_distill_steps_match_the_plain_grammar_way(demo_backend) -> None:
    outputs = _three_steps(demo_backend)
    plain, lazy = outputs[False], outputs[True]
    assert len(plain) == 3 * EPISODES // PER_BATCH
    assert lazy == plain
    assert all(plain), plain  # every step wrote something
    assert all(line.startswith("- ") for line in plain[0].splitlines())


def test_a_rejected_token_falls_back_to_the_whole_vocabulary(demo_backend) -> None:
    """A grammar the model would never follow on its own: every token is a fallback."""
    prefix = demo_backend.chat_prefix("You are helpful.", "")
    grammar = 'root ::= "zq" [0-9]{3} "|" [xyz]{2,5}\n'
    outputs = []
    for lazy in (False, True):
        demo_backend.lazy_grammar = lazy
        before = demo_backend.grammar_fallbacks
        try:
            outputs.append(
                demo_backend.complete(prefix, "Say hello.", max_tokens=32, grammar=grammar)
            )
        finally:
            demo_backend.lazy_grammar = True
        fallbacks = demo_backend.grammar_fallbacks - before
        if lazy:  # most tokens were rejected first (one for the end of text at most)
            assert outputs[-1].tokens_out // 2 < fallbacks <= outputs[-1].tokens_out + 1
        else:
            assert fallbacks == 0
    plain, lazy_way = outputs
    assert lazy_way.text == plain.text and lazy_way.stop_reason == plain.stop_reason == "stop"
    assert plain.text.startswith("zq")
