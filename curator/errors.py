"""The exceptions that carry a message meant for the user, with an exit code for the CLI."""

from __future__ import annotations

from curator.core.textsafety import escape_controls


class CuratorError(Exception):
    """An expected failure explained in one readable sentence (no traceback shown).

    ``exit_code`` follows the CLI's convention: 1 when some of the work was rejected,
    2 for usage errors and unusable input (bad model file, bad arguments).
    """

    exit_code = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        # Every message shows its control characters, never obeys them: a path or a text
        # quoted in it may carry an ESC sequence, and an API user prints the message.
        super().__init__(escape_controls(message))
        if exit_code is not None:
            self.exit_code = exit_code


class ConflictError(CuratorError):
    """Something changed elsewhere since it was read; nothing was applied."""

    exit_code = 1
