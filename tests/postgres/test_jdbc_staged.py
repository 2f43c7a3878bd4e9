"""Many upserts at once go through a staging table (``panes.connectors.postgres.staged``): the table then holds
exactly what one statement per row leaves, for every column type the staging takes, and whatever it cannot take
(a value of another Python type, a refused row, keys the database holds equal) goes one statement per row as
before."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

from panes.connectors.jdbc import JdbcSink
from panes.connectors.postgres import staged
from panes.datastream import OutputTag, StreamEnvironment
from panes.errors import ErrorRecord
from tests.postgres.conftest import Database

COLUMNS = (
    "id",
    "small",
    "mid",
    "big",
    "ratio",
    "price",
    "name",
    "code",
    "padded",
    "flag",
    "blob",
    "day",
    "at",
    "at_zone",
    "attrs",
)
TABLE = (
    "CREATE TABLE {name} (id bigint PRIMARY KEY, small smallint, mid integer, big bigint, ratio double precision, "
    "price numeric(12, 3), name text, code varchar(8), padded char(4), flag boolean, blob bytea, day date, "
    "at timestamp, at_zone timestamptz, attrs jsonb)"
)
ROWS = 3 * staged.MIN_ROWS


def row(i: int, version: int) -> dict[str, Any]:
    """Row ``i`` as changed the ``version``-th time (every tenth value null)."""
    zone = datetime.timezone(datetime.timedelta(hours=(i % 5) - 2))
    values: dict[str, Any] = {
        "id": i,
        "small": (i * 37) % 30_000 - 15_000,
        "mid": i * 1_000 + version,
        "big": i * 10**12 + version,
        "ratio": i / 7 + version,
        "price": decimal.Decimal(i * 1_001 + version) / 1000,
        "name": f"name {i} é {version}",
        "code": f"c{i % 1000}",
        "padded": "ab" if i % 2 else "abcd",
        "flag": i % 3 == 0,
        "blob": bytes([i % 256, version % 256]),
        "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=i),
        "at": datetime.datetime(2026, 1, 1, 12) + datetime.timedelta(seconds=i * 61 + version, microseconds=i),
        "at_zone": datetime.datetime(2026, 1, 1, 12, tzinfo=zone) + datetime.timedelta(minutes=i),
        "attrs": {"i": i, "tags": ["x", str(version)]},
    }
    return {k: (None if (i + j) % 10 == 0 and k != "id" else v) for j, (k, v) in enumerate(values.items())}


def changes() -> list[dict[str, Any]]:
    """Every row twice (the second change replaces the first), interleaved."""
    return [row(i, version) for version in (1, 2) for i in range(ROWS)]


def write(postgres: Database, table: str, values: list[dict[str, Any]], errors: OutputTag[Any] | None = None) -> Any:
    sink = (
        JdbcSink.upsert_builder()
        .with_table(table)
        .with_key_columns("id")
        .with_columns(*COLUMNS)
        .with_connection_options(postgres.options())
        .build()
    )
    env = StreamEnvironment("local")
    stream = env.from_collection(values)
    if errors is None:
        stream.add_sink(sink)
        env.execute()
        return None
    return stream.sink_to(sink, errors).get_side_output(errors).execute_and_collect()


@pytest.fixture
def staged_sends(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Each staged attempt: its rows and whether it wrote them."""
    attempts: list[tuple[int, bool]] = []
    send = staged.StagedUpserts.send

    def spy(self: staged.StagedUpserts, connection: Any, rows: Any) -> bool:
        done = send(self, connection, rows)
        attempts.append((len(rows), done))
        return done

    monkeypatch.setattr(staged.StagedUpserts, "send", spy)
    return attempts


def one_statement_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staged, "MIN_ROWS", 10**9)


def test_a_staged_upsert_leaves_what_one_statement_per_row_leaves(
    postgres: Database, staged_sends: list[tuple[int, bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("by_stage", "by_row"):
        postgres.execute(TABLE.format(name=name))
    write(postgres, "by_stage", changes())
    assert staged_sends == [(ROWS, True)]  # the reduced rows, one attempt, taken
    one_statement_per_row(monkeypatch)
    write(postgres, "by_row", changes())
    assert staged_sends[1:] == [(ROWS, False)]
    by_stage = postgres.execute("SELECT * FROM by_stage ORDER BY id")
    assert len(by_stage) == ROWS
    assert by_stage == postgres.execute("SELECT * FROM by_row ORDER BY id")
    assert by_stage[1][1:3] == (row(1, 2)["small"], row(1, 2)["mid"])  # the second change won


def test_a_value_of_another_python_type_sends_the_rows_one_statement_each(
    postgres: Database, staged_sends: list[tuple[int, bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A float for a numeric column, an int for a double: the database converts a statement's parameter, which the
    staging's binary copy would not do the same way; the rows go one statement each."""
    for name in ("mixed", "by_row"):
        postgres.execute(TABLE.format(name=name))
    values = changes()
    values[ROWS + 5] = dict(values[ROWS + 5], price=0.1, ratio=3)  # its latest change
    write(postgres, "mixed", values)
    assert staged_sends == [(ROWS, False)]
    one_statement_per_row(monkeypatch)
    write(postgres, "by_row", values)
    assert postgres.execute("SELECT * FROM mixed ORDER BY id") == postgres.execute("SELECT * FROM by_row ORDER BY id")
    assert postgres.execute("SELECT price, ratio FROM mixed WHERE id = 5") == [(decimal.Decimal("0.100"), 3.0)]


def test_a_refused_row_in_a_staged_send_goes_to_the_error_output_and_the_others_land(
    postgres: Database, staged_sends: list[tuple[int, bool]]
) -> None:
    postgres.execute(TABLE.format(name="checked"))
    postgres.execute("ALTER TABLE checked ADD CONSTRAINT short CHECK (char_length(name) < 14)")
    values = [dict(row(i, 1), name=f"n{i}") for i in range(ROWS)]
    values[7] = dict(values[7], name="a name far too long")
    values[9] = dict(values[9], code="longer than eight")
    errors: OutputTag[ErrorRecord] = OutputTag("refused")
    refused = write(postgres, "checked", values, errors)
    assert staged_sends == [(ROWS, False)]
    kinds = sorted((r.value["id"], r.error_type) for r in refused)
    assert kinds == [(7, "CheckViolation"), (9, "StringDataRightTruncation")]
    assert postgres.execute("SELECT count(*) FROM checked") == [(ROWS - 2,)]


def test_keys_the_database_holds_equal_are_upserted_in_turn(
    postgres: Database, staged_sends: list[tuple[int, bool]]
) -> None:
    """``'ab'`` and ``'ab  '`` are two keys to Python and one ``char(4)`` to PostgreSQL: the staged upsert would
    touch the row twice, which PostgreSQL refuses, so the rows go one statement each and the later one wins."""
    postgres.execute("CREATE TABLE padded (k char(4) PRIMARY KEY, v bigint)")
    values = [{"k": f"k{i}", "v": i} for i in range(ROWS)] + [{"k": "ab", "v": 1}, {"k": "ab  ", "v": 2}]
    sink = (
        JdbcSink.upsert_builder()
        .with_table("padded")
        .with_key_columns("k")
        .with_columns("k", "v")
        .with_connection_options(postgres.options())
        .build()
    )
    env = StreamEnvironment("local")
    env.from_collection(values).add_sink(sink)
    env.execute()
    assert staged_sends == [(ROWS + 2, False)]
    assert postgres.execute("SELECT count(*), max(v) FILTER (WHERE k = 'ab') FROM padded") == [(ROWS + 1, 2)]
