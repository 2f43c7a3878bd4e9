"""Where a JDBC sink connects: a PostgreSQL JDBC URL (or a libpq URL) read into the keywords psycopg takes.

Accepted forms (``[...]`` optional; a host may be an IPv6 address in brackets, several hosts are tried in order):

- ``jdbc:postgresql://host[:port][,host2[:port2]...]/[database][?property=value&...]`` (PostgreSQL's JDBC
  driver's form), ``jdbc:postgresql:database``, ``jdbc:postgresql:/``: host ``localhost``, port 5432;
- ``postgresql://[user[:password]@]host[:port][,...]/[database][?keyword=value&...]`` (libpq's form, also
  ``postgres://``), which is what ``scripts/postgres.sh`` prints.

Without a database the server's default applies (the user's name). The JDBC driver's properties map to libpq's
keywords: ``user``, ``password``, ``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``, ``ssl=true``
(``sslmode=verify-full``, as the driver does), ``connectTimeout`` (``connect_timeout``, seconds),
``ApplicationName`` (``application_name``), ``currentSchema`` (the session's ``search_path``), ``options``,
``targetServerType`` (``any``, ``primary``, ``secondary``, ``preferSecondary``), ``tcpKeepAlive``; libpq's own
keywords are taken as they are. Other JDBC properties raise ``ValueError`` naming them.

The password is kept apart from everything shown: :attr:`Endpoint.display` is the URL without it, and
``repr`` never includes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

JDBC_PREFIX = "jdbc:postgresql:"
LIBPQ_PREFIXES = ("postgresql://", "postgres://")
DEFAULT_PORT = 5432

LIBPQ_KEYWORDS = frozenset(
    {
        "application_name",
        "channel_binding",
        "client_encoding",
        "connect_timeout",
        "gssencmode",
        "keepalives",
        "keepalives_count",
        "keepalives_idle",
        "keepalives_interval",
        "options",
        "sslcert",
        "sslcrl",
        "sslkey",
        "sslmode",
        "sslrootcert",
        "target_session_attrs",
        "tcp_user_timeout",
    }
)
"""libpq's connection keywords a URL's query may set (besides user, password, host, port and dbname)."""

_TARGETS = {
    "any": "any",
    "primary": "read-write",
    "master": "read-write",
    "secondary": "standby",
    "preferSecondary": "prefer-standby",
}

_JDBC_NAMES = {
    "connectTimeout": "connect_timeout",
    "ApplicationName": "application_name",
    "tcpKeepAlive": "keepalives",
}


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` is a PostgreSQL JDBC URL or a libpq URL (see the module docstring)."""
    return url.startswith(JDBC_PREFIX) or url.startswith(LIBPQ_PREFIXES)


@dataclass(frozen=True)
class Endpoint:
    """A parsed URL: the hosts with their ports, the database (``None``: the server's default), the user and
    password given in it (``None`` when not), and further libpq keywords. ``repr`` shows no password."""

    hosts: tuple[tuple[str, int], ...]
    database: str | None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    keywords: tuple[tuple[str, str], ...] = ()
    display: str = ""
    """The URL as given, without its password (for messages, ``repr`` and ``panes explain``)."""

    def where(self) -> str:
        """The hosts as ``host:port`` (joined by commas) and the database, for messages."""
        hosts = ",".join(f"{host}:{port}" for host, port in self.hosts)
        return f"{hosts}/{self.database or ''}"


def parse_url(url: str) -> Endpoint:
    """``url`` read as the module docstring says; ``ValueError`` for another kind of URL (panes writes PostgreSQL,
    through psycopg), a malformed one, or a JDBC property panes does not know."""
    if not isinstance(url, str) or not url:
        raise ValueError(f"the JDBC URL must be a non-empty string, got {url!r}")
    if url.startswith(JDBC_PREFIX):
        rest = url[len(JDBC_PREFIX) :]
        jdbc = True
        if not rest.startswith("//"):
            # jdbc:postgresql:database or jdbc:postgresql:/ (the local server)
            rest = "//localhost/" + rest.lstrip("/")
    elif url.startswith(LIBPQ_PREFIXES):
        rest = url[url.index("//") :]
        jdbc = False
    else:
        scheme = url.split("//", 1)[0] if "//" in url else url.split(":", 1)[0]
        raise ValueError(
            f"panes writes PostgreSQL, through psycopg: the URL must be a PostgreSQL JDBC URL "
            f"(jdbc:postgresql://host:port/database) or a libpq URL (postgresql://host:port/database), not "
            f"{scheme}... ({_hide_userinfo(url)})"
        )
    body, _, query = rest[2:].partition("?")
    authority, _, path = body.partition("/")
    userinfo, at, hostlist = authority.rpartition("@")
    user: str | None = None
    password: str | None = None
    if at:
        if jdbc:
            raise ValueError(
                "a JDBC URL has no user@ part: give the user and password as ?user=...&password=... or with "
                "with_user_name(...) and with_password(...)"
            )
        name, colon, secret = userinfo.partition(":")
        user = unquote(name) or None
        password = unquote(secret) if colon else None
    hosts = _hosts(hostlist or "localhost", url)
    database = unquote(path) or None
    keywords: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "user":
            user = value
        elif key == "password":
            password = value
        else:
            libpq_key, libpq_value = _keyword(key, value, jdbc)
            if libpq_key == "options" and "options" in keywords:
                libpq_value = f"{keywords['options']} {libpq_value}"
            keywords[libpq_key] = libpq_value
    return Endpoint(
        hosts=hosts,
        database=database,
        user=user,
        password=password,
        keywords=tuple(sorted(keywords.items())),
        display=_without_password(url),
    )


def _hosts(hostlist: str, url: str) -> tuple[tuple[str, int], ...]:
    found: list[tuple[str, int]] = []
    for part in hostlist.split(","):
        if part.startswith("["):
            host, bracket, tail = part[1:].partition("]")
            if not bracket:
                raise ValueError(f"unclosed [ in the host {part!r} of {_without_password(url)}")
            port_text = tail[1:] if tail.startswith(":") else ""
        else:
            host, _, port_text = part.partition(":")
        if not host:
            raise ValueError(f"an empty host in {_without_password(url)}")
        try:
            port = int(port_text) if port_text else DEFAULT_PORT
        except ValueError:
            raise ValueError(f"the port of {part!r} is not a number, in {_without_password(url)}") from None
        if not 0 < port < 65536:
            raise ValueError(f"the port of {part!r} is out of range (1..65535), in {_without_password(url)}")
        found.append((unquote(host), port))
    return tuple(found)


def _keyword(key: str, value: str, jdbc: bool) -> tuple[str, str]:
    """A query parameter as a libpq keyword and value."""
    if key in LIBPQ_KEYWORDS:
        return key, value
    if not jdbc:
        return key, value  # libpq's own URL: libpq checks its keywords when connecting
    if key in _JDBC_NAMES:
        name = _JDBC_NAMES[key]
        if name == "keepalives":
            return name, "1" if value.lower() == "true" else "0"
        return name, value
    if key == "ssl":
        return "sslmode", "verify-full" if value.lower() in ("", "true") else "disable"
    if key == "currentSchema":
        return "options", f"-c search_path={value}"
    if key == "targetServerType":
        if value not in _TARGETS:
            raise ValueError(f"targetServerType must be one of {', '.join(_TARGETS)}, not {value!r}")
        return "target_session_attrs", _TARGETS[value]
    known = sorted({"user", "password", "ssl", "currentSchema", "targetServerType", *_JDBC_NAMES, *LIBPQ_KEYWORDS})
    raise ValueError(
        f"the JDBC URL's property {key!r} has no counterpart in panes' PostgreSQL sink (it connects through "
        f"psycopg, not PostgreSQL's JDBC driver); it takes {', '.join(known)}"
    )


def _without_password(url: str) -> str:
    """``url`` with the password of its user part and of its query replaced by ``***``."""
    shown = _hide_userinfo(url)
    head, question, query = shown.partition("?")
    if not question:
        return shown
    parts = [
        f"{name}=***" if name == "password" else part for part in query.split("&") for name in [part.split("=", 1)[0]]
    ]
    return f"{head}?{'&'.join(parts)}"


def _hide_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("//")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    return f"{scheme}{sep}{authority}{slash}{tail}"
