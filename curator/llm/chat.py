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

from dataclasses import dataclass
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


def template_from_jinja(source: str, *, bos: str = "", eos: str = "") -> ChatTemplate:
    """Split a Hugging Face style Jinja chat template at marker messages."""
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
    rendered = env.from_string(source).render(
        messages=[{"role": "system", "content": _SYS}, {"role": "user", "content": _USER}],
        add_generation_prompt=True,
        bos_token=bos,
        eos_token=eos,
        raise_exception=raise_exception,
    )
    if rendered.count(_SYS) != 1 or rendered.count(_USER) != 1:
        raise ValueError("the template drops or repeats the system message")
    head, rest = rendered.split(_SYS)
    between, tail = rest.split(_USER)
    if not tail:
        raise ValueError("the template adds no assistant turn")
    return ChatTemplate(head=head, between=between, tail=tail)
