"""Clicks per page and minute kept in a PostgreSQL table that always holds each window's latest result: early
results every 3 clicks, the on-time result and late corrections each replace the row before them (an upsert by
page and window, with which firing it is), and clicks too late even for the allowed lateness go to a table of
their own (PyFlink's plain ``JdbcSink.sink``).

It needs a PostgreSQL; ``scripts/postgres.sh`` starts a throw-away one and prints its URL:

    export PANES_POSTGRES_URL=$(bash scripts/postgres.sh start)
    panes run examples/clicks_to_postgres.py
    psql "$PANES_POSTGRES_URL" -c 'TABLE clicks_per_minute' -c 'TABLE late_clicks'
    bash scripts/postgres.sh stop

The tables are created when missing. Rows land exactly once per checkpoint (here: the end of the job), with their
marker in the table ``panes_sink_commits`` (``docs/sources-and-sinks.md``, "PostgreSQL"). On Spark (``panes run
--runner spark examples/clicks_to_postgres.py``) Spark tasks write them, exactly once per micro-batch.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from panes.connectors.jdbc import JdbcConnectionOptions, JdbcExecutionOptions, JdbcSink
from panes.datastream import OutputTag, StreamEnvironment
from panes.functions import Count
from panes.watermarks import WatermarkStrategy
from panes.windowing import AnyOf, CountTrigger, EventTimeTrigger, TumblingEventTimeWindows, WindowRow

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
LATENESS = 30_000


def click(page: str, second: int) -> dict[str, Any]:
    return {"page": page, "ts": START + second * 1000}


CLICKS = [
    [click("/home", 1), click("/home", 12), click("/cart", 15), click("/home", 20), click("/home", 45)],
    [click("/cart", 62), click("/home", 64), click("/cart", 50)],
    [click("/home", 100), click("/home", 58), click("/cart", 125)],
    [click("/cart", 30), click("/home", 170)],
]
"""Four micro-batches; the watermark moves after each. /home's first minute fires early (3 clicks), on time and
late (0:58 arrives after 1:40, within the 30 s of lateness); /cart's 0:30 arrives after 2:05, too late."""

TABLES = """
CREATE TABLE IF NOT EXISTS clicks_per_minute (
    page text NOT NULL, window_start bigint NOT NULL, window_end bigint NOT NULL, clicks bigint NOT NULL,
    pane_index bigint NOT NULL, pane_timing text NOT NULL, pane_last boolean NOT NULL,
    PRIMARY KEY (page, window_start, window_end));
CREATE TABLE IF NOT EXISTS late_clicks (page text NOT NULL, ts bigint NOT NULL);
"""

ROWS = (
    "page STRING, window_start BIGINT, window_end BIGINT, clicks BIGINT, pane_index BIGINT, pane_timing STRING, "
    "pane_last BOOLEAN"
)


def connection_options() -> JdbcConnectionOptions:
    """The database of ``$PANES_POSTGRES_URL`` (``postgresql://user:password@host:port/database``), as a PyFlink job
    gives it: a JDBC URL, the user and the password apart."""
    url = os.environ.get("PANES_POSTGRES_URL")
    if not url:
        raise SystemExit(
            "set PANES_POSTGRES_URL to a PostgreSQL URL: export PANES_POSTGRES_URL=$(bash scripts/postgres.sh start)"
        )
    parts = urlsplit(url)
    builder = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}")
        .with_driver_name("org.postgresql.Driver")
    )
    if parts.username:
        builder = builder.with_user_name(parts.username)
    if parts.password:
        builder = builder.with_password(parts.password)
    return builder.build()


def create_tables(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(TABLES)


def build(env: StreamEnvironment) -> None:
    connection = connection_options()
    create_tables(os.environ["PANES_POSTGRES_URL"])
    too_late = OutputTag("too late")
    counts = (
        env.from_micro_batches(CLICKS, type_info="page STRING, ts BIGINT")
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("page")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .trigger(AnyOf(CountTrigger.of(3), EventTimeTrigger()))
        .allowed_lateness(LATENESS)
        .side_output_late_data(too_late)
        .retracting_fired_panes()
        .aggregate(Count(), WindowRow(key="page", value="clicks", pane="pane"), output_type=ROWS)
    )
    counts.print("counts")
    counts.add_sink(
        JdbcSink.upsert_builder()
        .with_table("clicks_per_minute")
        .with_key_columns("page", "window_start", "window_end")
        .with_connection_options(connection)
        .with_execution_options(JdbcExecutionOptions.builder().with_batch_size(100).build())
        .build()
    ).uid("clicks per minute")
    counts.get_side_output(too_late).add_sink(
        JdbcSink.sink("INSERT INTO late_clicks (page, ts) VALUES (?, ?)", "page STRING, ts BIGINT", connection)
    ).uid("late clicks")
