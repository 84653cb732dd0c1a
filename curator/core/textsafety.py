"""The control-character policy: what text may be stored and how stored text is printed.

Pattern text goes into the agent's prompt and every stored text is shown to a reviewer.
A C0 or C1 control character in it is never content: ``ESC [ 8 m`` hides the text after
it on a terminal, ``ESC [ 2 K`` erases the line it is on, NUL truncates the text in C
libraries, and a reviewer reading ``curator review`` would approve what they cannot see.

The policy, in one place:

* **Intake refuses** (never silently strips): a text that contains a control character
  other than newline, tab and CRLF is rejected with the character, its code point and its
  position (:func:`control_problem`, :func:`require_clean`). Files report it as
  ``FILE:LINE: reason`` like every other bad line; an edit is refused with one line and
  nothing changes. Refusing rather than escaping keeps the text the person meant: they
  fix the source and import again, and no silently rewritten text reaches Knowledge.
* **Output escapes**: a database written before this policy may hold such text. Every
  CLI printer goes through :func:`escape_controls`, which writes each control as a
  visible ``\\xNN`` (``\\x1b``), so a terminal never receives one from stored text.
* A lone carriage return counts as a control (it moves the cursor back over the line,
  hiding what precedes it). CR followed by LF is a Windows line end, not a trick: logs
  written on Windows carry it inside their messages, and refusing it would refuse their
  episodes (and stripping it would change their content hashes, so a re-import of a file
  imported earlier would add every such episode again). It is stored and printed as is.

This module imports nothing from Qt or the store: the window, the CLI and the pipeline
all use it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = [
    "CONTROLS",
    "LAYOUT",
    "MAX_MESSAGE_CHARS",
    "NAME_BREAKERS",
    "UnsafeText",
    "as_one_line",
    "control_name",
    "control_problem",
    "escape_controls",
    "escape_json_controls",
    "has_controls",
    "one_line",
    "pattern_line",
    "require_clean",
    "strip_blanks",
    "visible",
]

#: Every C0 control except tab (U+0009), newline (U+000A) and the CR of a CRLF line end,
#: DEL, and every C1 control.
CONTROLS: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")

_NAMES: Final = {
    0x00: "NUL",
    0x07: "BEL",
    0x08: "BS",
    0x0B: "VT",
    0x0C: "FF",
    0x09: "tab",
    0x0A: "line feed",
    0x0D: "CR",
    0x1B: "ESC",
    0x7F: "DEL",
    0x85: "NEL",
    0x9B: "CSI",
    0x2028: "line separator",
    0x2029: "paragraph separator",
    0x202E: "right-to-left override",
}


class UnsafeText(ValueError):
    """A text that contains a control character; the message says which and where."""


def has_controls(text: str) -> bool:
    """Whether ``text`` contains a control character the policy refuses."""
    return CONTROLS.search(text) is not None


def control_name(char: str) -> str:
    """``U+001B (ESC)``: the code point, with its usual name where it has a short one."""
    code = ord(char)
    name = _NAMES.get(code)
    return f"U+{code:04X}" + (f" ({name})" if name else "")


def control_problem(text: str, where: str = "the text") -> str | None:
    """The reason ``text`` is refused, or ``None`` when it is clean.

    The position is 1-based in characters, so a person can find it in an editor. A lone
    surrogate (half of a pair, which no UTF-8 text can hold: storing it failed with a raw
    codec error) is refused the same way.
    """
    found = CONTROLS.search(text)
    if found is None:
        half = _SURROGATES.search(text)
        if half is None:
            return None
        return (
            f"{where} contains a lone surrogate, U+{ord(half.group()):04X}, at character "
            f"{half.start() + 1} (half of a character pair, which UTF-8 cannot hold)"
        )
    return (
        f"{where} contains the control character {control_name(found.group())} at "
        f"character {found.start() + 1} (only newline, tab and CRLF line ends are allowed)"
    )


_SURROGATES: Final = re.compile("[\ud800-\udfff]")


_UNSEEN_CATEGORIES: Final = frozenset({"Cf", "Mn", "Me"})
"""Format characters (zero-width spaces, a byte-order mark, tags) and marks, which show
nothing without a letter to sit on (a variation selector is a mark too)."""
_BLANK_LETTERS: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and a symbol drawn as nothing: the Hangul fillers and the blank braille cell."""
_IGNORABLE_RANGES: Final = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), first and last of
each range: what a renderer draws as nothing whatever the font, the code points not yet
assigned among them included (U+2065, U+FFF0-U+FFF8, U+E0080 and up), which no category
test finds (they are ``Cn``)."""
IGNORABLE: Final = frozenset(
    chr(c) for first, last in _IGNORABLE_RANGES for c in range(first, last + 1)
)
_SHOWN_FORMATS: Final = frozenset(
    "\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u08e2\U000110bd\U000110cd"
)
"""Format characters drawn as a sign (the prepended concatenation marks: an Arabic or
Kaithi number sign)."""


SHOWS_NOTHING: Final = "shows nothing: only blanks and invisible characters"
"""Why a pattern that :func:`visible` finds empty is refused: the reviewer would see a
blank row while the agent's prompt got the invisible characters."""


def visible(text: str) -> bool:
    """Whether ``text`` shows anything: not only blanks, format characters, lone marks
    and blank letters (an episode, an identity or an axiom of nothing)."""
    return any(
        c in _SHOWN_FORMATS
        or not (
            c.isspace()
            or c in _BLANK_LETTERS
            or c in IGNORABLE
            or c == "\ufffc"  # the object replacement character, for an object not there
            or unicodedata.category(c) in _UNSEEN_CATEGORIES
        )
        for c in text
    )


#: What ends a line inside a pattern: CRLF, CR, LF, the Unicode line and paragraph
#: separators, and tabs (a tab lays text out; a pattern is a run of words).
_PATTERN_BREAKS: Final = re.compile("\r\n|[\r\n\t\u2028\u2029]")


def pattern_line(text: str) -> str:
    """``text`` as the one line a pattern is: its line breaks and tabs become single spaces.

    A pattern is one item of the agent's prompt list: every review view shows it on one
    line, so a line break kept in it would reach the agent as structure the reviewer
    never saw (``\\n## Identity`` opens a section in the prompt). Edits, the model's
    patterns and the commit all go through this one rule. Other controls (VT, FF,
    U+001C-U+001E, NEL) stay, where :func:`control_problem` refuses them by name.
    """
    parts = (strip_blanks(part) for part in _PATTERN_BREAKS.split(text))
    return " ".join(part for part in parts if part)


#: Every character ``str.isspace`` knows except the controls :data:`CONTROLS` refuses
#: (VT, FF, U+001C-U+001F, NEL): what may be taken off a line's ends (written out, not
#: computed at every start; a test checks it against ``str.isspace``).
BLANKS: Final = (
    "\t\n \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def strip_blanks(text: str) -> str:
    """``text`` without blanks at its ends; a control there stays, to be refused by name
    (``str.strip`` took VT or NEL off the end of a line unseen)."""
    return text.strip(BLANKS)


def require_clean(text: str, where: str = "the text") -> str:
    """Return ``text`` unchanged, or raise :class:`UnsafeText` with the reason."""
    problem = control_problem(text, where)
    if problem is not None:
        raise UnsafeText(problem)
    return text


def escape_controls(text: str) -> str:
    """``text`` with every refused control written as a visible ``\\xNN`` escape.

    Newline and tab stay as they are (they lay out the output); everything else a
    terminal would act on (ESC sequences, CR, NUL, C1 controls) is shown, not obeyed.
    """
    return CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


#: What else breaks a line, turns it around or cannot be seen: line and paragraph
#: separators, the marks and overrides of text direction (a right-to-left override shows
#: "exe.txt" as "txt.exe"), the invisible format characters (zero-width space and
#: joiners, soft hyphen, word joiner, byte order mark, tags: "te\u200bxt" reads "text"),
#: the rest of what draws as nothing (the default-ignorable code points, assigned or not,
#: and the blank letters; not the variation selectors, which follow an emoji or an
#: ideograph in ordinary writing), and lone surrogates (no UTF-8 encoder writes them, so
#: printing the message failed).
LAYOUT: Final = re.compile(
    "[\n\t\r\u2028\u2029\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800\u3164\ufeff\uffa0\ufff0-\ufffc"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e00ff\U000e01f0-\U000e0fff"
    "\ud800-\udfff]"
)
_LAYOUT_NAMES: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

MAX_MESSAGE_CHARS: Final = 1000
"""The longest a one-line message gets: a quoted 100,000-character value is cut in its
middle, so the message's start (what failed) and end (what to do) both stay."""


def one_line(text: str) -> str:
    """``text`` as one line a person can read and print: every control, line break, tab,
    direction mark, invisible character and lone surrogate written as a visible escape
    (``\\n``, ``\\x1b``, ``\\u202e``, ``\\u200b``, ``\\ud800``), and at most
    :data:`MAX_MESSAGE_CHARS` characters, cut in the middle."""
    shown = LAYOUT.sub(
        lambda m: _LAYOUT_NAMES.get(m.group()) or _escaped(m.group()),
        escape_controls(text.replace("\r\n", "\\r\\n")),
    )
    if len(shown) > MAX_MESSAGE_CHARS:
        keep = MAX_MESSAGE_CHARS - 40
        shown = f"{shown[: keep * 2 // 3]} … {shown[-(keep - keep * 2 // 3) :]}"
    return shown


#: What a name on one line of a table must not hold: line breaks and tabs, and the marks
#: and overrides of text direction. Joiners and tags stay: an emoji family is joined by
#: U+200D, a flag of Scotland is made of tags, and Persian writes U+200C inside words.
NAME_BREAKERS: Final = re.compile(
    "[\n\t\r\u0085\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def as_one_line(name: str) -> str:
    """A name (a chat's title, a channel) for one line of a table: line breaks and tabs as
    spaces, direction marks left out."""
    return NAME_BREAKERS.sub(lambda m: " " if m.group() in _LINE_BREAKS else "", name).strip()


_LINE_BREAKS: Final = "\n\t\r\u0085\u2028\u2029"


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape_json_controls(document: str) -> str:
    """JSON text with DEL and C1 controls as ``\\u00XX`` escapes (the same document).

    ``json.dumps(..., ensure_ascii=False)`` escapes C0 controls but writes DEL and C1
    controls as they are; they can only occur inside strings, where ``\\u00XX`` is the
    same character, so the parsed document does not change.
    """
    return CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", document)
