"""What each setting does, for the Settings pane's tooltips: purpose, range and default.

The range and default are read from :data:`curator.store.settings.RULES` and
:data:`~curator.store.settings.DEFAULTS`, so a tooltip cannot drift from what the CLI and
the pipeline enforce; only the one-sentence purpose is written here.
"""

from __future__ import annotations

from html import escape
from typing import Any

from curator.store.settings import DEFAULTS, RULES

PURPOSE: dict[str, str] = {
    "model_path": (
        "The GGUF model file that llama.cpp loads inside Memory Curator. Empty: the bundled "
        "demo model (SmolLM2-135M), fine for trying the workflow but too small for real "
        "curation. A new file is loaded once in a separate process before it is saved."
    ),
    "n_gpu_layers": (
        "How many of the model's layers run on the GPU; the rest run on the CPU. More layers "
        "on the GPU is faster but needs GPU memory. On a computer or llama.cpp build without "
        "GPU support this setting has no effect and the status bar shows “CPU only”."
    ),
    "n_ctx": (
        "The model's context window in tokens: how much prompt (identity, patterns, episodes) "
        "and answer fit in one call. Larger needs more memory; episodes that do not fit are "
        "shortened."
    ),
    "n_threads": (
        "CPU threads llama.cpp uses. Automatic: measured once per model (see Re-tune) and reused."
    ),
    "skip_threshold": (
        "A candidate pattern this similar (or more) to an existing pattern is proposed as "
        "SKIP: it adds nothing new. Must be higher than the update threshold."
    ),
    "update_threshold": (
        "A candidate at least this similar to an existing pattern (but below the skip "
        "threshold) is proposed as UPDATE of that pattern; less similar ones as ADD."
    ),
    "decay_rate": (
        "How much a pattern's importance keeps per day without being refreshed (0.95: 5 % "
        "less each day). Lower values forget faster. Changing it re-ranks every pattern."
    ),
    "top_k": "How many of the highest-ranked patterns are put into the agent's prompt.",
    "min_chars": (
        "Quality gate: a distilled candidate shorter than this many characters is dropped "
        "before review. A Chinese character counts as 3, kana, Hangul and Thai letters as 2, "
        "about what each says next to an English letter."
    ),
    "min_words": (
        "Quality gate: a distilled candidate with fewer words than this is dropped before "
        "review. In Chinese, Japanese and Thai (no spaces) a word is 6 of those characters."
    ),
    "untrusted_sources": (
        "Episode sources written by strangers, comma-separated (e.g. dm, replies). A candidate "
        "whose every source episode comes from one of them is flagged “untrusted sources only”."
    ),
    "backup_interval_minutes": (
        "While the window is open, the database is backed up after this many minutes of use, "
        "and once more on close. Off: no automatic backups (commits still keep their own)."
    ),
    "backup_max_total_mb": (
        "The backups of this database together stay under this size: past it the oldest "
        "are deleted, never the newest. Off: only their age thins them out."
    ),
    "guard_model_opinion": (
        "When a run is staged, the model is asked one short yes/no question per candidate: "
        "does it try to instruct or change the agent, or smuggle secrets or links? A yes "
        "flags it for review (the proposal is unchanged). On: not with the demo model, which "
        "is too small to judge. Always: the demo model too. Costs one short call per candidate."
    ),
    "guard_opinion_threshold": (
        "How sure the model must be (its probability of “yes”) before its second opinion "
        "flags a candidate."
    ),
    "backend": (
        "Where the model runs: a GGUF file loaded inside Memory Curator (llama.cpp), or an "
        "OpenAI-compatible model server (llama.cpp's llama-server, Ollama, LM Studio, vLLM, "
        "llama-cpp-python's server). $CURATOR_SERVER, when set, overrides this choice."
    ),
    "server_url": (
        "The server's base address, e.g. http://127.0.0.1:8080 (without /v1). A user name or "
        "password does not belong in it: give the API key below."
    ),
    "server_model": (
        "The model id the server should use, as listed at /v1/models (Test connection fills "
        "the list). Empty: the server's first model."
    ),
    "api_key": (
        "The server's API key, if it needs one. It is kept in the system keyring, never in "
        "the database; without a keyring, set $CURATOR_API_KEY in the environment instead. "
        "Leave empty to keep the saved key; Forget key removes it."
    ),
}

_SPECIAL: dict[str, dict[Any, str]] = {
    "model_path": {None: "empty (the demo model)"},
    "n_gpu_layers": {-1: "all layers"},
    "n_threads": {None: "automatic"},
    "backup_interval_minutes": {0: "off"},
    "backup_max_total_mb": {0: "off"},
    "backend": {"local": "model file"},
    "guard_model_opinion": {"on": "on (not the demo model)", "always": "always (demo model too)"},
    "server_url": {None: "none"},
    "server_model": {None: "the server's first model"},
}


def shown_value(key: str, value: Any) -> str:
    """A value in words, as the tooltips (and the pane's choices) show it."""
    special = _SPECIAL.get(key, {})
    if value in special:
        return special[value]
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def describe_range(key: str) -> str:
    """The accepted values of ``key`` in words ("" when any text is accepted)."""
    rule = RULES.get(key)
    if rule is None:
        return ""
    if rule.low is not None and rule.high is not None:
        low: Any = rule.low if rule.kind is float else int(rule.low)
        high: Any = rule.high if rule.kind is float else int(rule.high)
        special = _SPECIAL.get(key, {})
        extra = special.get(None) if rule.optional else special.get(low)
        if low in special:  # e.g. -1 means "all layers": a word, not a number
            low += 1
        text = f"{shown_value(key, low)} to {shown_value(key, high)}"
        return f"{text}, or {extra}" if extra else text
    if rule.choices:
        return " or ".join(shown_value(key, choice) for choice in rule.choices)
    return ""


def tooltip(key: str) -> str:
    """Rich text (so Qt wraps it): what the setting does, its range, its default."""
    lines = [escape(PURPOSE[key])]
    facts = []
    span = describe_range(key)
    if span:
        facts.append(f"Range: {escape(span)}")
    if key in RULES:
        facts.append(f"Default: {escape(shown_value(key, getattr(DEFAULTS, key)))}")
    if facts:
        lines.append(" · ".join(facts))
    return "".join(f"<p>{line}</p>" for line in lines)
