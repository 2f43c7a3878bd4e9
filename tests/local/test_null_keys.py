"""Null and missing keys are bad records (Flink refuses null keys): they go to the keyed step's error side
output when it has one, and fail the job with a message naming the field (or the key selector) otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import KeySelector, ListSink, OutputTag, StreamEnvironment
from panes.errors import BadRecordError, ErrorRecord
from panes.local import LocalRunner
from panes.windowing import GlobalWindows

ROWS: list[Any] = [{"k": "a", "v": 1}, {"k": None, "v": 2}, {"v": 3}, {"k": "a", "v": 4}, {"k": "b", "v": 5}]


def env(parallelism: int = 1) -> StreamEnvironment:
    return StreamEnvironment(LocalRunner(clock="stepping"), parallelism=parallelism)


def counts(stream: Any) -> Any:
    return stream.window(GlobalWindows.create_with_end_of_stream_trigger()).process(
        lambda key, ctx, rows: [(key, sorted(r["v"] for r in rows))]
    )


@pytest.mark.parametrize("parallelism", [1, 3])
def test_records_with_a_null_or_missing_key_field_go_to_the_error_output_of_the_window(parallelism: int) -> None:
    errors: OutputTag[Any] = OutputTag("errors")
    e = env(parallelism)
    windowed = (
        e.from_collection(ROWS)
        .key_by("k")
        .window(GlobalWindows.create_with_end_of_stream_trigger())
        .side_output_errors(errors)
        .process(lambda key, ctx, rows: [(key, sorted(r["v"] for r in rows))])
    )
    main, bad = ListSink(), ListSink()
    windowed.sink_to(main)
    windowed.get_side_output(errors).sink_to(bad)
    e.execute()
    assert sorted(main.values) == [("a", [1, 4]), ("b", [5])]
    assert [failure.value for failure in bad.values] == [{"k": None, "v": 2}, {"v": 3}]
    for failure in bad.values:
        assert isinstance(failure, ErrorRecord)
        assert failure.error_type == "BadRecordError" and failure.operator.startswith("Window(Process)")
        assert "'k'" in failure.reason
    assert "None" in bad.values[0].reason and "no field" in bad.values[1].reason


@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_null_key_without_an_error_output_fails_the_job_naming_the_field(parallelism: int) -> None:
    e = env(parallelism)
    with pytest.raises(BadRecordError, match=r"key_by\('k'\).*None.*null keys.*side_output_errors") as failure:
        counts(e.from_collection(ROWS[:2]).key_by("k")).execute_and_collect()
    assert "filter" in str(failure.value)


def test_a_missing_key_field_fails_the_job_naming_the_field() -> None:
    with pytest.raises(BadRecordError, match=r"key_by\('k'\).*no field 'k'"):
        counts(env().from_collection([{"v": 3}]).key_by("k")).execute_and_collect()


def test_a_key_selector_returning_none_is_a_bad_record_with_advice() -> None:
    class ByUser(KeySelector[dict[str, Any], str]):
        def get_key(self, value: dict[str, Any]) -> Any:
            return value.get("k")

    for selector, name in ((lambda row: row.get("k"), "<lambda>"), (ByUser(), "ByUser")):
        with pytest.raises(BadRecordError, match=f"key selector {name}.*returned None.*null keys"):
            env().from_collection(ROWS[:2]).key_by(selector).reduce(lambda a, b: a).execute_and_collect()


def test_null_keys_of_a_rolling_reduce_and_a_keyed_map_go_to_their_error_outputs() -> None:
    errors: OutputTag[Any] = OutputTag("errors")
    e = env(2)
    keyed = e.from_collection(ROWS).key_by(lambda row: row.get("k"))
    reduced = keyed.reduce(lambda a, b: {"k": a["k"], "v": a["v"] + b["v"]}).side_output_errors(errors)
    main, bad = ListSink(), ListSink()
    reduced.sink_to(main)
    reduced.get_side_output(errors).sink_to(bad)
    e.execute()
    assert sorted((row["k"], row["v"]) for row in main.values) == [("a", 1), ("a", 5), ("b", 5)]
    assert [failure.value["v"] for failure in bad.values] == [2, 3]
    assert all("returned None" in failure.reason for failure in bad.values)


def test_a_null_key_on_either_input_of_a_keyed_connection_is_a_bad_record() -> None:
    from panes.datastream import CoMapFunction

    class Tag(CoMapFunction[Any, Any, Any]):
        def map1(self, value: Any) -> Any:
            return ("left", value["k"])

        def map2(self, value: Any) -> Any:
            return ("right", value["k"])

    errors: OutputTag[Any] = OutputTag("errors")
    e = env()
    left = e.from_collection([{"k": "a"}, {"k": None}])
    right = e.from_collection([{"k": None}, {"k": "b"}])
    joined = left.connect(right).key_by("k", "k").map(Tag()).side_output_errors(errors)
    main, bad = ListSink(), ListSink()
    joined.sink_to(main)
    joined.get_side_output(errors).sink_to(bad)
    e.execute()
    assert sorted(main.values) == [("left", "a"), ("right", "b")]
    assert [failure.value for failure in bad.values] == [{"k": None}, {"k": None}]
