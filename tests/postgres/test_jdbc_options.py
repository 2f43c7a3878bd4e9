"""What a JDBC sink checks when it is built, before any server: PyFlink's options with Flink's conditions, the
URL (PostgreSQL's only), the statement's placeholders, the upsert's names, and the password kept out of sight."""

from __future__ import annotations

import pickle

import pytest

from panes.connectors.jdbc import JdbcConnectionOptions, JdbcExecutionOptions, JdbcSink
from panes.connectors.postgres.statements import translate_placeholders
from panes.connectors.postgres.url import parse_url
from panes.datastream import StreamEnvironment
from panes.types import RecordType, Types

URL = "jdbc:postgresql://db.example:6543/shop"


def options(url: str = URL, password: str | None = "s3cret-pw") -> JdbcConnectionOptions:
    builder = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url).with_user_name("panes")
    return (builder if password is None else builder.with_password(password)).build()


def test_execution_options_take_flinks_defaults_and_conditions() -> None:
    defaults = JdbcExecutionOptions.defaults()
    assert (defaults.get_batch_size(), defaults.get_batch_interval_ms(), defaults.get_max_retries()) == (5000, 0, 3)
    built = JdbcExecutionOptions.builder().with_batch_size(2).with_batch_interval_ms(200).with_max_retries(0).build()
    assert (built.get_batch_size(), built.get_batch_interval_ms(), built.get_max_retries()) == (2, 200, 0)
    with pytest.raises(ValueError, match=r"max_retries must be 0 or more, got -1"):
        JdbcExecutionOptions.builder().with_max_retries(-1).build()
    with pytest.raises(ValueError, match=r"batch_size must be 0 \(no size: send at the interval and checkpoints\)"):
        JdbcExecutionOptions.builder().with_batch_size(-5).build()
    with pytest.raises(ValueError, match=r"batch_interval_ms must be 0 \(none\) or more, got -1"):
        JdbcExecutionOptions.builder().with_batch_interval_ms(-1).build()
    with pytest.raises(TypeError, match=r"batch_size must be an int, got 2.5"):
        JdbcExecutionOptions.builder().with_batch_size(2.5).build()  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"max_retries must be an int, got True"):
        JdbcExecutionOptions.builder().with_max_retries(True).build()


def test_connection_options_need_a_postgresql_url() -> None:
    built = options()
    assert (built.get_db_url(), built.get_user_name(), built.get_password()) == (URL, "panes", "s3cret-pw")
    assert built.get_connection_check_timeout_seconds() == 60
    with pytest.raises(
        ValueError, match=r"panes writes PostgreSQL, through psycopg: the URL must be a PostgreSQL JDBC"
    ):
        options("jdbc:mysql://db.example:3306/shop")
    with pytest.raises(ValueError, match=r"the JDBC URL is missing: with_url"):
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().build()
    with pytest.raises(ValueError, match=r"the driver name, when given, is 'org.postgresql.Driver', not 'com.mysql"):
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(URL).with_driver_name("com.mysql.Driver").build()
    with pytest.raises(ValueError, match=r"connection_check_timeout_seconds must be at least 1, got 0"):
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(URL).with_connection_check_timeout_seconds(
            0
        ).build()
    with pytest.raises(ValueError, match=r"property 'rewriteBatchedInserts' has no counterpart"):
        options(URL + "?rewriteBatchedInserts=true")
    with pytest.raises(ValueError, match=r"the port of 'db:x' is not a number"):
        options("jdbc:postgresql://db:x/shop")


def test_urls_of_both_forms_read_into_hosts_database_and_keywords() -> None:
    jdbc = parse_url("jdbc:postgresql://a:1,[::1]:2/shop?currentSchema=sales&sslmode=require&connectTimeout=5")
    assert (jdbc.hosts, jdbc.database) == ((("a", 1), ("::1", 2)), "shop")
    assert dict(jdbc.keywords) == {"options": "-c search_path=sales", "sslmode": "require", "connect_timeout": "5"}
    assert parse_url("jdbc:postgresql:shop").hosts == (("localhost", 5432),)
    assert parse_url("jdbc:postgresql:shop").database == "shop"
    libpq = parse_url("postgresql://u:p%40ss@127.0.0.1:5433/db?application_name=x")
    assert (libpq.user, libpq.password, libpq.hosts, libpq.database) == ("u", "p@ss", (("127.0.0.1", 5433),), "db")
    assert libpq.display == "postgresql://u:***@127.0.0.1:5433/db?application_name=x"
    keywords = options("jdbc:postgresql://a:1,b:2/shop?user=url-user&password=url-pw", password=None).connect_keywords()
    assert {k: keywords[k] for k in ("host", "port", "dbname", "user", "password")} == {
        "host": "a,b",
        "port": "1,2",
        "dbname": "shop",
        "user": "panes",  # the builder's user wins over the URL's
        "password": "url-pw",
    }


def test_the_password_is_in_no_repr_and_no_plan() -> None:
    built = options(URL + "?password=url-secret")
    sink = JdbcSink.sink("INSERT INTO t (a) VALUES (?)", Types.ROW_NAMED(["a"], [Types.LONG()]), built)
    assert repr(built) == (
        "JdbcConnectionOptions('jdbc:postgresql://db.example:6543/shop?password=***', user='panes', password=***)"
    )
    assert repr(sink) == "JdbcSink(INSERT INTO t (a) VALUES (?), jdbc:postgresql://db.example:6543/shop?password=***)"
    env = StreamEnvironment("local")
    env.from_collection([{"a": 1}]).add_sink(sink)
    shown = env.explain()
    assert "JdbcSink(INSERT INTO t (a) VALUES (?)" in shown
    assert "s3cret-pw" not in shown and "url-secret" not in shown
    assert pickle.loads(pickle.dumps(built)) == built


def test_placeholders_become_psycopgs_outside_literals_and_comments() -> None:
    sql = (
        "INSERT INTO t (a, b, c) VALUES (?, '?%', $$?$$) -- ?\n"
        "ON CONFLICT (a) DO UPDATE SET b = E'\\'?' || \"we?rd\" /* ? /* ? */ */ WHERE t.j ?? 'k' AND c LIKE '5%' AND ?"
    )
    translated, count = translate_placeholders(sql)
    assert count == 2
    assert translated == (
        "INSERT INTO t (a, b, c) VALUES (%s, '?%%', $$?$$) -- ?\n"
        "ON CONFLICT (a) DO UPDATE SET b = E'\\'?' || \"we?rd\" /* ? /* ? */ */ WHERE t.j ? 'k' AND c LIKE '5%%' "
        "AND %s"
    )
    with pytest.raises(ValueError, match=r"the string literal opened at position 25 of the statement is not closed"):
        translate_placeholders("INSERT INTO t VALUES (?, 'x)")
    with pytest.raises(ValueError, match=r"uses psycopg's placeholder '%s'; write JDBC's \?"):
        translate_placeholders("INSERT INTO t VALUES (%s)")


def test_a_sink_checks_its_statement_against_its_type() -> None:
    row = Types.ROW_NAMED(["page", "n"], [Types.STRING(), Types.LONG()])
    with pytest.raises(ValueError, match=r"the statement has no parameter \(\?\)"):
        JdbcSink.sink("INSERT INTO t VALUES (1)", row, options())
    with pytest.raises(ValueError, match=r"the statement has 3 parameters \(\?\) and the rows 2 columns \(page, n\)"):
        JdbcSink.sink("INSERT INTO t VALUES (?, ?, ?)", row, options())
    with pytest.raises(ValueError, match=r"JdbcSink.sink needs connection options"):
        JdbcSink.sink("INSERT INTO t VALUES (?, ?)", row)
    with pytest.raises(TypeError, match=r"expected JdbcExecutionOptions"):
        JdbcSink.sink("INSERT INTO t VALUES (?, ?)", row, options(), "fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'bad name' is not a table name"):
        JdbcSink.sink("INSERT INTO t VALUES (?, ?)", row, options(), commit_table="bad name")


def test_an_upsert_sink_checks_its_table_keys_and_columns() -> None:
    with pytest.raises(ValueError, match=r"an upsert sink needs its table: with_table"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_key_columns("k").build()
    with pytest.raises(ValueError, match=r"an upsert sink needs its key columns"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_table("t").build()
    with pytest.raises(ValueError, match=r"an upsert sink needs connection options"):
        JdbcSink.upsert_builder().with_table("t").with_key_columns("k").build()
    with pytest.raises(ValueError, match=r"'t; DROP TABLE x' is not a table name"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_table("t; DROP TABLE x").with_key_columns(
            "k"
        ).build()
    with pytest.raises(ValueError, match=r"key columns \['w'\] are not among the columns written \(k, n\)"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_table("t").with_key_columns(
            "k", "w"
        ).with_columns("k", "n").build()
    with pytest.raises(ValueError, match=r"'retract' says whether a row is a retraction"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_table("t").with_key_columns("k").with_columns(
            "k", "retract"
        ).build()
    with pytest.raises(ValueError, match=r"key columns \['k'\] are named more than once"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_table("s.t").with_key_columns(
            "k", "k"
        ).build()
    with pytest.raises(ValueError, match=r"columns \['missing'\] are not in the stream's type"):
        JdbcSink.upsert_builder().with_connection_options(options()).with_table('"My Table"').with_key_columns(
            "k"
        ).with_columns("k", "missing").with_type_info("k STRING, n BIGINT").build()
    sink = (
        JdbcSink.upsert_builder()
        .with_connection_options(options())
        .with_table("public.counts")
        .with_key_columns("page", "window_start")
        .build()
    )
    assert (
        repr(sink)
        == "JdbcSink(upsert into public.counts by (page, window_start), jdbc:postgresql://db.example:6543/shop)"
    )


def test_the_spark_runner_takes_a_jdbc_sink_and_explains_it_without_the_password() -> None:
    pytest.importorskip("pyspark")
    from panes.spark.runner import refuse_local_only
    from panes.spark.stages import describe_stages

    env = StreamEnvironment("local")
    sink = JdbcSink.upsert_builder().with_connection_options(options()).with_table("counts").with_key_columns("a")
    stream = env.from_collection([{"a": 1}], type_info="a BIGINT")
    stream.add_sink(sink.build()).set_parallelism(3)
    stream.add_sink(JdbcSink.sink("INSERT INTO t (a) VALUES (?)", "a BIGINT", options(), commit_table=None))
    refuse_local_only(env.plan())  # nothing refused
    [written] = [line for line in describe_stages(env.plan()) if line.startswith("write the sinks")]
    assert (
        "Sink: JdbcSink: upsert into counts by (a) at jdbc:postgresql://db.example:6543/shop: written by 3 Spark "
        "tasks (by the key columns), one transaction per task with its marker in panes_sink_commits, exactly once "
        "per micro-batch" in written
    )
    assert (
        "Sink: JdbcSink: INSERT INTO t (a) VALUES (?) at jdbc:postgresql://db.example:6543/shop: written by 1 Spark "
        "task, rows committed as sent, at least once (a replayed micro-batch writes its rows again)" in written
    )
    assert "s3cret-pw" not in written


def test_a_rows_writer_on_spark_is_chosen_by_its_key_columns_the_same_in_every_process() -> None:
    """A replayed micro-batch must give each writer the same rows: the hash of an upsert's key columns (of a plain
    statement's whole row) does not depend on the process (Python's own string hash does)."""
    pytest.importorskip("pyspark")
    import subprocess
    import sys

    from panes.spark.jdbc_sink import spread_key

    sink = JdbcSink.upsert_builder().with_connection_options(options()).with_table("t").with_key_columns("k")
    key = spread_key(sink.with_columns("k", "n").build(), RecordType.of("k STRING, n BIGINT"))
    assert key({"k": "x", "n": 1}) == key({"k": "x", "n": 2}) != key({"k": "y", "n": 1})
    program = (
        "from panes.connectors.jdbc import JdbcSink, JdbcConnectionOptions\n"
        "from panes.spark.jdbc_sink import spread_key\n"
        "from panes.types import RecordType\n"
        "o = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url('jdbc:postgresql://h/d').build()\n"
        "s = JdbcSink.upsert_builder().with_connection_options(o).with_table('t').with_key_columns('k')\n"
        "print(spread_key(s.with_columns('k', 'n').build(), RecordType.of('k STRING, n BIGINT'))({'k': 'x', 'n': 1}))"
    )
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", program], env={"PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True
        )
        assert int(done.stdout) == key({"k": "x", "n": 1})
