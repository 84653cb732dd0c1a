"""PostgreSQL URLs: which locations are ones, whether one may be used, and how it is shown.

A database is named by a SQLite file's path or a ``postgresql://`` URL (``--db``,
``$CURATOR_DB``, the profile, ``curator copy``, ``Curator(db=...)``); every URL passes
:func:`check_postgres_url` before anything connects, and every message shows it through
:func:`display_url`, so a password is refused where it would leak (an argument shows in
``ps``, the profile is a plain file) and never printed where it is accepted. What libpq
would refuse by quoting a piece of the URL, the password perhaps, is refused here first
without quoting it (:func:`_malformed`).
"""

from __future__ import annotations

import functools
import os
from urllib.parse import SplitResult, parse_qsl, unquote, unquote_to_bytes, urlsplit

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex
from curator.errors import CuratorError

POSTGRES_SCHEMES = ("postgresql", "postgres")

SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")

PASSWORD_FIX = (
    "put the password in ~/.pgpass (chmod 600), in $PGPASSWORD, or in a service file "
    "(?service=NAME in ~/.pg_service.conf)"
)


SECRET_KEYS = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)
"""libpq's parameters whose values are secrets: never shown, and refused where a password is."""


@functools.cache
def libpq_keywords() -> frozenset[str] | None:
    """The connection keywords of the libpq the driver loads (a newer one knows more);
    None where the driver cannot be asked (no connection can be made then either: no
    parameter is judged, and no value shown)."""
    try:
        # through the driver's loader: the command line marks psycopg absent until a
        # database is opened (pg_driver.hold_back), and a plain import would then find
        # no driver, judge no parameter, and libpq would quote a password's tail
        from curator.store import pg_driver

        pq = pg_driver.load().pq
        return frozenset(o.keyword.decode() for o in pq.Conninfo.get_defaults()) or None
    except Exception:  # no driver, or one that cannot load its libpq
        return None


PROFILE_SOURCE = "the profile"
"""The source of a database chosen in Settings and kept in the per-user profile
(:mod:`curator.store.profile`); a password in its URL is refused as on the command line:
the profile is a plain file."""


def is_postgres_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    text = os.fspath(location)
    if not isinstance(text, str):
        return False
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in POSTGRES_SCHEMES


_BAD_ESCAPE = regex(r"%(?![0-9A-Fa-f]{2})|%00", kept_in=TEXT_PATTERNS_FILE)
_SPACE = regex(r"[ \t\n\v\f\r]", kept_in=TEXT_PATTERNS_FILE)


def _malformed(url: str) -> str:
    """What libpq would refuse in ``url`` with the offending token, which may be the
    password, quoted in its message ("" when nothing): so it is refused here, unquoted.

    A password holding an unescaped ``@``, ``/``, ``?`` or ``#`` ends the user part
    where URL readers disagree (libpq at the first ``@`` or ``/``, Python at the last
    ``@``): the rest of the password is then read as a host, a port, a database name or
    a parameter, and every error names it. An ``@`` is therefore refused anywhere but
    once before the host, and a port that is no number without quoting it. A ``#``
    ends the URL for Python but not for libpq (``?password=a#b`` is the password
    ``a#b`` to libpq and ``a`` to Python): refused wherever it is. A parameter without
    ``=``, or one libpq does not know (an empty name too), is the rest of a value that
    held an ``&`` (``password=ab&cd=x``): refused too, named only where no secret comes
    before it (``sslmod=require`` is a typo worth naming)."""
    if "#" in url:
        return "holds a # (write it as %23)"
    after_scheme = url.partition("://")[2]
    ends = [at for at in map(after_scheme.find, "/?#") if at >= 0]
    authority = after_scheme[: min(ends, default=len(after_scheme))]
    beyond = after_scheme[len(authority) :]
    if authority.count("@") > 1 or "@" in beyond:
        return (
            "has an @ where only the one before the host may be (write an @ of a user "
            "name, password or database name as %40, and a / ? or # of a password as "
            "%2F %3F %23)"
        )
    query = after_scheme.partition("?")[2]
    if query and any("=" not in part for part in query.split("&")):
        return "has a parameter without = (write an & inside a value as %26)"
    known = libpq_keywords()
    keys = [(unquote(part.partition("=")[0]), "") for part in query.split("&")] if query else []
    for (key, _), hidden in zip(keys, _after_secret(keys), strict=True):
        if known is not None and key not in known:
            named = "" if hidden or not key.isidentifier() else f" ({key!r})"
            return f"has a parameter libpq does not know{named} (write an & inside a value as %26)"
    if _SPACE.search(url):
        return "holds a space (write it as %20)"
    if _BAD_ESCAPE.search(url):
        return "has a % that starts no %XX escape, or a %00 (write a literal % as %25)"
    try:
        unquote_to_bytes(url).decode("utf-8")  # the driver decodes every value
    except UnicodeDecodeError:
        return "has %XX escapes that spell no UTF-8 text"
    return ""


def check_postgres_url(url: str, source: str, *, password_allowed: bool | None = None) -> str:
    """``url`` made canonical (``postgresql://``), or a one-line usage error.

    A password given on the command line (``--db``) shows in ``ps`` and in the shell's
    history, so it is refused with the ways that keep it private, and so is one saved in
    the profile (:data:`PROFILE_SOURCE`, a plain file); ``$CURATOR_DB`` is only readable
    by its user and is accepted. TLS parameters (``sslmode``, ``sslrootcert``...)
    pass through to libpq unchanged; an ``sslmode`` libpq does not know is refused here
    with the list, rather than by libpq after a connection attempt.

    ``password_allowed`` overrides the rule by source: the store checks every URL it is
    given (:class:`~curator.store.db.Store`, which the Python API opens directly) with
    a password allowed, as a program's own string shows in no process list.
    """
    flaw = _malformed(url)
    if flaw:
        raise CuratorError(f"the PostgreSQL URL given by {source} {flaw}; nothing was opened")
    try:
        parts = urlsplit(url)
        password = parts.password
        query = parse_qsl(parts.query, keep_blank_values=True)
        if "," not in parts.netloc:  # a list of hosts (h1:5432,h2) is libpq's to read
            _ = parts.port  # raises ValueError for a port that is no number
    except ValueError:
        # Python's message quotes the token (a port that is no number may be the rest
        # of a password holding a / ? or #): it is never shown.
        raise CuratorError(
            f"the PostgreSQL URL given by {source} is not valid: its host, port or "
            "brackets cannot be read (a port is a number; a : / ? # or @ of a user name "
            "or password is written %3A %2F %3F %23 %40); nothing was opened"
        ) from None
    named_password = password is not None or any(k in SECRET_KEYS for k, _ in query)
    if password_allowed is None:
        password_allowed = source.startswith("$") and source != PROFILE_SOURCE
    if named_password and password_allowed:
        pass
    elif named_password and source == PROFILE_SOURCE:
        raise CuratorError(
            "a password in the database URL cannot be kept in the profile, a plain "
            f"file: {PASSWORD_FIX}"
        )
    elif named_password:  # an argument: --db, SOURCE...
        raise CuratorError(
            f"a password in the {source} URL would show in the process list and the shell "
            f"history; nothing was opened: {PASSWORD_FIX}"
        )
    for (key, value), hidden in zip(query, _after_secret(query), strict=True):
        if key == "sslmode" and value not in SSL_MODES:
            shown = "***" if hidden else repr(value)
            raise CuratorError(
                f"sslmode={shown} in the PostgreSQL URL is not one of {', '.join(SSL_MODES)}"
            )
    if not parts.path.strip("/") and not any(k in ("dbname", "service") for k, _ in query):
        raise CuratorError(
            f"the PostgreSQL URL given by {source} names no database "
            "(postgresql://USER@HOST:PORT/NAME)"
        )
    # Only the scheme changes: urlunsplit would drop the "//" of an empty host (the
    # local socket's postgresql:///NAME), which libpq then cannot read.
    return "postgresql" + url[url.index("://") :]


def split_url(url: str) -> SplitResult:
    """``urlsplit(url)``, also for a host with a ``[`` and no ``]`` (or the reverse),
    which ``urlsplit`` refuses: the URL is still shown and read, never a crash."""
    try:
        return urlsplit(url)
    except ValueError:
        return urlsplit(url.replace("[", "%5B").replace("]", "%5D"))


def without_password(text: str, url: str) -> str:
    """``text`` (a driver's message about ``url``) with the URL's password, as written and
    decoded, shown as ``***``: whatever the driver's message quotes, the password is not
    shown."""
    parts = split_url(url)
    secrets_in_url = [parts.password or ""]
    query = parse_qsl(parts.query, keep_blank_values=True)
    secrets_in_url += [v for k, v in query if k in SECRET_KEYS]
    for secret in secrets_in_url:
        for written in {secret, unquote(secret)}:
            if written:
                text = text.replace(written, "***")
    # A value after a secret may be the secret's rest (see _after_secret): hidden where
    # the driver quotes it ("cd" in 'invalid integer value "cd" for ... "port"'), and
    # anywhere once it is long enough not to stand for digits of a port or an address.
    for (key, value), hidden in zip(query, _after_secret(query), strict=True):
        if hidden and key not in SECRET_KEYS and value:
            text = text.replace(f'"{value}"', '"***"')
            if len(value) >= 4:
                text = text.replace(value, "***")
    return text


def _after_secret(query: list[tuple[str, str]]) -> list[bool]:
    """For each parameter, whether its value is hidden: a secret's, and every value after
    one (``password=ab&port=cd`` may be the password ``ab&port=cd`` unescaped)."""
    hidden, seen = [], False
    for key, _ in query:
        seen = seen or key in SECRET_KEYS
        hidden.append(seen)
    return hidden


def _shown_query(query: str) -> str:
    """A query for messages: a secret's value and the values after it (see
    :func:`_after_secret`), and a parameter libpq does not know (the rest of a value that
    held an ``&``), are not shown."""
    pairs = parse_qsl(query, keep_blank_values=True)
    known = libpq_keywords()
    if known is None:  # nothing can be judged: no value is shown
        return "&".join(f"{k}=***" for k, _ in pairs)
    return "&".join(
        "***" if k not in known else f"{k}=***" if hidden else f"{k}={v}"
        for (k, v), hidden in zip(pairs, _after_secret(pairs), strict=True)
    )


def display_url(url: str) -> str:
    """``url`` for messages: the user and host stay, a password never shows."""
    parts = split_url(url)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = _shown_query(parts.query)
    shown = f"{parts.scheme}://{netloc}{parts.path}"  # "//" kept for an empty host
    shown += f"?{query}" if query else ""
    # libpq reads no fragment: a "#" typed into the query keeps its password hidden too
    fragment = _shown_query(parts.fragment)
    return shown + (f"#{fragment}" if fragment else "")


CONNECT_TIMEOUT_S = 10
"""How long a connection may take before the server is given up."""


def url_settings(url: str) -> dict[str, str]:
    """What the URL, and libpq's variables (``PGOPTIONS``, ``PGCONNECT_TIMEOUT``,
    ``PGAPPNAME``), set of the parameters the curator also sets. Given as arguments, the
    curator's replaced them: a URL's ``options=-csearch_path=other`` put the tables in
    ``public``, and its ``connect_timeout`` was 10 s whatever it said."""
    from curator.store import pg_driver

    try:
        parsed = pg_driver.load().conninfo.conninfo_to_dict(url)
    except Exception:  # libpq says what is wrong with the URL when it connects
        parsed = {}
    given = {key: str(value) for key, value in parsed.items() if value is not None}
    service = given.get("service") or os.environ.get("PGSERVICE")
    if service:  # a service entry's settings come after the URL's, before the variables'
        for key, value in _service_entry(service).items():
            given.setdefault(key, value)
    for key, variable in (
        ("options", "PGOPTIONS"),
        ("connect_timeout", "PGCONNECT_TIMEOUT"),
        ("application_name", "PGAPPNAME"),
    ):
        if not given.get(key) and os.environ.get(variable):
            given[key] = os.environ[variable]
    return given


def _service_entry(name: str) -> dict[str, str]:
    """The settings of service ``name`` in the first connection service file that has
    it, as libpq looks: ``$PGSERVICEFILE`` or ``~/.pg_service.conf``, then
    ``$PGSYSCONFDIR/pg_service.conf`` (empty: none, or a file that cannot be read; libpq
    then says what is wrong when it connects)."""
    import configparser
    from pathlib import Path

    own = os.environ.get("PGSERVICEFILE") or str(Path.home() / ".pg_service.conf")
    system = os.environ.get("PGSYSCONFDIR", "/etc/postgresql-common")
    for path in (own, str(Path(system) / "pg_service.conf")):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys as written
        try:
            if not parser.read(path, encoding="utf-8") or not parser.has_section(name):
                continue
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        return dict(parser.items(name))
    return {}


def whole_seconds(text: str | None) -> int | None:
    """A positive whole number of seconds, or None (no deadline, 0, or not a number:
    every connection keeps one, the curator's own)."""
    try:
        seconds = int(str(text).strip())
    except ValueError:
        return None
    return seconds if seconds > 0 else None
