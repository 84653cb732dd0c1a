"""The exceptions that carry a message meant for the user, with an exit code for the CLI."""

from __future__ import annotations

from curator.core.textsafety import one_line


class CuratorError(Exception):
    """An expected failure explained in one readable sentence (no traceback shown).

    ``exit_code`` follows the CLI's convention: 1 when some of the work was rejected,
    2 for usage errors and unusable input (bad model file, bad arguments).
    """

    exit_code = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        # Every message is one line that shows its control characters, never obeys them:
        # a path or a value quoted in it may carry an ESC sequence, a line break or a
        # direction override, and may be as long as a file (see textsafety.one_line).
        super().__init__(one_line(message))
        if exit_code is not None:
            self.exit_code = exit_code


class ConflictError(CuratorError):
    """Something changed elsewhere since it was read; nothing was applied."""

    exit_code = 1
