"""The agent's identity text and constitutional axioms, saved as numbered versions."""

from __future__ import annotations

from dataclasses import dataclass

from curator.core.textsafety import control_problem, strip_blanks, visible
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.models import IdentityVersion


@dataclass(frozen=True)
class Identity:
    version: int
    identity_text: str
    axioms: tuple[str, ...]

    @property
    def system_prompt(self) -> str:
        """Identity plus numbered axioms: the distillation system prompt's rules."""
        axioms = "\n".join(f"{i}. {a}" for i, a in enumerate(self.axioms, 1))
        return f"{self.identity_text.strip()}\n\nConstitutional axioms:\n{axioms}"


EMPTY_IDENTITY = Identity(version=0, identity_text="", axioms=())


def current_identity(store: Store) -> Identity:
    """The newest version, or an empty identity (version 0) when none was saved yet."""
    query = IdentityVersion.select().order_by(IdentityVersion.version.desc())
    row = query.first(store.db)
    if row is None:
        return EMPTY_IDENTITY
    return Identity(row.version, row.identity_text, tuple(row.axioms))


def save_identity(store: Store, identity_text: str, axioms: list[str], note: str = "") -> Identity:
    """Save a new version (versions are never edited in place).

    Refused (``CuratorError``, nothing saved) when the identity, an axiom or the note
    holds a control character or a lone surrogate: they go into the agent's system prompt
    and before a person's eyes (:mod:`curator.core.textsafety`); and when the identity or
    an axiom shows nothing (zero-width characters only).
    """
    # blanks off the ends; a control there stays, refused below by name
    cleaned = [kept for a in axioms if (kept := strip_blanks(a))]
    for where, text in (
        ("the identity text", identity_text),
        *((f"axiom {n}", a) for n, a in enumerate(cleaned, 1)),
        ("the note", note),
    ):
        problem = control_problem(text, where)
        if problem is not None:
            raise CuratorError(problem)
        if where != "the note" and not visible(text):  # the agent would get nothing
            raise CuratorError(f"{where} shows nothing (only blanks or invisible characters)")
    with store.write():
        last = IdentityVersion.select().order_by(IdentityVersion.version.desc()).first()
        version = 1 if last is None else last.version + 1
        IdentityVersion.create(
            version=version, identity_text=identity_text, axioms=cleaned, note=note
        )
    return Identity(version, identity_text, tuple(cleaned))


def identity_versions(store: Store) -> list[IdentityVersion]:
    query = IdentityVersion.select().order_by(IdentityVersion.version.desc())
    return list(query.bind(store.db))
