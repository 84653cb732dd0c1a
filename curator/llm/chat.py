"""The model's chat template, split into the fixed pieces around system and user text.

Prompts are sent as raw text with the template applied by us, not through a chat
completion API, for one reason: the constant part of every prompt (system turn plus the
instructions at the start of the user turn) must be *byte-identical* across calls so it
tokenizes to the same tokens and llama.cpp can reuse their KV cache. Splitting the
template once into its fixed pieces gives exactly that.

The pieces are found by rendering the model's own Jinja template (GGUF metadata
``tokenizer.chat_template``) with marker strings as message contents and cutting at the
markers; a model without a template, or with one that cannot be rendered that way, gets
ChatML (``<|im_start|>role\\n...<|im_end|>``), which SmolLM2 and Qwen use.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SYS = "\x00CURATOR-SYSTEM\x00"
_USER = "\x00CURATOR-USER\x00"


@dataclass(frozen=True)
class ChatTemplate:
    """``head + system + between + user + tail`` is one rendered system+user exchange."""

    head: str
    between: str
    tail: str

    def prefix(self, system: str, user_start: str) -> str:
        """The constant part: system turn and the beginning of the user turn."""
        return f"{self.head}{system}{self.between}{user_start}"


CHATML = ChatTemplate(
    head="<|im_start|>system\n",
    between="<|im_end|>\n<|im_start|>user\n",
    tail="<|im_end|>\n<|im_start|>assistant\n",
)


def template_from_metadata(metadata: dict[str, Any], bos: str = "", eos: str = "") -> ChatTemplate:
    """The template of a model from its GGUF metadata (ChatML when absent or unusable)."""
    source = metadata.get("tokenizer.chat_template")
    if not isinstance(source, str) or not source.strip():
        return CHATML
    try:
        return template_from_jinja(source, bos=bos, eos=eos)
    except Exception:  # any template we cannot split falls back to ChatML
        return CHATML


class TemplateRefused(ValueError):
    """A chat template took too long or grew too large to render (the message says which)."""


TEMPLATE_TIME_S = 5.0
TEMPLATE_BYTES = 256 << 10
_CHILD_MEMORY = 1 << 30  # the child's address space: a template cannot exhaust the machine


def template_from_jinja(
    source: str,
    *,
    bos: str = "",
    eos: str = "",
    time_s: float = TEMPLATE_TIME_S,
    max_bytes: int = TEMPLATE_BYTES,
) -> ChatTemplate:
    """Split a Hugging Face style Jinja chat template at marker messages.

    The sandbox limits what a template may touch, not how long it runs or how much it
    allocates (``{% for i in range(100000) %}{% for j in range(100000) %}`` runs for
    hours, ``'x'|center(10**9)`` asks for a gigabyte), and a thread cannot be stopped. So
    the template renders in a child process that is killed after ``time_s`` seconds and
    whose memory is capped; a template (or its rendering) larger than ``max_bytes`` is
    refused too. Raises :class:`TemplateRefused` for those, ValueError or a Jinja error
    for a template that cannot be split.
    """
    if len(source.encode("utf-8", "replace")) > max_bytes:
        raise TemplateRefused(f"is refused: larger than {max_bytes:,} bytes")
    rendered = _render_bounded(source, bos, eos, time_s, max_bytes)
    if rendered.count(_SYS) != 1 or rendered.count(_USER) != 1:
        raise ValueError("the template drops or repeats the system message")
    head, rest = rendered.split(_SYS)
    between, tail = rest.split(_USER)
    if not tail:
        raise ValueError("the template adds no assistant turn")
    return ChatTemplate(head=head, between=between, tail=tail)


@functools.lru_cache(maxsize=16)
def _render_bounded(source: str, bos: str, eos: str, time_s: float, max_bytes: int) -> str:
    """The template rendered with the marker messages, in a child with a time limit.

    The child costs a fraction of a second, once per template and process (cached: a
    reconnect or a reload renders nothing again; a refusal is not cached).

    A frozen application has no interpreter to start a child with: there it renders in
    this process (sandboxed, with the size limit, but without the time limit).
    """
    if getattr(sys, "frozen", False):
        return _render(source, bos, eos, max_bytes)
    request = json.dumps({"source": source, "bos": bos, "eos": eos, "max_bytes": max_bytes})
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    code = "from curator.llm.chat import _child; _child()"
    try:
        proc = subprocess.run(
            [sys.executable, "-P", "-c", code],
            input=request,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=time_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TemplateRefused(f"is refused: rendering it took longer than {time_s:g} s") from None
    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise TemplateRefused(
            f"is refused: rendering it failed (exit status {proc.returncode}, "
            "probably out of memory)"
        )
    if answer.get("refused"):
        raise TemplateRefused(f"is refused: {answer['refused']}")
    if "error" in answer:
        raise ValueError(str(answer["error"]))
    return str(answer["rendered"])


def _render(source: str, bos: str, eos: str, max_bytes: int) -> str:
    """Render the template with the marker messages in Jinja's immutable sandbox."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env = ImmutableSandboxedEnvironment(
        loader=jinja2.BaseLoader(),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols"],
    )
    pieces: list[str] = []
    size = 0
    for piece in env.from_string(source).generate(
        messages=[{"role": "system", "content": _SYS}, {"role": "user", "content": _USER}],
        add_generation_prompt=True,
        bos_token=bos,
        eos_token=eos,
        raise_exception=raise_exception,
    ):
        size += len(piece)
        if size > max_bytes:
            raise TemplateRefused(f"its rendering is larger than {max_bytes:,} characters")
        pieces.append(piece)
    return "".join(pieces)


def _child() -> None:
    """Run in the child: read the request on stdin, write one JSON answer on stdout."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (_CHILD_MEMORY, _CHILD_MEMORY))
    except (ImportError, ValueError, OSError):  # not on this platform: the timeout remains
        pass
    request = json.loads(sys.stdin.read())
    try:
        rendered = _render(request["source"], request["bos"], request["eos"], request["max_bytes"])
    except TemplateRefused as exc:
        answer: dict[str, str] = {"refused": str(exc)}
    except MemoryError:
        answer = {"refused": "rendering it needs more than 1 GiB of memory"}
    except Exception as exc:  # any template error: the parent falls back to ChatML
        answer = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    else:
        answer = {"rendered": rendered}
    sys.stdout.write(json.dumps(answer))
