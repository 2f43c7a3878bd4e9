"""Keyed process functions with state and timers, and a two-input interval join, end to end."""

from __future__ import annotations

from typing import Any

from panes.datastream import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ListSink,
    StreamEnvironment,
    TimeDomain,
)
from panes.local import LocalRunner
from panes.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from panes.time import LONG_MAX
from panes.watermarks import WatermarkStrategy


def stepping_env(parallelism: int = 1) -> StreamEnvironment:
    return StreamEnvironment(
        LocalRunner(clock="stepping", advance="per_element"), parallelism=parallelism, auto_watermark_interval=200
    )


class CountWithTimeout(KeyedProcessFunction[str, tuple[str, int], tuple[str, int, int]]):
    """Counts per key; emits (key, count, timer time) when a key was silent for 1000 ms of event time."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.last = runtime_context.get_state(ValueStateDescriptor("last"))

    def process_element(self, value: tuple[str, int], ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        timeout = ctx.timestamp() + 1000
        self.last.update(timeout)
        ctx.timer_service().register_event_time_timer(timeout)
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        assert ctx.time_domain() is TimeDomain.EVENT_TIME
        if timestamp == self.last.value():
            yield (ctx.get_current_key(), self.count.value(), timestamp)


def test_keyed_process_function_with_state_and_event_time_timers() -> None:
    events = [("a", 0), ("b", 100), ("a", 500), ("a", 2000), ("b", 2600), ("a", 3200)]
    env = stepping_env()
    result = (
        env.from_collection(events)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
        )
        .key_by(lambda e: e[0])
        .process(CountWithTimeout())
    )
    sink = ListSink()
    result.sink_to(sink)
    env.execute()
    # a's timers 1000 and 1500 fire at watermark 1999 (after the element at 2000 moved "last" to 3000): silent;
    # b's timer 1100 fires then and emits; the final watermark fires the rest in timer order
    assert sink.values == [("b", 1, 1100), ("b", 2, 3600), ("a", 4, 4200)]
    # results of event-time timers carry the timer's time as timestamp
    assert all(record.timestamp == record.value[2] for record in sink.records)


class Sessionize(KeyedProcessFunction[str, str, tuple[str, list[str]]]):
    """Processing-time timeout: emits a key's buffered values 50 ms of processing time after the first."""

    def open(self, runtime_context: Any) -> None:
        self.buffer = runtime_context.get_list_state(ListStateDescriptor("buffer"))

    def process_element(self, value: str, ctx: Any) -> Any:
        if not self.buffer.get():
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 50)
        self.buffer.add(value)
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        assert ctx.time_domain() is TimeDomain.PROCESSING_TIME
        yield (ctx.get_current_key(), self.buffer.get())
        self.buffer.clear()


def test_processing_time_timers_follow_the_jobs_clock() -> None:
    env = StreamEnvironment(LocalRunner(clock="stepping", step=20, advance="per_element"))
    sink = ListSink()
    env.from_collection(["a1", "a2", "b1", "a3", "a4", "a5"]).key_by(lambda v: v[0]).process(Sessionize()).sink_to(sink)
    env.execute()
    # element i is processed at t = 20 i, then the clock steps and due timers fire: a's timer (50) fires at
    # t=60 after a1, a2 (and b1); b's timer (90) at t=100; a's second timer (110, set by a3) at t=120
    assert sink.values == [("a", ["a1", "a2"]), ("b", ["b1"]), ("a", ["a3", "a4", "a5"])]
    # processing-time timer results carry no timestamp
    assert all(record.timestamp is None for record in sink.records)


class IntervalJoin(KeyedCoProcessFunction[str, dict[str, Any], dict[str, Any], tuple[str, str]]):
    """Joins an order with its payment when the payment comes within 1000 ms after the order (event time);
    unpaid orders are reported when the window closes."""

    def open(self, runtime_context: Any) -> None:
        self.orders = runtime_context.get_map_state(MapStateDescriptor("orders"))
        self.payments = runtime_context.get_map_state(MapStateDescriptor("payments"))

    def process_element1(self, order: dict[str, Any], ctx: Any) -> Any:
        paid = self.payments.get(order["id"])
        if paid is not None and order["ts"] <= paid <= order["ts"] + 1000:
            self.payments.remove(order["id"])
            yield ("paid", order["id"])
        else:
            self.orders.put(order["id"], order["ts"])
            ctx.timer_service().register_event_time_timer(order["ts"] + 1000)

    def process_element2(self, payment: dict[str, Any], ctx: Any) -> Any:
        ordered = self.orders.get(payment["id"])
        if ordered is not None and ordered <= payment["ts"] <= ordered + 1000:
            self.orders.remove(payment["id"])
            ctx.timer_service().delete_event_time_timer(ordered + 1000)
            yield ("paid", payment["id"])
        else:
            self.payments.put(payment["id"], payment["ts"])

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        for order_id, ts in list(self.orders.items()):
            if ts + 1000 == timestamp:
                self.orders.remove(order_id)
                yield ("unpaid", order_id)


def test_interval_join_of_orders_and_payments_with_connect_and_timers() -> None:
    orders = [{"id": "o1", "ts": 0}, {"id": "o2", "ts": 100}, {"id": "o3", "ts": 300}, {"id": "o4", "ts": 3000}]
    payments = [{"id": "o2", "ts": 600}, {"id": "o3", "ts": 900}, {"id": "o1", "ts": 1500}, {"id": "o4", "ts": 2900}]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(500).with_timestamp_assigner(lambda e, _: e["ts"])
    env = stepping_env(parallelism=2)
    order_stream = env.from_collection(orders).assign_timestamps_and_watermarks(strategy)
    payment_stream = env.from_collection(payments).assign_timestamps_and_watermarks(strategy)
    joined = order_stream.connect(payment_stream).key_by(lambda o: o["id"], lambda p: p["id"]).process(IntervalJoin())
    sink = ListSink()
    joined.sink_to(sink)
    env.execute()
    # o3's payment arrives before its order and is matched then; o1 is paid too late (1500 > 0 + 1000);
    # o4's payment is stamped before the order (not within [3000, 4000])
    assert sorted(sink.values) == [("paid", "o2"), ("paid", "o3"), ("unpaid", "o1"), ("unpaid", "o4")]
    unpaid_times = {r.value[1]: r.timestamp for r in sink.records if r.value[0] == "unpaid"}
    assert unpaid_times == {"o1": 1000, "o4": 4000}


def test_two_input_watermark_is_the_minimum_of_both_inputs() -> None:
    class Watermarks(KeyedCoProcessFunction[int, int, int, int]):
        def process_element1(self, value: int, ctx: Any) -> Any:
            yield ctx.timer_service().current_watermark()

        def process_element2(self, value: int, ctx: Any) -> Any:
            yield ctx.timer_service().current_watermark()

    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v)
    env = stepping_env()
    fast = env.from_collection([1000, 2000, 3000]).assign_timestamps_and_watermarks(strategy)
    slow = env.from_collection([10, 20, 30]).assign_timestamps_and_watermarks(strategy)
    seen = fast.connect(slow).key_by(lambda v: 0, lambda v: 0).process(Watermarks()).execute_and_collect()
    # the combined watermark never exceeds the slow input's (max 29 before the end of input)
    assert max(seen) <= 29
    assert seen[-1] in (19, 29) and LONG_MAX not in seen
