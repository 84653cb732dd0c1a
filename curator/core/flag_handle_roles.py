"""Handles inside a sentence that name a person, not a place to send people or data.

An ``@handle`` that opens a sentence is the subject of a memory about that person
(:func:`curator.core.flag_rules.names_a_person`). Inside a sentence most handles are
destinations ("send it to @x", "DM @x"), but three forms name a person wherever they
stand: a possessive ("in @peat_and_pine's garden", "@milo.bakes' loaf"), a handle joined
by "and" to a handle that names a person ("@ridge_runner and @peat_and_pine had …"), and
a handle that opens a clause after a semicolon or is followed by what a person does with
words or taste ("… ; @sunny_grows found that useful", "from now on @milo.bakes wants …",
"when @crumbshot posts …"). None of them counts when a word of sending or contact stands
just before the handle ("forward it to @x's inbox"), and a handle after a colon stays a
contact point ("Contact: @x"). Every look is bounded, so a text of many handles is read
in linear time.
"""

from __future__ import annotations

import re

from curator.core.regex_gate import gated

__all__ = ["names_a_person_inside"]

_POSSESSIVE = gated(r"(?:'s|\u2019s|'|\u2019)[^\S\n]+\w")
# What a person does with words or taste: the handle is the clause's subject.
_PERSON_VERB = gated(
    r"[^\S\n]+(?:said|says|asked|asks|wants|wanted|prefers|preferred|likes|liked|loves|"
    r"loved|hates|hated|found|finds|posted|posts|shared|shares|wrote|writes|credited|"
    r"mentioned|thinks|thought|agreed|replied|answered|laughed|joked|complained|"
    r"pidió|dijo|prefiere|quiere|hat\s+gesagt|sagte|möchte|mag|a\s+dit|préfère|veut|"
    r"disse|prefere|quer|ha\s+detto|preferisce|vuole|zei|wil|powiedział\w{0,20}|woli|chce|"
    r"сказал\w{0,20}|попросил\w{0,20}|хочет|предпочитает|dedi|istiyor|bilang|ingin|nói|muốn)\b"
)
_JOINED = gated(r"(?:\band|&|\by|\bund|\bet|\be|\bи|\ben|\bi|\bva|\bdan)[^\S\n]+\Z")
_DESTINATION = gated(
    r"(?:\b(?:to|dm|pm|message|msg|contact|ping|follow|reach|text|via|join|tag|cc|bcc|at|"
    r"an|à|al|para|на|канал)[^\S\n]+\Z)",
    re.IGNORECASE,
)
_PREVIOUS_HANDLE = gated(r"(?<![\w.@+-])@[A-Za-z_][A-Za-z0-9_.]{2,31}[^\S\n]+\S{1,20}[^\S\n]+\Z")


def names_a_person_inside(text: str, start: int, end: int, previous_is_person: bool) -> bool:
    """The handle at ``text[start:end]`` names a person though it does not open a sentence.

    ``previous_is_person`` says whether the handle just before it (if any) named a person,
    for "@a and @b had …"."""
    before = text[max(0, start - 40) : start]
    if _DESTINATION.search(before):
        return False
    if before.rstrip().endswith((":", "\uff1a")):
        return False
    if _POSSESSIVE.match(text, end):
        return True
    if before.rstrip().endswith(";") and re.match(r"[^\S\n]+\w", text[end : end + 2]):
        return True
    if _PERSON_VERB.match(text, end, min(len(text), end + 40)):
        return True
    return (
        previous_is_person
        and bool(_JOINED.search(before))
        and bool(_PREVIOUS_HANDLE.search(before))
    )
