"""A database failure said once: a lost connection's sentence already says what became of
the work, and nothing after it says otherwise."""

from __future__ import annotations

import pytest

from curator.store.db_errors import explain_database_error
from curator.store.pg_connection import CannotConnect, ConnectionLost

LOST = (
    "the connection to the PostgreSQL server was lost (EOF): the statement may not have run; "
    "try again"
)


@pytest.mark.parametrize("outcome", ["was not done", "was not applied, nothing changed"])
def test_a_lost_connection_is_its_own_sentence_with_no_second_outcome(outcome: str) -> None:
    """Before: "... may not have run; try again; it was not done", which contradicts
    itself (an MCP client read both)."""
    raised = ConnectionLost(LOST)
    for exc in (raised, _wrapped(raised)):
        said = str(explain_database_error(exc, "db", "record() call", outcome=outcome))
        assert said == f"the record() call failed: {LOST}"


def test_a_connection_never_made_says_nothing_was_done() -> None:
    said = str(explain_database_error(CannotConnect("cannot connect to x"), "db", "read"))
    assert said == "the read failed: cannot connect to x; it was not applied, nothing changed"


def _wrapped(inner: BaseException) -> BaseException:
    try:
        raise RuntimeError("while committing") from inner
    except RuntimeError as outer:
        return outer
