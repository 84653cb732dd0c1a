"""pg_dump and pg_restore get the connection without any secret in their command line.

``ps`` shows every user's command lines. The password moved to ``PGPASSWORD`` only in its
``user:password@`` form; ``?password=`` (which libpq reads as well, and ``$CURATOR_DB``
accepts) went through to pg_dump's argument list as it was.
"""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from curator.errors import CuratorError
from curator.store.pg_backup import _tool_env
from curator.store.pg_url import libpq_keywords

BASE = "postgresql://ana@db.example:5433/memory"


def _forms(password: str) -> list[str]:
    encoded = quote(password, safe="")
    return [
        f"postgresql://ana:{encoded}@db.example:5433/memory?sslmode=require",
        f"{BASE}?password={encoded}&sslmode=require",
        f"{BASE}?sslmode=require&pass%77ord={encoded}",
    ]


@settings(max_examples=60, deadline=None)
# a NUL is refused before any tool runs (check_postgres_url), as libpq refuses it
@given(
    st.text(
        alphabet=st.characters(
            codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"
        ),
        min_size=1,
    )
)
def test_no_form_of_the_password_reaches_the_command_line(password: str) -> None:
    for url in _forms(password):
        shown, env = _tool_env(url)
        assert env["PGPASSWORD"] == password
        params = conninfo_to_dict(shown)
        assert "password" not in params
        assert params == {
            "host": "db.example",
            "port": "5433",
            "user": "ana",
            "dbname": "memory",
            "sslmode": "require",
        }


def test_a_url_without_a_password_is_passed_as_it_is() -> None:
    shown, env = _tool_env(f"{BASE}?sslmode=require")
    assert shown == f"{BASE}?sslmode=require"
    assert env.get("PGPASSWORD") == os.environ.get("PGPASSWORD")


@pytest.mark.parametrize("key", ["sslpassword", "oauth_client_secret"])
def test_a_secret_with_no_environment_variable_is_refused_without_showing_it(key: str) -> None:
    if key not in (libpq_keywords() or ()):
        pytest.skip(f"this libpq does not know {key}")
    with pytest.raises(CuratorError) as caught:
        _tool_env(f"{BASE}?{key}=Sekr1t-Value")
    message = str(caught.value)
    assert "Sekr1t-Value" not in message and key in message and "service file" in message
