"""PyFlink's JDBC options (``JdbcConnectionOptions``, ``JdbcExecutionOptions``), checked when built.

Both are values: immutable once built, picklable, and shown without the password.
"""

from __future__ import annotations

from typing import Any

from panes.connectors.postgres.url import Endpoint, parse_url

POSTGRES_DRIVER = "org.postgresql.Driver"
"""The driver name a PostgreSQL JDBC job gives (``with_driver_name``); panes connects through psycopg whatever it
is, so it is checked, not used."""


def _whole(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return value


class JdbcConnectionOptions:
    """Where and as whom a JDBC sink connects (PyFlink's ``JdbcConnectionOptions``; build one with
    ``JdbcConnectionOptions.JdbcConnectionOptionsBuilder()``).

    The URL is a PostgreSQL JDBC URL, ``jdbc:postgresql://host:port/database`` (or libpq's
    ``postgresql://...``; ``panes.connectors.postgres.url`` lists the forms and properties): panes writes
    PostgreSQL, through psycopg, whatever driver a Flink job names. The user name and password given to the builder
    win over the URL's. ``connection_check_timeout_seconds`` (default 60, at least 1) bounds how long one
    connection attempt may take. ``repr`` and every message show the URL without its password.
    """

    def __init__(
        self,
        url: str,
        driver_name: str | None = None,
        user_name: str | None = None,
        password: str | None = None,
        connection_check_timeout_seconds: int = 60,
        properties: dict[str, str] | None = None,
    ) -> None:
        if url is None:
            raise ValueError("the JDBC URL is missing: with_url('jdbc:postgresql://host:port/database')")
        endpoint = parse_url(url)
        if driver_name is not None and driver_name != POSTGRES_DRIVER:
            raise ValueError(
                f"panes writes PostgreSQL, through psycopg: the driver name, when given, is {POSTGRES_DRIVER!r}, "
                f"not {driver_name!r}"
            )
        timeout = _whole("connection_check_timeout_seconds", connection_check_timeout_seconds)
        if timeout < 1:
            raise ValueError(f"connection_check_timeout_seconds must be at least 1, got {timeout}")
        extra = dict(properties or {})
        for key in ("user", "password"):
            if key in extra:
                raise ValueError(f"give the {key} with with_user_name/with_password, not as a property")
        for key, value in extra.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"connection properties are strings, got {key!r}: {value!r}")
        self._url = url
        self._endpoint = endpoint
        self._driver_name = driver_name
        self._user_name = user_name if user_name is not None else endpoint.user
        self._password = password if password is not None else endpoint.password
        self._timeout = timeout
        self._properties = extra

    def get_db_url(self) -> str:
        """The URL as given."""
        return self._url

    def get_driver_name(self) -> str | None:
        return self._driver_name

    def get_user_name(self) -> str | None:
        """The user: the builder's, else the URL's (``None``: the server's default, the system user's name)."""
        return self._user_name

    def get_password(self) -> str | None:
        return self._password

    def get_connection_check_timeout_seconds(self) -> int:
        return self._timeout

    @property
    def endpoint(self) -> Endpoint:
        """The parsed URL (``panes.connectors.postgres.url.Endpoint``)."""
        return self._endpoint

    @property
    def display_url(self) -> str:
        """The URL without its password."""
        return self._endpoint.display

    def connect_keywords(self) -> dict[str, Any]:
        """The keywords psycopg connects with (the password among them)."""
        endpoint = self._endpoint
        keywords: dict[str, Any] = dict(endpoint.keywords)
        keywords.update(self._properties)
        keywords.setdefault("application_name", "panes")
        keywords["connect_timeout"] = self._timeout
        keywords["host"] = ",".join(host for host, _ in endpoint.hosts)
        keywords["port"] = ",".join(str(port) for _, port in endpoint.hosts)
        if endpoint.database is not None:
            keywords["dbname"] = endpoint.database
        if self._user_name is not None:
            keywords["user"] = self._user_name
        if self._password is not None:
            keywords["password"] = self._password
        return keywords

    def __repr__(self) -> str:
        secret = "" if self._password is None else ", password=***"
        return f"JdbcConnectionOptions({self.display_url!r}, user={self._user_name!r}{secret})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JdbcConnectionOptions) and self._state() == other._state()

    def __hash__(self) -> int:
        return hash(self._state())

    def _state(self) -> tuple[Any, ...]:
        return (
            self._url,
            self._driver_name,
            self._user_name,
            self._password,
            self._timeout,
            tuple(sorted(self._properties.items())),
        )

    class JdbcConnectionOptionsBuilder:
        """Builds :class:`JdbcConnectionOptions`; :meth:`build` checks them (``ValueError``/``TypeError``)."""

        def __init__(self) -> None:
            self._url: str | None = None
            self._driver_name: str | None = None
            self._user_name: str | None = None
            self._password: str | None = None
            self._timeout = 60
            self._properties: dict[str, str] = {}

        def with_url(self, url: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._url = url
            return self

        def with_driver_name(self, driver_name: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._driver_name = driver_name
            return self

        def with_user_name(self, user_name: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._user_name = user_name
            return self

        def with_password(self, password: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._password = password
            return self

        def with_connection_check_timeout_seconds(
            self, seconds: int
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            """How long one connection attempt may take (default 60 s, at least 1)."""
            self._timeout = seconds
            return self

        def with_property(self, key: str, value: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            """A libpq connection keyword (``sslmode``, ``application_name``, ...)."""
            self._properties[key] = value
            return self

        def build(self) -> JdbcConnectionOptions:
            if self._url is None:
                raise ValueError("the JDBC URL is missing: with_url('jdbc:postgresql://host:port/database')")
            return JdbcConnectionOptions(
                self._url, self._driver_name, self._user_name, self._password, self._timeout, self._properties
            )


class JdbcExecutionOptions:
    """How a JDBC sink sends its rows (PyFlink's ``JdbcExecutionOptions``; ``JdbcExecutionOptions.builder()``).

    - ``batch_size`` (default 5000, Flink's): rows go to the database in statements of at most this many, sent
      when that many wait; ``0``: no size of its own, rows are sent at the interval and at each checkpoint.
      Refused below 0. An upsert sink keeps one waiting row per key, its latest change (as Flink's upsert writer
      reduces its buffer by key): ``batch_size`` counts the keys waiting, not the changes that arrived.
    - ``batch_interval_ms`` (default 0: none): rows waiting that long are sent with the next row (the local runner
      has no timer thread). Refused below 0 (Flink fails when the job opens).
    - ``max_retries`` (default 3, Flink's): how often a failed connection or send is tried again, on a new
      connection, waiting 0 s, 1 s, 2 s, ... before each retry (Flink's back-off); ``0``: not retried. Refused below
      0, as Flink does.

    Sending is not committing: an exactly-once sink commits at each checkpoint (see ``panes.connectors.jdbc``).
    """

    DEFAULT_MAX_RETRY_TIMES = 3
    DEFAULT_INTERVAL_MILLIS = 0
    DEFAULT_SIZE = 5000

    def __init__(self, batch_interval_ms: int, batch_size: int, max_retries: int) -> None:
        interval = _whole("batch_interval_ms", batch_interval_ms)
        size = _whole("batch_size", batch_size)
        retries = _whole("max_retries", max_retries)
        if retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {retries}")
        if size < 0:
            raise ValueError(
                f"batch_size must be 0 (no size: send at the interval and checkpoints) or more, got {size}"
            )
        if interval < 0:
            raise ValueError(f"batch_interval_ms must be 0 (none) or more, got {interval}")
        self._interval = interval
        self._size = size
        self._retries = retries

    def get_batch_interval_ms(self) -> int:
        return self._interval

    def get_batch_size(self) -> int:
        return self._size

    def get_max_retries(self) -> int:
        return self._retries

    @staticmethod
    def defaults() -> JdbcExecutionOptions:
        return JdbcExecutionOptions.builder().build()

    @staticmethod
    def builder() -> JdbcExecutionOptions.Builder:
        return JdbcExecutionOptions.Builder()

    def __repr__(self) -> str:
        return (
            f"JdbcExecutionOptions(batch_size={self._size}, batch_interval_ms={self._interval}, "
            f"max_retries={self._retries})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JdbcExecutionOptions) and (self._interval, self._size, self._retries) == (
            other._interval,
            other._size,
            other._retries,
        )

    def __hash__(self) -> int:
        return hash((self._interval, self._size, self._retries))

    class Builder:
        """Builds :class:`JdbcExecutionOptions`; :meth:`build` checks them (``ValueError``/``TypeError``)."""

        def __init__(self) -> None:
            self._interval = JdbcExecutionOptions.DEFAULT_INTERVAL_MILLIS
            self._size = JdbcExecutionOptions.DEFAULT_SIZE
            self._retries = JdbcExecutionOptions.DEFAULT_MAX_RETRY_TIMES

        def with_batch_size(self, size: int) -> JdbcExecutionOptions.Builder:
            self._size = size
            return self

        def with_batch_interval_ms(self, interval_ms: int) -> JdbcExecutionOptions.Builder:
            self._interval = interval_ms
            return self

        def with_max_retries(self, max_retries: int) -> JdbcExecutionOptions.Builder:
            self._retries = max_retries
            return self

        def build(self) -> JdbcExecutionOptions:
            return JdbcExecutionOptions(self._interval, self._size, self._retries)
