"""The order the suite's files are handed to the workers in: the slowest first.

With ``--dist loadfile`` each file is one unit of work, handed to whichever worker is
free, in collection order. The slowest came last (the top-level files, the PyInstaller
build among them), and one worker ran them for minutes after the others had run out of
work.
"""

from __future__ import annotations

import pytest

SLOWEST_FILES = (
    "tests/test_bundle.py",
    "tests/llm/test_http_backend.py",
    "tests/reliability/test_signals.py",
    "tests/test_packaging.py",
    "tests/llm/test_prompt_states_attack.py",
    "tests/llm/test_lazy_grammar.py",
    "tests/reliability/test_kill_import.py",
    "tests/reliability/test_hostile_models.py",
    "tests/llm/test_llm_backend.py",
    "tests/mcp/test_mcp_stdio_framing.py",
    "tests/llm/test_prompt_states.py",
    "tests/core/test_flag_learned_train.py",
    "tests/core/test_poison_heldout.py",
    "tests/review/test_review_kill.py",
    "tests/llm/test_guard_opinion.py",
)
"""The files that take longest (``--durations``, wall time on two cores), longest first."""


def slowest_first(items: list[pytest.Item]) -> None:
    """Sort ``items`` in place: the files of :data:`SLOWEST_FILES` first, in its order;
    the rest after them in their own order."""
    rank = {path: i for i, path in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
