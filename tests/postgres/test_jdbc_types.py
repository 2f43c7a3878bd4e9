"""Values of panes' types land in PostgreSQL columns of the matching types."""

from __future__ import annotations

import datetime
import decimal

from panes.connectors.jdbc import JdbcSink
from panes.datastream import StreamEnvironment
from panes.types import Row, Types
from tests.postgres.conftest import Database

TYPED = Types.ROW_NAMED(
    ["id", "flag", "ratio", "price", "at", "day", "tags", "blob", "attrs"],
    [
        Types.LONG(),
        Types.BOOLEAN(),
        Types.DOUBLE(),
        Types.BIG_DEC(),
        Types.SQL_TIMESTAMP(),
        Types.SQL_DATE(),
        Types.LIST(Types.STRING()),
        Types.PRIMITIVE_ARRAY(Types.BYTE()),
        Types.MAP(Types.STRING(), Types.INT()),
    ],
)


def test_values_of_each_type_land_in_columns_of_that_type(postgres: Database) -> None:
    postgres.execute(
        "CREATE TABLE typed (id bigint, flag boolean, ratio double precision, price numeric(20, 4), at timestamp, "
        "day date, tags text[], blob bytea, attrs jsonb)"
    )
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000)
    rows = [
        Row(
            id=1,
            flag=True,
            ratio=0.25,
            price=decimal.Decimal("12.3400"),
            at=at,
            day=datetime.date(2026, 1, 2),
            tags=["a", "b"],
            blob=b"\x00\x01",
            attrs={"x": 1},
        ),
        Row(id=2, flag=None, ratio=None, price=None, at=None, day=None, tags=None, blob=None, attrs=None),
    ]
    env = StreamEnvironment("local")
    env.from_collection(rows, type_info=TYPED).add_sink(
        JdbcSink.sink("INSERT INTO typed VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", TYPED, postgres.options())
    )
    env.execute()
    assert postgres.execute("SELECT * FROM typed ORDER BY id") == [
        (1, True, 0.25, decimal.Decimal("12.3400"), at, datetime.date(2026, 1, 2), ["a", "b"], b"\x00\x01", {"x": 1}),
        (2, None, None, None, None, None, None, None, None),
    ]
