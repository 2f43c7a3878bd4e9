"""A real PostgreSQL for the JDBC sink's tests: one server per test run (per pytest worker), started by the
project's own ``scripts/postgres.sh`` (which installs Debian's package when it is missing) and stopped at the end,
and a fresh database for each test.

When the server cannot be started, every test that needs it fails with the script's message: a machine
without PostgreSQL is a broken test machine, not a reason to skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from panes.connectors.jdbc import JdbcConnectionOptions

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"
START_TIMEOUT = 900
"""Seconds the script may take to start a server: a first start installs PostgreSQL (a minute or more)."""


@dataclass(frozen=True)
class Server:
    """The test run's server, as ``scripts/postgres.sh start`` printed it."""

    url: str
    host: str
    port: int
    user: str
    password: str

    def libpq_url(self, database: str) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"


@dataclass(frozen=True)
class Database:
    """A database of its own for one test: its URLs, credentials and a way to run SQL in it."""

    server: Server
    name: str

    @property
    def url(self) -> str:
        """libpq's URL, with the password."""
        return self.server.libpq_url(self.name)

    @property
    def jdbc_url(self) -> str:
        """The JDBC URL a PyFlink job gives (user and password apart)."""
        return f"jdbc:postgresql://{self.server.host}:{self.server.port}/{self.name}"

    def options(self, **changes: Any) -> JdbcConnectionOptions:
        """Connection options for this database, as a PyFlink job builds them; ``changes`` replace ``url``,
        ``user`` or ``password``."""
        return (
            JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
            .with_url(changes.get("url", self.jdbc_url))
            .with_driver_name("org.postgresql.Driver")
            .with_user_name(changes.get("user", self.server.user))
            .with_password(changes.get("password", self.server.password))
            .build()
        )

    def execute(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run ``sql`` (committed) and return its rows (none for a statement without)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchall() if cursor.description is not None else []


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    # under a world-traversable temp folder: run as root, the server runs as the postgres user, which must
    # reach it (pytest's own temp folders are closed to other users)
    folder = tempfile.mkdtemp(prefix="panes-postgres-")
    try:
        done = subprocess.run(
            ["bash", str(SCRIPT), "start", folder], check=False, capture_output=True, text=True, timeout=START_TIMEOUT
        )
    except subprocess.TimeoutExpired as timeout:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"scripts/postgres.sh start did not finish in {START_TIMEOUT} s: {timeout.stderr}", pytrace=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], check=False, capture_output=True, timeout=120)
        pytest.fail(
            f"scripts/postgres.sh could not start PostgreSQL (exit {done.returncode}):\n{done.stderr}", pytrace=False
        )
    url = lines[-1]
    parts = urlsplit(url)
    assert parts.hostname and parts.port and parts.username and parts.password, url
    try:
        yield Server(url, parts.hostname, parts.port, parts.username, parts.password)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], check=False, capture_output=True, timeout=120)


@pytest.fixture
def postgres(postgres_server: Server, request: pytest.FixtureRequest) -> Iterator[Database]:
    """A new, empty database for the test, dropped after it."""
    import psycopg

    stem = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    name = f"t_{stem}_{uuid.uuid4().hex[:8]}"
    admin = postgres_server.libpq_url("postgres")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield Database(postgres_server, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
