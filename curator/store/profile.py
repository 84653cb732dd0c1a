"""Who is reviewing: the reviewer's name, kept in the person's profile, not the database.

Several people may curate one database (a PostgreSQL server shared by a team), so the
name that goes on every decision, relabel and commit cannot live in the database's
``setting`` table: every reviewer would read the same one. It lives in a small JSON file
in the user's configuration folder (one per OS account: the profile), written by the
window's Settings pane. Which name is in force, first match wins:

1. ``$CURATOR_REVIEWER`` (a script, a shared account, a test);
2. the profile's saved name;
3. the OS user name (``getpass.getuser()``), so a decision is never anonymous.

``$CURATOR_CONFIG_DIR`` moves the profile folder (tests, portable installs). A name is
one line of at most :data:`MAX_REVIEWER_CHARS` printable characters; anything else is
refused with one sentence and nothing is saved.
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path

import platformdirs

from curator.core.textsafety import control_problem
from curator.core.userpath import part_path
from curator.errors import CuratorError

REVIEWER_ENV = "CURATOR_REVIEWER"
CONFIG_DIR_ENV = "CURATOR_CONFIG_DIR"
MAX_REVIEWER_CHARS = 80
FALLBACK_REVIEWER = "reviewer"
"""The name when neither the environment, the profile nor the OS names anyone."""


def profile_path() -> Path:
    """The profile file (it may not exist yet)."""
    base = os.environ.get(CONFIG_DIR_ENV) or platformdirs.user_config_dir(
        "memory-curator", appauthor=False
    )
    return Path(base) / "profile.json"


def check_reviewer(name: str, source: str = "the reviewer name") -> str:
    """``name`` without surrounding blanks, or CuratorError (one line) when unusable."""
    cleaned = name.strip()
    if not cleaned:
        raise CuratorError(f"{source} is empty; give the name your decisions should carry")
    problem = control_problem(cleaned, source)
    if problem is not None or "\n" in cleaned:
        raise CuratorError(problem or f"{source} must be one line")
    if len(cleaned) > MAX_REVIEWER_CHARS:
        raise CuratorError(
            f"{source} is {len(cleaned)} characters; at most {MAX_REVIEWER_CHARS} are allowed"
        )
    return cleaned


def saved_reviewer() -> str | None:
    """The name saved in the profile, or None (no profile, or an unreadable one)."""
    try:
        doc = json.loads(profile_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = doc.get("reviewer") if isinstance(doc, dict) else None
    if not isinstance(name, str):
        return None
    try:
        return check_reviewer(name)
    except CuratorError:
        return None  # a hand-edited profile never blocks a decision: the next rule applies


def save_reviewer(name: str | None) -> None:
    """Save the profile's name (None or "" removes it: the OS user name applies again).

    Written beside the file and renamed into place, so a crash never leaves half a file.
    """
    path = profile_path()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            doc = {}
    except (OSError, ValueError):
        doc = {}
    if name is None or not name.strip():
        doc.pop("reviewer", None)
    else:
        doc["reviewer"] = check_reviewer(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = part_path(path)
        part.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        part.replace(path)
    except OSError as exc:
        raise CuratorError(f"the profile {path} could not be written ({exc.strerror})") from None


def os_user() -> str:
    """The OS account's name, or :data:`FALLBACK_REVIEWER` when the system names none."""
    try:
        return check_reviewer(getpass.getuser())
    except (CuratorError, OSError, KeyError, ImportError):
        return FALLBACK_REVIEWER


def reviewer_name() -> str:
    """The name in force: ``$CURATOR_REVIEWER``, else the profile's, else the OS user's.

    An unusable ``$CURATOR_REVIEWER`` is refused (CuratorError), never silently replaced:
    a script that set it means its decisions to carry that name.
    """
    env = os.environ.get(REVIEWER_ENV)
    if env is not None and env.strip():
        return check_reviewer(env, f"${REVIEWER_ENV}")
    return saved_reviewer() or os_user()
