"""Versioned prompt files and their rendering.

Each prompt is a file ``resources/prompts/<name>.v<N>.txt`` with a ``[system]`` and a
``[user]`` section, and optionally an ``[assistant]`` section: the start of the answer,
written for the model (e.g. ``Label:``, matching the prompt's examples). The newest
version of a name is used; its SHA-256 (of the file's bytes) is recorded on every run and
every trace step, so an output can always be traced to the exact wording that produced it.
A changed wording gets a new version file rather than an edit, so old hashes keep meaning
something.

Placeholders are ``{{name}}`` (double braces, so JSON examples in a prompt need no
escaping). ``{{item}}`` marks the variable part (the episode, the batch) and must be the
last thing in the user section: everything before it is the constant prefix that the
backend keeps in its KV cache from one call to the next.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from curator.resources_path import resource_path

ITEM = "{{item}}"
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_FILE = re.compile(r"^(?P<name>[a-z_]+)\.v(?P<version>\d+)\.txt$")
PROMPT_NAMES = ("classify", "extract", "refine", "importance", "guard")


class PromptError(ValueError):
    """A prompt file is missing or malformed (a packaging error, not a user error)."""


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt file, parsed."""

    name: str
    version: int
    sha256: str
    system: str
    user: str
    path: Path
    assistant: str = ""

    def render(self, values: Mapping[str, str]) -> tuple[str, str]:
        """(system text, user text up to the item) with every placeholder filled."""
        system = _fill(self.system, values, self.name)
        user_start = _fill(self.user[: -len(ITEM)], values, self.name)
        return system, user_start

    @property
    def provenance(self) -> dict[str, object]:
        return {"version": self.version, "sha256": self.sha256}


def _fill(text: str, values: Mapping[str, str], name: str) -> str:
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise PromptError(f"prompt {name!r} needs a value for {{{{{key}}}}}")
        return values[key]

    return _PLACEHOLDER.sub(replace, text)


def prompt_dir() -> Path:
    return resource_path("prompts")


def parse_prompt(path: Path) -> PromptTemplate:
    match = _FILE.match(path.name)
    if match is None:
        raise PromptError(f"{path.name}: prompt files are named <name>.v<N>.txt")
    raw = path.read_bytes()
    text = raw.decode("utf-8").replace("\r\n", "\n")
    sections = re.split(r"^\[(system|user|assistant)\]\s*$", text, flags=re.MULTILINE)
    # ['', 'system', body, 'user', body(, 'assistant', body)]
    names = sections[1::2]
    parts = dict(zip(names, sections[2::2], strict=True))
    if (
        names[:2] != ["system", "user"]
        or names[2:] not in ([], ["assistant"])
        or (sections[0].strip())
    ):
        raise PromptError(
            f"{path.name}: needs a [system] and a [user] section (then optionally [assistant])"
        )
    system = parts["system"].strip()
    user = parts["user"].strip()
    assistant = parts.get("assistant", "").strip()
    if not user.endswith(ITEM) or user.count(ITEM) != 1 or ITEM in system + assistant:
        raise PromptError(f"{path.name}: {ITEM} must end the [user] section (and appear once)")
    return PromptTemplate(
        name=match["name"],
        version=int(match["version"]),
        sha256=hashlib.sha256(raw).hexdigest(),
        system=system,
        user=user,
        path=path,
        assistant=assistant,
    )


def load_prompt(
    name: str, version: int | None = None, directory: Path | None = None
) -> PromptTemplate:
    """The given version of a prompt, or its newest version."""
    folder = directory or prompt_dir()
    found: dict[int, Path] = {}
    for path in folder.glob(f"{name}.v*.txt"):
        match = _FILE.match(path.name)
        if match and match["name"] == name:
            found[int(match["version"])] = path
    if not found:
        raise PromptError(f"no prompt file for {name!r} in {folder}")
    chosen = max(found) if version is None else version
    if chosen not in found:
        raise PromptError(f"prompt {name!r} has no version {chosen}")
    return parse_prompt(found[chosen])


def numbered(lines: list[str]) -> str:
    """Axioms or patterns as a numbered list ("(none)" when empty)."""
    if not lines:
        return "(none)"
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
