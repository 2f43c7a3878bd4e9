"""PyFlink's spellings, accepted as PyFlink users write them (signatures from apache/flink
flink-python/pyflink/datastream/*.py and its tests test_data_stream.py and test_window.py)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from panes.datastream import (
    CloseableIterator,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from panes.errors import UnsupportedOperationError
from panes.functions import AggregateFunction
from panes.functions.stream import OnTimerContext
from panes.state import ListStateDescriptor, MapStateDescriptor
from panes.time import Time
from panes.types import Types
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    EventTimeSessionWindows,
    Evictor,
    GlobalWindow,
    MergingWindowAssigner,
    ProcessWindowFunction,
    PurgingTrigger,
    SlidingEventTimeWindows,
    Trigger,
    TumblingEventTimeWindows,
    WindowAssigner,
)


def env(parallelism: int = 1) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment("local", parallelism=parallelism)


# -- Time ----------


def test_time_units_and_equality() -> None:
    assert Time.milliseconds(5).to_milliseconds() == 5
    assert Time.seconds(1).to_milliseconds() == 1_000
    assert Time.minutes(2).to_milliseconds() == 120_000
    assert Time.hours(1).to_milliseconds() == 3_600_000
    assert Time.days(1).to_milliseconds() == 86_400_000
    assert Time.seconds(60) == Time.minutes(1) and hash(Time.seconds(60)) == hash(Time.minutes(1))
    assert pickle.loads(pickle.dumps(Time.hours(-8))) == Time.hours(-8)
    with pytest.raises(TypeError, match="int"):
        Time.seconds(1.5)  # type: ignore[arg-type]


def test_time_is_accepted_wherever_a_duration_is() -> None:
    # PyFlink's assigners take Time: TumblingEventTimeWindows.of(Time.seconds(5)) (window.py, test_window.py)
    assert repr(TumblingEventTimeWindows.of(Time.seconds(5), Time.seconds(1))) == repr(
        TumblingEventTimeWindows.of(5_000, 1_000)
    )
    assert repr(SlidingEventTimeWindows.of(Time.minutes(1), Time.seconds(10))) == repr(
        SlidingEventTimeWindows.of(60_000, 10_000)
    )
    assert repr(EventTimeSessionWindows.with_gap(Time.minutes(1))) == repr(EventTimeSessionWindows.with_gap(60_000))
    assert repr(ContinuousEventTimeTrigger.of(Time.seconds(1))) == repr(ContinuousEventTimeTrigger.of(1_000))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Time.seconds(2))
    assert strategy.max_out_of_orderness == 2_000
    e = env()
    e.set_auto_watermark_interval(Time.milliseconds(50))
    assert e.get_auto_watermark_interval() == 50
    with pytest.raises(ValueError, match=r"offset"):
        TumblingEventTimeWindows.of(Time.seconds(1), Time.seconds(1))


def test_time_drives_a_windowed_job() -> None:
    e = env()
    result = (
        # ("b", 300) comes after the watermark passed 999 + 10: late, dropped (Flink's allowed lateness)
        e.from_micro_batches([[("a", 100), ("b", 200), ("a", 900), ("a", 1_200)], [("b", 300)]])
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(0)).with_timestamp_assigner(
                lambda v, _: v[1]
            )
        )
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .allowed_lateness(Time.milliseconds(10))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .execute_and_collect()
    )
    assert sorted(result) == [("a", 1_000), ("a", 1_200), ("b", 200)]


# -- window reduce / aggregate arguments ----------


class SumAggregate(AggregateFunction[Any, Any, Any]):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, accumulator: Any) -> Any:
        return (accumulator[0] + value[1], accumulator[1] + 1)

    def get_result(self, accumulator: Any) -> Any:
        return accumulator[0] / accumulator[1]

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


def test_window_reduce_and_aggregate_take_pyflinks_type_arguments() -> None:
    # test_window.py: .aggregate(..., accumulator_type=Types.TUPLE([...]), output_type=Types.DOUBLE())
    e = env()
    data = e.from_collection([("a", 1), ("a", 3), ("b", 4), ("a", 5)])
    averages = (
        data.key_by(lambda v: v[0])
        .count_window(2)
        .aggregate(
            SumAggregate(), accumulator_type=Types.TUPLE([Types.LONG(), Types.LONG()]), output_type=Types.DOUBLE()
        )
    )
    sums = (
        data.key_by(lambda v: v[0])
        .count_window(2)
        .reduce(lambda a, b: (a[0], a[1] + b[1]), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    )
    all_sums = data.count_window_all(2).reduce(
        lambda a, b: ("*", a[1] + b[1]), output_type=[Types.STRING(), Types.INT()]
    )
    assert averages.execute_and_collect() == [2.0]
    assert sums.execute_and_collect() == [("a", 4)]
    # a list of types is PyFlink's Types.ROW(list): the results are Rows
    assert sorted(tuple(row) for row in all_sums.execute_and_collect()) == [("*", 4), ("*", 9)]
    with pytest.raises(TypeError, match="record type"):
        data.key_by(lambda v: v[0]).count_window(2).aggregate(SumAggregate(), accumulator_type=42)


# -- count windows: PyFlink's names, Java's semantics ----------


def test_count_assigners_are_javas_count_windows() -> None:
    tumbling = CountTumblingWindowAssigner.of(3)
    assert isinstance(tumbling.get_default_trigger(), PurgingTrigger) and tumbling.get_default_evictor() is None
    sliding = CountSlidingWindowAssigner.of(3, 1)
    assert isinstance(sliding.get_default_trigger(), CountTrigger)
    evictor = sliding.get_default_evictor()
    assert isinstance(evictor, CountEvictor)
    assert list(sliding.assign_windows("x", 0, None)) == [GlobalWindow()]  # type: ignore[arg-type]
    for bad in ((0,), (-1,)):
        with pytest.raises(ValueError, match="size > 0"):
            CountTumblingWindowAssigner.of(*bad)
    with pytest.raises(ValueError, match="slide > 0"):
        CountSlidingWindowAssigner.of(2, 0)


def test_sliding_count_window_fires_the_partial_first_windows_as_java_does() -> None:
    # Java's countWindow(2, 1) = GlobalWindows + CountTrigger(1) + CountEvictor(2) fires on every element over
    # the last 2: [1], [1, 2], [2, 3]; PyFlink's CountSlidingWindowAssigner fires only full windows: [1,2], [2,3]
    def collect(windowed: Any) -> list[list[int]]:
        return windowed.apply(lambda key, window, values: [list(values)]).execute_and_collect()

    e = env()
    data = e.from_collection([1, 2, 3])
    assert collect(data.key_by(lambda v: 0).count_window(2, 1)) == [[1], [1, 2], [2, 3]]
    assert collect(data.key_by(lambda v: 0).window(CountSlidingWindowAssigner.of(2, 1))) == [[1], [1, 2], [2, 3]]
    assert collect(data.key_by(lambda v: 0).window(CountTumblingWindowAssigner.of(2))) == [[1, 2]]


def test_count_window_is_pyflinks_value_class() -> None:
    window = CountWindow(3)
    assert window.id == 3 and window.max_timestamp() == 2**63 - 1
    assert window == CountWindow(3) and window != CountWindow(4)
    # Flink's MathUtils.longToIntWithBitMixing(0) is 0; other ids spread
    assert CountWindow(0).java_hash_code() == 0
    assert CountWindow(1).java_hash_code() != CountWindow(2).java_hash_code()
    assert -(2**31) <= CountWindow(12345).java_hash_code() < 2**31


# -- state ----------


class DictLikeMapState(KeyedProcessFunction[Any, Any, Any]):
    """Exercises MapState as PyFlink's tests do (test_data_stream.py: map_state[k], k in map_state, ...)."""

    def open(self, runtime_context: Any) -> None:
        self.seen = runtime_context.get_map_state(MapStateDescriptor("seen", Types.STRING(), Types.INT()))
        self.log = runtime_context.get_list_state(ListStateDescriptor("log", Types.STRING()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        key, word = value
        first = word not in self.seen
        self.seen[word] = (self.seen[word] or 0) + 1
        if word == "drop":
            del self.seen[word]
            del self.seen["never-there"]
        self.log.add(word)
        yield (key, word, first, sorted(self.seen), sorted(self.seen.items()), list(self.log))


def test_map_state_reads_like_a_dict() -> None:
    e = env()
    rows = [("k", "a"), ("k", "b"), ("k", "a"), ("k", "drop"), ("j", "a")]
    out = e.from_collection(rows).key_by(lambda v: v[0]).process(DictLikeMapState()).execute_and_collect()
    assert out == [
        ("k", "a", True, ["a"], [("a", 1)], ["a"]),
        ("k", "b", True, ["a", "b"], [("a", 1), ("b", 1)], ["a", "b"]),
        ("k", "a", False, ["a", "b"], [("a", 2), ("b", 1)], ["a", "b", "a"]),
        ("k", "drop", True, ["a", "b"], [("a", 2), ("b", 1)], ["a", "b", "a", "drop"]),
        ("j", "a", True, ["a"], [("a", 1)], ["a"]),
    ]


def test_map_state_descriptor_takes_key_and_value_types() -> None:
    descriptor = MapStateDescriptor("m", Types.STRING(), Types.LONG())
    assert descriptor.get_name() == "m"
    assert descriptor.key_type_info == Types.STRING() and descriptor.value_type_info == Types.LONG()
    assert descriptor == MapStateDescriptor("m")
    with pytest.raises(TypeError, match="record type"):
        MapStateDescriptor("m", 1, Types.LONG())
    with pytest.raises(ValueError, match="non-empty"):
        MapStateDescriptor("", Types.STRING(), Types.LONG())


# -- execute_and_collect ----------


def test_execute_and_collect_is_an_iterator_a_context_manager_and_a_list() -> None:
    e = env()
    results = e.from_collection([1, 2, 3]).map(lambda v: v * 10).execute_and_collect()
    assert isinstance(results, CloseableIterator)
    assert results == [10, 20, 30] and len(results) == 3
    assert next(results) == 10 and results.next() == 20 and next(results) == 30
    with pytest.raises(StopIteration):
        next(results)
    with e.from_collection([1, 2, 3]).execute_and_collect() as iterator:
        assert list(iter(iterator)) == [1, 2, 3]
    assert list(iterator) == []  # closed on exit
    assert e.from_collection([1, 2, 3]).execute_and_collect(limit=2) == [1, 2]
    assert e.from_collection([1, 2, 3]).execute_and_collect("named job", 1) == [1]
    with pytest.raises(ValueError, match="limit"):
        e.from_collection([1]).execute_and_collect(limit=0)


# -- get_config ----------


def test_get_config_reads_and_writes_the_environment() -> None:
    e = env()
    config = e.get_config()
    assert config.get_auto_watermark_interval() == 200 and config.get_parallelism() == 1
    config.set_auto_watermark_interval(Time.milliseconds(40)).set_parallelism(3).set_max_parallelism(64)
    assert e.get_auto_watermark_interval() == 40 and e.get_parallelism() == 3 and e.get_max_parallelism() == 64
    assert e.config().auto_watermark_interval == 40
    with pytest.raises(ValueError, match="parallelism"):
        config.set_parallelism(0)
    with pytest.raises(ValueError, match=">= 0"):
        config.set_auto_watermark_interval(-1)


# -- nested names ----------


def test_pyflinks_nested_context_names() -> None:
    assert KeyedProcessFunction.OnTimerContext is OnTimerContext
    assert KeyedCoProcessFunction.OnTimerContext is OnTimerContext
    assert CoProcessFunction.Context is not None and ProcessWindowFunction.Context is not None
    assert Trigger.TriggerContext is not None and Trigger.OnMergeContext is not None
    assert WindowAssigner.WindowAssignerContext is not None and Evictor.EvictorContext is not None
    seen: list[Any] = []
    callback = MergingWindowAssigner.MergeCallback(lambda merged, result: seen.append((merged, result)))
    callback.merge([1, 2], 3)
    callback([4], 5)
    assert seen == [([1, 2], 3), ([4], 5)]


class TimerDomain(KeyedProcessFunction[Any, Any, Any]):
    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        ctx.timer_service().register_event_time_timer(10)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield (ctx.get_current_key(), timestamp, ctx.time_domain().name)


def test_on_timer_context_as_pyflink_annotates_it() -> None:
    e = env()
    out = (
        e.from_collection([("a", 1)])
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
        )
        .key_by(lambda v: v[0])
        .process(TimerDomain())
        .execute_and_collect()
    )
    assert out == [("a", 10, "EVENT_TIME")]


# -- what PyFlink (and Java) refuse on a KeyedStream ----------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda k: k.name("x"), "Set name for KeyedStream"),
        (lambda k: k.get_name(), "Get name of KeyedStream|Get name for KeyedStream"),
        (lambda k: k.uid("x"), "Set uid for KeyedStream"),
        (lambda k: k.set_parallelism(2), "Set parallelism for KeyedStream"),
        (lambda k: k.shuffle(), "Cannot override partitioning"),
        (lambda k: k.rebalance(), "Cannot override partitioning"),
        (lambda k: k.rescale(), "Cannot override partitioning"),
        (lambda k: k.forward(), "Cannot override partitioning"),
        (lambda k: k.broadcast(), "Cannot override partitioning"),
        (lambda k: k.global_(), "Cannot override partitioning"),
        (lambda k: k.partition_custom(lambda key, n: 0, lambda v: v), "Cannot override partitioning"),
    ],
)
def test_keyed_stream_refuses_what_pyflink_refuses(call: Any, message: str) -> None:
    keyed = env().from_collection([1]).key_by(lambda v: v)
    with pytest.raises(UnsupportedOperationError, match=message):
        call(keyed)


def test_keyed_stream_operators_still_take_names() -> None:
    stream = env().from_collection([1]).key_by(lambda v: v).map(lambda v: v).name("mapped").uid("m").set_parallelism(2)
    assert stream.get_name() == "mapped" and stream.get_parallelism() == 2


def test_data_stream_sink_takes_a_name_uid_and_parallelism() -> None:
    from panes.datastream import ListSink

    e = env()
    sink = ListSink()
    named = e.from_collection([1, 2]).sink_to(sink).name("my sink").uid("s1").set_parallelism(1)
    assert named.transformation.name == "my sink" and named.transformation.uid == "s1"
    assert "my sink" in e.get_execution_plan()
    e.execute()
    assert sink.values == [1, 2]
    with pytest.raises(ValueError, match="parallelism"):
        named.set_parallelism(0)
