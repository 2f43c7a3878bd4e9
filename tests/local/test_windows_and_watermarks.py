"""Windows through the API on the local runner: parallel instances, several source splits (the valve takes
the minimum), idle splits, count windows, window_all, and bad records."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.errors import BadRecordError, ErrorRecord
from panes.local import LocalRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows

BY_TS = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])


def stepping(parallelism: int = 1) -> StreamEnvironment:
    return StreamEnvironment(
        LocalRunner(clock="stepping", advance="per_element"), parallelism=parallelism, auto_watermark_interval=200
    )


def window_sums(env: StreamEnvironment, data: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    return (
        env.from_collection(data)
        .assign_timestamps_and_watermarks(BY_TS)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(1000))
        .reduce(
            lambda a, b: (a[0], a[1], a[2] + b[2]),
            lambda key, window, values: [(key, window.start, v[2]) for v in values],
        )
        .execute_and_collect()
    )


def test_keyed_windows_give_the_same_results_at_any_parallelism() -> None:
    data = [(f"k{i % 7}", i * 37 % 5000, i) for i in range(300)]
    data.sort(key=lambda e: e[1])
    reference = sorted(window_sums(stepping(1), data))
    assert reference and sum(v for *_, v in reference) == sum(range(300))
    for parallelism in (2, 3):
        assert sorted(window_sums(stepping(parallelism), data)) == reference


def test_the_watermark_of_several_splits_is_their_minimum() -> None:
    # split 0 races ahead to 10_000; split 1 stays at 500: windows [0,1000) must wait for split 1
    fast = [("k", 100, 1), ("k", 5000, 1), ("k", 10_000, 1)]
    slow = [("k", 200, 1), ("k", 500, 1)]
    env = stepping(2)
    panes = (
        env.from_splits([fast, slow])
        .assign_timestamps_and_watermarks(BY_TS)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(1000))
        .process(lambda key, ctx, elements: [(ctx.window().start, len(list(elements)), ctx.current_watermark())])
        .execute_and_collect()
    )
    first = panes[0]
    # [0, 1000) has all three early elements: it only fired once the slow split's watermark allowed it
    assert first[:2] == (0, 3)
    assert sorted(p[:2] for p in panes) == [(0, 3), (5000, 1), (10_000, 1)]


def test_an_idle_split_does_not_hold_the_watermark_back() -> None:
    busy = [("k", t, 1) for t in range(0, 4000, 100)]
    quiet: list[tuple[str, int, int]] = [("k", 50, 1)]

    def fired_before_end(idleness: int | None) -> list[Any]:
        env = stepping(2)
        strategy = BY_TS if idleness is None else BY_TS.with_idleness(idleness)
        return (
            env.from_splits([busy, quiet])
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(1000))
            .process(lambda key, ctx, elements: [(ctx.window().start, ctx.current_watermark())])
            .execute_and_collect()
        )

    from panes.time import LONG_MAX

    # without idleness the quiet split (stuck at 49) holds everything until the end of input
    assert all(watermark == LONG_MAX for _, watermark in fired_before_end(None))
    # with idleness it is excluded after 1000 ms without events and windows fire as the busy split advances
    early = [start for start, watermark in fired_before_end(1000) if watermark != LONG_MAX]
    assert early[:2] == [0, 1000]


def test_sessions_and_lateness_through_the_api() -> None:
    late = OutputTag("late")
    data = [("a", 0, 1), ("a", 400, 2), ("a", 5000, 3), ("a", 100, 4), ("a", 5300, 5)]
    env = stepping()
    sessions = (
        env.from_collection(data)
        .assign_timestamps_and_watermarks(BY_TS)
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(1000))
        .side_output_late_data(late)
        .process(lambda key, ctx, elements: [(ctx.window().start, ctx.window().end, [e[2] for e in elements])])
    )
    main, side = ListSink(), ListSink()
    sessions.sink_to(main)
    sessions.get_side_output(late).sink_to(side)
    env.execute()
    assert main.values == [(0, 1400, [1, 2]), (5000, 6300, [3, 5])]
    assert side.values == [("a", 100, 4)]


def test_count_windows_and_window_all() -> None:
    env = stepping()
    data = list(range(1, 8))
    tumbling = env.from_collection(data).key_by(lambda v: v % 2).count_window(2).reduce(lambda a, b: a + b)
    assert sorted(tumbling.execute_and_collect()) == sorted([1 + 3, 5 + 7, 2 + 4])
    sliding = env.from_collection(data).count_window_all(3, 2).apply(lambda window, values: [list(values)])
    assert sliding.execute_and_collect() == [[1, 2], [2, 3, 4], [4, 5, 6]]


def test_records_without_timestamps_fail_event_time_windows_with_advice() -> None:
    env = stepping()
    windowed = env.from_collection([1, 2]).key_by(lambda v: v).window(TumblingEventTimeWindows.of(10)).reduce(max)
    with pytest.raises(BadRecordError, match="assign_timestamps_and_watermarks"):
        windowed.execute_and_collect()


def test_bad_records_go_to_the_error_side_output_when_asked() -> None:
    errors = OutputTag("errors")
    env = stepping()
    data: list[Any] = [{"k": "a", "ts": 10}, {"k": "a"}, {"ts": 20}, {"k": "a", "ts": 30}]
    stamped = (
        env.from_collection(data)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .side_output_errors(errors)
    )
    windowed = (
        stamped.key_by("k")
        .window(TumblingEventTimeWindows.of(100))
        .side_output_errors(errors)
        .process(lambda key, ctx, elements: [[e["ts"] for e in elements]])
    )
    main, bad_ts, bad_key = ListSink(), ListSink(), ListSink()
    windowed.sink_to(main)
    stamped.get_side_output(errors).sink_to(bad_ts)
    windowed.get_side_output(errors).sink_to(bad_key)
    env.execute()
    assert main.values == [[10, 30]]
    assert [e.value for e in bad_ts.values] == [{"k": "a"}]
    assert [e.value for e in bad_key.values] == [{"ts": 20}]
    for failure in (*bad_ts.values, *bad_key.values):
        assert isinstance(failure, ErrorRecord) and failure.reason
    assert "'ts'" in bad_ts.values[0].reason and "key" in bad_key.values[0].reason
