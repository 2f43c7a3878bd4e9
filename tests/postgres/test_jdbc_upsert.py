"""The upsert sink against a real PostgreSQL: a window job's early, on-time and late firings leave each window's
latest pane in the table (with its pane info), retractions delete the rows of windows a merge replaced, and
discarding mode leaves each window's last pane."""

from __future__ import annotations

from typing import Any

import pytest

from panes.connectors.jdbc import JdbcExecutionOptions, JdbcSink, JdbcStatementError
from panes.datastream import DataStream, OutputTag, StreamEnvironment
from panes.datastream.sinks import ListSink
from panes.errors import ErrorRecord
from panes.functions import Count, Sum
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    AnyOf,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    TumblingEventTimeWindows,
    WindowRow,
)
from tests.postgres.conftest import Database

MINUTE = 60_000


def order(customer: str, second: int, amount: int) -> dict[str, Any]:
    return {"customer": customer, "ts": second * 1000, "amount": amount}


ORDERS = [
    [order("ann", 5, 10), order("ann", 20, 4), order("bob", 30, 7)],
    [order("ann", 61, 2), order("bob", 65, 3), order("ann", 40, 5)],
    [order("bob", 125, 1), order("ann", 50, 8), order("bob", 58, 6)],
]
"""Three micro-batches: the watermark moves after each, so ann's first minute fires early (2 orders), on time and
late (0:50 arrives after 1:05), bob's on time and late."""

TOTALS_TABLE = (
    "CREATE TABLE totals (customer text NOT NULL, window_start bigint NOT NULL, window_end bigint NOT NULL, "
    "total bigint, pane_index bigint, pane_timing text, pane_last boolean, "
    "PRIMARY KEY (customer, window_start, window_end))"
)
KEYS = ("customer", "window_start", "window_end")
TOTALS = (
    "customer STRING, window_start BIGINT, window_end BIGINT, total BIGINT, pane_index BIGINT, pane_timing STRING, "
    "pane_last BOOLEAN"
)
"""The rows of :func:`totals` (a retracting window adds ``retract BOOLEAN``)."""


def totals(env: StreamEnvironment, mode: str) -> DataStream:
    """Each customer's total per minute, early every 2 orders, on time and late, in accumulation ``mode``."""
    windowed = (
        env.from_micro_batches(ORDERS, type_info="customer STRING, ts BIGINT, amount BIGINT")
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("customer")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .trigger(AnyOf(CountTrigger.of(2), EventTimeTrigger()))
        .allowed_lateness(MINUTE)
    )
    windowed = getattr(windowed, f"{mode}_fired_panes")()
    rows = WindowRow(key="customer", value="total", pane="pane")
    return windowed.aggregate(Sum("amount"), rows, output_type=TOTALS)


def upsert(postgres: Database, table: str, *keys: str, batch_size: int = 5000) -> Any:
    return (
        JdbcSink.upsert_builder()
        .with_table(table)
        .with_key_columns(*keys)
        .with_connection_options(postgres.options())
        .with_execution_options(JdbcExecutionOptions.builder().with_batch_size(batch_size).build())
    )


def latest_per_window(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The table a window job's rows leave when each replaces the window's earlier one (a retraction removes it)."""
    table: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in rows:
        key = tuple(row[k] for k in KEYS)
        if row.get("retract"):
            table.pop(key, None)
        else:
            table[key] = tuple(v for k, v in row.items() if k != "retract")
    return sorted(table.values())


ON_TIME, LATE = "on time", "late"
LATEST = [
    ("ann", 0, MINUTE, 27, 2, LATE, False),
    ("ann", MINUTE, 2 * MINUTE, 2, 0, ON_TIME, False),
    ("bob", 0, MINUTE, 13, 1, LATE, False),
    ("bob", MINUTE, 2 * MINUTE, 3, 0, ON_TIME, False),
    ("bob", 2 * MINUTE, 3 * MINUTE, 1, 0, ON_TIME, True),
]
"""Each window's latest pane: its total over all its orders, which firing it is, whether it is the last."""


@pytest.mark.parametrize(("mode", "batch_size"), [("accumulating", 5000), ("retracting", 5000), ("retracting", 1)])
def test_the_table_holds_each_windows_latest_pane(postgres: Database, mode: str, batch_size: int) -> None:
    postgres.execute(TOTALS_TABLE)
    env = StreamEnvironment("local")
    results = totals(env, mode)
    seen = ListSink()
    results.sink_to(seen)
    results.add_sink(upsert(postgres, "totals", *KEYS, batch_size=batch_size).build())
    env.execute()
    rows = postgres.execute(
        "SELECT customer, window_start, window_end, total, pane_index, pane_timing, pane_last FROM totals ORDER BY 1, 2"
    )
    assert rows == LATEST
    assert rows == latest_per_window(seen.values)
    # the job did fire early and late, and in retracting mode retracted
    timings = {(v["customer"], v["window_start"], v["pane_timing"]) for v in seen.values}
    assert {("ann", 0, "early"), ("ann", 0, LATE), ("bob", 0, LATE)} <= timings
    assert any(v.get("retract") for v in seen.values) == (mode == "retracting")


def test_discarding_mode_leaves_each_windows_last_pane(postgres: Database) -> None:
    postgres.execute(
        "CREATE TABLE panes_only (customer text, window_start bigint, window_end bigint, total bigint, "
        "PRIMARY KEY (customer, window_start, window_end))"
    )
    env = StreamEnvironment("local")
    sink = upsert(postgres, "panes_only", *KEYS).with_columns("customer", "window_start", "window_end", "total")
    totals(env, "discarding").add_sink(sink.build())
    env.execute()
    # the last pane's own orders: ann's late 0:50 (8), bob's late 0:58 (6); the other windows fired once
    assert postgres.execute("SELECT * FROM panes_only ORDER BY 1, 2") == [
        ("ann", 0, MINUTE, 8),
        ("ann", MINUTE, 2 * MINUTE, 2),
        ("bob", 0, MINUTE, 6),
        ("bob", MINUTE, 2 * MINUTE, 3),
        ("bob", 2 * MINUTE, 3 * MINUTE, 1),
    ]


def clicks(env: StreamEnvironment, mode: str) -> DataStream:
    """Sessions (gap 5 s) of two users: a's two sessions of the first batch merge when 0:04 arrives."""
    batches = [
        [{"user": "a", "ts": 0}, {"user": "a", "ts": 8_000}, {"user": "b", "ts": 0}],
        [{"user": "a", "ts": 4_000}, {"user": "b", "ts": 20_000}],
    ]
    windowed = (
        env.from_micro_batches(batches, type_info="user STRING, ts BIGINT")
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("user")
        .window(EventTimeSessionWindows.with_gap(5_000))
        .allowed_lateness(100_000)
    )
    windowed = getattr(windowed, f"{mode}_fired_panes")()
    return windowed.aggregate(
        Count(),
        WindowRow(key="user", value="clicks"),
        output_type="user STRING, window_start BIGINT, window_end BIGINT, clicks BIGINT",
    )


SESSIONS_TABLE = (
    'CREATE TABLE sessions ("user" text, window_start bigint, window_end bigint, clicks bigint, '
    'PRIMARY KEY ("user", window_start, window_end))'
)


def test_retractions_delete_the_rows_of_windows_a_merge_replaced(postgres: Database) -> None:
    postgres.execute(SESSIONS_TABLE)
    env = StreamEnvironment("local")
    clicks(env, "retracting").add_sink(upsert(postgres, "sessions", "user", "window_start", "window_end").build())
    env.execute()
    # a's session [0:00, 0:05) fired after the first batch; 0:04 merged it with [0:08, 0:13) into [0:00, 0:13)
    assert postgres.execute("SELECT * FROM sessions ORDER BY 1, 2") == [
        ("a", 0, 13_000, 3),
        ("b", 0, 5_000, 1),
        ("b", 20_000, 25_000, 1),
    ]

    # accumulating: nothing takes the merged-away session's row back
    postgres.execute("TRUNCATE sessions")
    env = StreamEnvironment("local")
    clicks(env, "accumulating").add_sink(upsert(postgres, "sessions", "user", "window_start", "window_end").build())
    env.execute()
    assert postgres.execute("SELECT * FROM sessions ORDER BY 1, 2") == [
        ("a", 0, 5_000, 1),
        ("a", 0, 13_000, 3),
        ("b", 0, 5_000, 1),
        ("b", 20_000, 25_000, 1),
    ]


def test_an_upsert_needs_a_unique_constraint_on_its_keys(postgres: Database) -> None:
    postgres.execute("CREATE TABLE loose (customer text, window_start bigint, window_end bigint, total bigint)")
    env = StreamEnvironment("local")
    sink = upsert(postgres, "loose", *KEYS).with_columns(*KEYS, "total")
    totals(env, "accumulating").add_sink(sink.build())
    with pytest.raises(JdbcStatementError) as failure:
        env.execute()
    assert str(failure.value).endswith(
        "Fix the statement or the table. The upsert's key columns need a primary key or a unique constraint on "
        "exactly those columns."
    )
    assert "there is no unique or exclusion constraint matching the ON CONFLICT specification [SQLSTATE 42P10]" in (
        str(failure.value)
    )


def test_an_upsert_of_untyped_rows_needs_its_columns(postgres: Database) -> None:
    postgres.execute("CREATE TABLE kv (k text PRIMARY KEY, v bigint)")
    env = StreamEnvironment("local")
    values: list[Any] = [{"k": "x", "v": 1}, {"k": "y", "v": 2}, {"k": "x", "v": 3}]
    env.from_collection(values).add_sink(upsert(postgres, "kv", "k").build())
    with pytest.raises(ValueError, match=r"the upsert sink writes named columns and the stream has no declared type"):
        env.execute()
    env = StreamEnvironment("local")
    env.from_collection(values).add_sink(upsert(postgres, "kv", "k").with_columns("k", "v").build())
    env.execute()
    assert postgres.execute("SELECT * FROM kv ORDER BY k") == [("x", 3), ("y", 2)]


def test_an_upsert_the_table_refuses_goes_to_the_error_output(postgres: Database) -> None:
    postgres.execute(TOTALS_TABLE)
    postgres.execute("ALTER TABLE totals ADD CONSTRAINT small CHECK (total < 20)")
    env = StreamEnvironment("local")
    errors: OutputTag[ErrorRecord] = OutputTag("refused")
    sink = upsert(postgres, "totals", *KEYS, batch_size=1).build()
    refused = totals(env, "accumulating").sink_to(sink, errors).get_side_output(errors).execute_and_collect()
    # ann's first minute grew to 27: that pane was refused, and the row before it (19, on time) stays
    assert postgres.execute("SELECT customer, window_start, total, pane_timing FROM totals ORDER BY 1, 2") == [
        ("ann", 0, 19, ON_TIME),
        ("ann", MINUTE, 2, ON_TIME),
        ("bob", 0, 13, LATE),
        ("bob", MINUTE, 3, ON_TIME),
        ("bob", 2 * MINUTE, 1, ON_TIME),
    ]
    assert [(r.value["total"], r.error_type) for r in refused] == [(27, "CheckViolation")]
    assert 'violates check constraint "small"' in refused[0].reason
