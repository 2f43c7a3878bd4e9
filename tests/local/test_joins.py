"""Window joins, co-groups and interval joins through the API on the local runner.

Expected outputs come from Flink's integration tests (``CoGroupJoinITCase`` and ``IntervalJoinITCase`` in
flink-tests, ``org.apache.flink.test.streaming.runtime``) with the same inputs, and from the scenarios of
``tests/join_scenarios.py`` (lateness and cleanup, derived there from Flink's docs and operator source), which
``tests/spark/test_joins.py`` also runs on Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from panes.datastream import (
    CoGroupFunction,
    DataStream,
    FlatJoinFunction,
    JoinFunction,
    ListSink,
    OutputTag,
    ProcessJoinFunction,
    StreamEnvironment,
)
from panes.elements import Watermark
from panes.errors import BadRecordError, UnsupportedOperationError, UserFunctionError
from panes.local import LocalRunner
from panes.state import ValueStateDescriptor
from panes.time import LONG_MAX
from panes.watermarks import WatermarkStrategy
from panes.watermarks.generators import WatermarkGenerator
from panes.windowing import (
    CountEvictor,
    CountTrigger,
    DeltaTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    TumblingEventTimeWindows,
)
from tests import join_scenarios as scenarios


def stepping() -> StreamEnvironment:
    return StreamEnvironment(LocalRunner(clock="stepping"), auto_watermark_interval=200)


def run(build: Callable[[DataStream], DataStream], events: list[scenarios.Event]) -> list[tuple[Any, Any]]:
    env = stepping()
    sink = ListSink()
    build(scenarios.source(env, events)).sink_to(sink)
    env.execute()
    return [(record.value, record.timestamp) for record in sink.records]


class LastTimestampMinusOne(WatermarkGenerator):
    """Flink's ``Tuple2TimestampExtractor`` of CoGroupJoinITCase: a watermark of ``ts - 1`` after each element."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output: Any) -> None:
        """Punctuated only."""


def flink_source(env: StreamEnvironment, elements: list[Any]) -> DataStream:
    strategy = WatermarkStrategy.for_generator(LastTimestampMinusOne).with_timestamp_assigner(lambda e, _: e[-1])
    return env.from_collection(elements).assign_timestamps_and_watermarks(strategy)


def tuple_string(value: tuple[Any, ...]) -> str:
    """Flink's ``Tuple.toString()``: ``(a,x,0)``."""
    return "(" + ",".join(str(v) for v in value) + ")"


# -- CoGroupJoinITCase -------------------------------------------------------------------------------------------


def test_co_group_of_flinks_co_group_join_it_case() -> None:
    env = stepping()
    source1 = flink_source(
        env, [("a", 0), ("a", 1), ("a", 2), ("b", 3), ("b", 4), ("b", 5), ("a", 6), ("a", 7), ("a", 8)]
    )
    source2 = flink_source(env, [("a", 0), ("a", 1), ("b", 3), ("c", 6), ("c", 7), ("c", 8)])

    class Describe(CoGroupFunction[Any, Any, str]):
        def co_group(self, first: list[Any], second: list[Any]) -> Iterable[str]:
            yield "F:" + "".join(map(tuple_string, first)) + " S:" + "".join(map(tuple_string, second))

    result = (
        source1.co_group(source2)
        .where(lambda t: t[0])
        .equal_to(lambda t: t[0])
        .window(TumblingEventTimeWindows.of(3))
        .apply(Describe())
        .execute_and_collect()
    )
    assert sorted(result) == sorted(
        ["F:(a,0)(a,1)(a,2) S:(a,0)(a,1)", "F:(b,3)(b,4)(b,5) S:(b,3)", "F:(a,6)(a,7)(a,8) S:", "F: S:(c,6)(c,7)(c,8)"]
    )


JOIN_FIRST = [
    ("a", "x", 0),
    ("a", "y", 1),
    ("a", "z", 2),
    ("b", "u", 3),
    ("b", "w", 5),
    ("a", "i", 6),
    ("a", "j", 7),
    ("a", "k", 8),
]
JOIN_SECOND = [("a", "u", 0), ("a", "w", 1), ("b", "i", 3), ("b", "k", 5), ("a", "x", 6), ("a", "z", 8)]


class ToStrings(JoinFunction[Any, Any, str]):
    def join(self, first: Any, second: Any) -> str:
        return tuple_string(first) + ":" + tuple_string(second)


def test_join_of_flinks_co_group_join_it_case() -> None:
    env = stepping()
    joined = (
        flink_source(env, JOIN_FIRST)
        .join(flink_source(env, JOIN_SECOND))
        .where(0)
        .equal_to(0)
        .window(TumblingEventTimeWindows.of(3))
        .apply(ToStrings())
    )
    sink = ListSink()
    joined.sink_to(sink)
    env.execute()
    assert sorted(sink.values) == sorted(
        [
            "(a,x,0):(a,u,0)", "(a,x,0):(a,w,1)", "(a,y,1):(a,u,0)", "(a,y,1):(a,w,1)",
            "(a,z,2):(a,u,0)", "(a,z,2):(a,w,1)", "(b,u,3):(b,i,3)", "(b,u,3):(b,k,5)",
            "(b,w,5):(b,i,3)", "(b,w,5):(b,k,5)", "(a,i,6):(a,x,6)", "(a,i,6):(a,z,8)",
            "(a,j,7):(a,x,6)", "(a,j,7):(a,z,8)", "(a,k,8):(a,x,6)", "(a,k,8):(a,z,8)",
        ]
    )  # fmt: skip
    # every result carries its window's max timestamp
    assert {(r.value[:9], r.timestamp) for r in sink.records} >= {("(a,x,0):(", 2), ("(b,u,3):(", 5), ("(a,i,6):(", 8)}


def test_self_join_of_flinks_co_group_join_it_case() -> None:
    env = stepping()
    source = flink_source(env, JOIN_FIRST)
    result = (
        source.join(source)
        .where(0)
        .equal_to(0)
        .window(TumblingEventTimeWindows.of(3))
        .apply(lambda a, b: tuple_string(a) + ":" + tuple_string(b))
        .execute_and_collect()
    )
    windows = [["(a,x,0)", "(a,y,1)", "(a,z,2)"], ["(b,u,3)", "(b,w,5)"], ["(a,i,6)", "(a,j,7)", "(a,k,8)"]]
    assert sorted(result) == sorted(f"{a}:{b}" for group in windows for a in group for b in group)


# -- flat joins, functions' lifecycle, triggers, evictors, sessions ----------------------------------------------


class Repeat(FlatJoinFunction[Any, Any, Any]):
    """Emits each pair as often as the right element's count says (none for 0)."""

    def open(self, runtime_context: Any) -> None:
        self.opened_in = runtime_context.get_task_name()

    def join(self, first: Any, second: Any) -> Iterable[Any]:
        assert self.opened_in  # open() reached the wrapped function
        return [(first[1], second[1])] * second[2]


def keyed_pairs() -> tuple[StreamEnvironment, DataStream, DataStream]:
    env = stepping()
    left = flink_source(env, [("a", "l1", 1), ("a", "l2", 2)])
    right = flink_source(env, [("a", "r0", 0, 0), ("a", "r2", 2, 1)])
    return env, left, right


@pytest.mark.parametrize("style", ["class-to-apply", "class-to-flat-apply", "callable-to-flat-apply"])
def test_flat_join_emits_any_number_of_results_per_pair(style: str) -> None:
    _, left, right = keyed_pairs()
    windowed = left.join(right).where(0).equal_to(0).window(TumblingEventTimeWindows.of(10))
    if style == "class-to-apply":
        joined = windowed.apply(Repeat())
    elif style == "class-to-flat-apply":
        joined = windowed.flat_apply(Repeat())
    else:
        joined = windowed.flat_apply(lambda a, b: [(a[1], b[1])] * b[2])
    # right elements have the counts 0 and 2: no result with r0, two per left element with r2
    assert sorted(joined.execute_and_collect()) == [("l1", "r2"), ("l1", "r2"), ("l2", "r2"), ("l2", "r2")]


def test_trigger_and_evictor_of_a_join_see_the_tagged_elements_of_both_sides() -> None:
    events = [("a", "l0", 0), ("a", "r1", 1), ("a", "l2", 2), ("a", "r3", 3)]

    def build(evict: bool) -> list[Any]:
        env = stepping()
        source = flink_source(env, events)
        left = source.filter(lambda e: e[1].startswith("l"))
        right = source.filter(lambda e: e[1].startswith("r"))
        windowed = left.join(right).where(0).equal_to(0).window(GlobalWindows.create()).trigger(CountTrigger.of(2))
        if evict:
            windowed = windowed.evictor(CountEvictor.of(2))
        sink = ListSink()
        windowed.apply(lambda a, b: (a[1], b[1])).sink_to(sink)
        env.execute()
        assert {record.timestamp for record in sink.records} == {LONG_MAX}  # the global window's max timestamp
        return sink.values

    # CountTrigger(2) fires after l0, r1 and again after l2, r3 with the whole (never purged) pane
    assert build(evict=False) == [("l0", "r1"), ("l0", "r1"), ("l0", "r3"), ("l2", "r1"), ("l2", "r3")]
    # CountEvictor(2) keeps the last two elements of the pane for the function: the second firing sees l2, r3
    assert build(evict=True) == [("l0", "r1"), ("l2", "r3")]


def test_co_group_over_session_windows_merges_both_sides_sessions() -> None:
    env = stepping()
    source = flink_source(env, [("a", "l", 0), ("a", "r", 2), ("a", "l", 4), ("a", "r", 10), ("a", "l", 11)])
    left = source.filter(lambda e: e[1] == "l")
    right = source.filter(lambda e: e[1] == "r")
    result = (
        left.co_group(right)
        .where(0)
        .equal_to(0)
        .window(EventTimeSessionWindows.with_gap(3))
        .apply(lambda first, second: [([e[2] for e in first], [e[2] for e in second])])
        .execute_and_collect()
    )
    # a gap of 3: 0, 2, 4 form one session [0, 7) across both sides, 10 and 11 another [10, 14)
    assert result == [([0, 4], [2]), ([11], [10])]


# -- the shared scenarios: lateness and cleanup ------------------------------------------------------------------


def test_window_join_fires_again_for_late_elements_within_the_allowed_lateness() -> None:
    assert sorted(run(scenarios.window_join, scenarios.WINDOW_JOIN)) == sorted(scenarios.WINDOW_JOIN_EXPECTED)


def test_window_co_group_drops_late_elements_and_keeps_one_sided_groups() -> None:
    assert sorted(run(scenarios.window_co_group, scenarios.WINDOW_JOIN)) == sorted(scenarios.WINDOW_CO_GROUP_EXPECTED)


def test_interval_join_sends_late_elements_to_their_sides_outputs() -> None:
    env = stepping()
    joined = scenarios.interval_join_with_late_outputs(scenarios.source(env, scenarios.INTERVAL_LATE))
    main, left_late, right_late = ListSink(), ListSink(), ListSink()
    joined.sink_to(main)
    joined.get_side_output(scenarios.LEFT_LATE).sink_to(left_late)
    joined.get_side_output(scenarios.RIGHT_LATE).sink_to(right_late)
    env.execute()
    assert sorted((r.value, r.timestamp) for r in main.records) == sorted(scenarios.INTERVAL_LATE_EXPECTED)
    assert [(r.value, r.timestamp) for r in left_late.records] == scenarios.INTERVAL_LEFT_LATE_EXPECTED
    assert [(r.value, r.timestamp) for r in right_late.records] == scenarios.INTERVAL_RIGHT_LATE_EXPECTED


def test_interval_join_forgets_a_left_element_once_the_watermark_reaches_its_upper_bound() -> None:
    results = run(scenarios.interval_join_with_cleanup, scenarios.INTERVAL_CLEANUP)
    assert sorted(results) == sorted(scenarios.INTERVAL_CLEANUP_EXPECTED)


def test_the_scenarios_give_the_same_results_in_one_job() -> None:
    env = stepping()
    stream = scenarios.source(env, scenarios.ALL_EVENTS)
    sinks = {name: ListSink() for name in ("join", "co_group", "late", "cleanup")}
    scenarios.window_join(stream).sink_to(sinks["join"])
    scenarios.window_co_group(stream).sink_to(sinks["co_group"])
    scenarios.interval_join_with_late_outputs(stream).sink_to(sinks["late"])
    scenarios.interval_join_with_cleanup(stream).sink_to(sinks["cleanup"])
    env.execute()
    got = {name: sorted((r.value, r.timestamp) for r in sink.records) for name, sink in sinks.items()}
    assert got == {
        "join": sorted(scenarios.WINDOW_JOIN_EXPECTED),
        "co_group": sorted(scenarios.WINDOW_CO_GROUP_EXPECTED),
        "late": sorted(scenarios.INTERVAL_LATE_EXPECTED),
        "cleanup": sorted(scenarios.INTERVAL_CLEANUP_EXPECTED),
    }


# -- IntervalJoinITCase -------------------------------------------------------------------------------------------

ASCENDING = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])


def interval_strings(left: list[Any], right: list[Any], lower: int, upper: int, exclusive: bool = False) -> list[str]:
    env = stepping()
    one = env.from_collection(left).assign_timestamps_and_watermarks(ASCENDING).key_by(0)
    two = env.from_collection(right).assign_timestamps_and_watermarks(ASCENDING).key_by(0)
    joined = one.interval_join(two).between(lower, upper)
    if exclusive:
        joined = joined.upper_bound_exclusive().lower_bound_exclusive()
    return sorted(joined.process(lambda a, b, ctx: [f"({a[0]},{a[1]}):({b[0]},{b[1]})"]).execute_and_collect())


def test_interval_join_can_join_over_the_same_key() -> None:
    elements = [("key", i) for i in range(6)]
    assert interval_strings(elements, elements, 0, 0) == [f"(key,{i}):(key,{i})" for i in range(6)]


def test_interval_join_joins_only_within_a_key() -> None:
    elements = [("key1", 0), ("key2", 1), ("key1", 2), ("key2", 3), ("key1", 4), ("key2", 5)]
    # unkeyed, [0, 1] would also pair (1, 2), (2, 3), ...: keys keep them apart
    assert interval_strings(elements, elements, 0, 1) == sorted(f"({k},{t}):({k},{t})" for k, t in elements)


def test_interval_join_bounds_are_inclusive_by_default_and_can_be_exclusive() -> None:
    elements = [("key", 0), ("key", 1), ("key", 2)]
    assert interval_strings(elements, elements, 0, 2) == [
        "(key,0):(key,0)", "(key,0):(key,1)", "(key,0):(key,2)", "(key,1):(key,1)", "(key,1):(key,2)",
        "(key,2):(key,2)",
    ]  # fmt: skip
    assert interval_strings(elements, elements, 0, 2, exclusive=True) == ["(key,0):(key,1)", "(key,1):(key,2)"]


class WatermarkInEvent(WatermarkGenerator):
    """Emits the watermark an element carries as its third field (Flink's ``ctx.emitWatermark`` in the source)."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if len(event) > 2:
            output.emit_watermark(Watermark(event[2]))

    def on_periodic_emit(self, output: Any) -> None:
        """Punctuated only."""


def test_bounded_unordered_streams_still_join_correctly() -> None:
    strategy = WatermarkStrategy.for_generator(WatermarkInEvent).with_timestamp_assigner(lambda e, _: e[1])
    env = stepping()
    one = [
        ("key", 5),
        ("key", 1),
        ("key", 4),
        ("key", 3),
        ("key", 2, 5),
        ("key", 9),
        ("key", 8),
        ("key", 7),
        ("key", 6),
    ]
    two = [
        ("key", 2),
        ("key", 1),
        ("key", 3),
        ("key", 4),
        ("key", 5, 5),
        ("key", 8),
        ("key", 7),
        ("key", 9),
        ("key", 6),
    ]
    joined = (
        env.from_collection(one)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(0)
        .interval_join(env.from_collection(two).assign_timestamps_and_watermarks(strategy).key_by(0))
        .between(-1, 1)
        .process(lambda a, b, ctx: [(a[1], b[1])])
    )
    expected = [(i, j) for i in range(1, 10) for j in range(1, 10) if abs(i - j) <= 1]
    assert sorted(joined.execute_and_collect()) == expected


class CountingJoin(ProcessJoinFunction[Any, Any, Any]):
    """Keyed state per join key, and a side output of pairs whose right element came first."""

    EARLY = OutputTag("right-first")

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("pairs"))

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterable[Any]:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        if ctx.get_right_timestamp() < ctx.get_left_timestamp():
            ctx.output(self.EARLY, (left[1], right[1]))
        yield (left[0], count)


def test_process_join_function_has_keyed_state_and_side_outputs() -> None:
    env = stepping()
    source = flink_source(env, [("a", "l", 1), ("b", "r", 0), ("b", "l", 1), ("a", "r", 2), ("a", "r", 3)])
    left = source.filter(lambda e: e[1] == "l").key_by(0)
    right = source.filter(lambda e: e[1] == "r").key_by(0)
    joined = left.interval_join(right).between(-5, 5).process(CountingJoin())
    main, early = ListSink(), ListSink()
    joined.sink_to(main)
    joined.get_side_output(CountingJoin.EARLY).sink_to(early)
    env.execute()
    # b's right element waits for its left one; a's left element waits for both right ones (counted per key)
    assert [(r.value, r.timestamp) for r in main.records] == [(("b", 1), 1), (("a", 1), 2), (("a", 2), 3)]
    assert [(r.value, r.timestamp) for r in early.records] == [(("l", "r"), 1)]


def test_declared_output_types_apply_to_join_results() -> None:
    env = stepping()
    left = flink_source(env, [("a", 1)])
    right = flink_source(env, [("a", 2)])
    typed = (
        left.join(right)
        .where(0)
        .equal_to(0)
        .window(TumblingEventTimeWindows.of(10))
        .apply(lambda a, b: {"k": a[0], "gap": b[1] - a[1]}, output_type="k STRING, gap BIGINT")
    )
    assert typed.execute_and_collect() == [{"k": "a", "gap": 1}]
    env = stepping()
    wrong = (
        flink_source(env, [("a", 1)])
        .key_by(0)
        .interval_join(flink_source(env, [("a", 2)]).key_by(0))
        .between(0, 5)
        .process(lambda a, b, ctx: [{"k": a[0], "gap": "not a number"}], output_type="k STRING, gap BIGINT")
    )
    with pytest.raises(BadRecordError, match="does not fit"):
        wrong.execute_and_collect()


def test_a_failing_join_function_names_the_step() -> None:
    env = stepping()
    joined = (
        flink_source(env, [("a", 1)])
        .join(flink_source(env, [("a", 2)]))
        .where(0)
        .equal_to(0)
        .window(TumblingEventTimeWindows.of(10))
        .apply(lambda a, b: 1 // 0)
    )
    with pytest.raises(UserFunctionError, match="Window\\(Join\\)") as failure:
        joined.execute_and_collect()
    assert isinstance(failure.value.__cause__, ZeroDivisionError)


# -- construction errors -----------------------------------------------------------------------------------------


def test_invalid_join_configurations_raise_when_given() -> None:
    env = stepping()
    a = env.from_collection([("a", 1)])
    b = env.from_collection([("a", 2)])
    with pytest.raises(TypeError, match="key selector"):
        a.join(b).where(None)
    with pytest.raises(TypeError, match="WindowAssigner"):
        a.join(b).where(0).equal_to(0).window("tumbling")  # type: ignore[arg-type]
    sessions = a.co_group(b).where(0).equal_to(0).window(EventTimeSessionWindows.with_gap(5))
    with pytest.raises(UnsupportedOperationError, match="merging"):
        sessions.trigger(DeltaTrigger.of(1.0, lambda old, new: 0.0))
    with pytest.raises(ValueError, match="lateness cannot be negative"):
        sessions.allowed_lateness(-1)
    with pytest.raises(TypeError, match="Evictor"):
        sessions.evictor("count")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CoGroupFunction"):
        sessions.apply(ToStrings())


def test_invalid_interval_joins_raise_when_given() -> None:
    env = stepping()
    a = env.from_collection([("a", 1)])
    b = env.from_collection([("a", 2)])
    with pytest.raises(TypeError, match="key_by"):
        a.key_by(0).interval_join(b)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lowerBound <= upperBound"):
        a.key_by(0).interval_join(b.key_by(0)).between(2, 1)
    with pytest.raises(UnsupportedOperationError, match="event time"):
        a.key_by(0).interval_join(b.key_by(0)).in_processing_time().between(0, 1)
    with pytest.raises(TypeError, match="lower_bound"):
        a.key_by(0).interval_join(b.key_by(0)).between(0.5, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="OutputTag"):
        a.key_by(0).interval_join(b.key_by(0)).between(0, 1).side_output_left_late_data("late")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ProcessJoinFunction"):
        a.key_by(0).interval_join(b.key_by(0)).between(0, 1).process(ToStrings())


def test_inputs_keyed_by_different_types_are_refused_when_both_types_are_known() -> None:
    """Flink refuses a window join whose two keys' types differ (``equalTo``) and two keyed inputs of one
    operator (connect, interval join) with differing key types: keys of different types never meet. panes
    knows a key's type when it is declared or read from a field of a typed stream."""
    from panes.types import Types

    env = stepping()
    users = env.from_collection([{"id": 1, "name": "ann"}], type_info="id BIGINT, name STRING")
    clicks = env.from_collection([{"user": "1", "page": "/"}], type_info="user STRING, page STRING")
    untyped = env.from_collection([("1", 2)])
    with pytest.raises(ValueError, match="first int64, second string"):
        users.join(clicks).where("id").equal_to("user")
    with pytest.raises(ValueError, match="first string, second int64"):
        untyped.co_group(users).where(0, Types.STRING()).equal_to("id")
    with pytest.raises(UnsupportedOperationError, match=r"interval join: .* first int64, second string"):
        users.key_by("id").interval_join(clicks.key_by("user"))
    with pytest.raises(UnsupportedOperationError, match=r"connected keyed streams: .* first int64, second string"):
        users.key_by("id").connect(untyped.key_by(0, Types.STRING())).process(ToStrings())
    # what is not known is not refused; a declared type is what counts, and equal types pass
    users.join(untyped).where("id").equal_to(0)
    users.join(clicks).where("id", Types.STRING()).equal_to("user")
    users.key_by("id").interval_join(users.key_by("id"))
    users.connect(clicks).key_by("id", "user", Types.STRING())
