"""State time-to-live in a keyed process function on the local runner, whose stepping clock makes processing
time deterministic: element ``i`` is processed at ``i * 100`` ms.

With a TTL of 250 ms (Flink's ``OnCreateAndWrite`` and ``NeverReturnExpired`` defaults), a key's count written
at time ``w`` is visible until ``w + 250`` (exclusive, ``TtlUtils.expired``: ``w + ttl <= now``), and a key seen
again later starts from nothing, as Flink's ``TtlStateTestBase.testExactExpirationOnWrite`` states for a value.
"""

from __future__ import annotations

from typing import Any

from panes.datastream import KeyedProcessFunction, StreamEnvironment
from panes.local import LocalRunner
from panes.state import ListStateDescriptor, StateTtlConfig, ValueStateDescriptor


class CountWithTtl(KeyedProcessFunction[str, str, tuple[str, int, int, list[int]]]):
    """Emits (key, count, processing time, times of the key's elements still remembered)."""

    def open(self, runtime_context: Any) -> None:
        ttl = StateTtlConfig.new_builder(250).build()
        count = ValueStateDescriptor("count")
        count.enable_time_to_live(ttl)
        seen = ListStateDescriptor("seen")
        seen.enable_time_to_live(ttl)
        self.count = runtime_context.get_state(count)
        self.seen = runtime_context.get_list_state(seen)

    def process_element(self, value: str, ctx: Any) -> Any:
        now = ctx.timer_service().current_processing_time()
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        self.seen.add(now)
        yield (value, count, now, list(self.seen.get()))


def test_expired_counts_start_afresh_and_list_elements_expire_one_by_one() -> None:
    env = StreamEnvironment(LocalRunner(clock="stepping", step=100, advance="per_element"))
    keys = ["a", "a", "b", "a", "b", "b", "a"]
    got = env.from_collection(keys).key_by(lambda k: k).process(CountWithTtl()).execute_and_collect()
    assert got == [
        ("a", 1, 0, [0]),
        ("a", 2, 100, [0, 100]),
        ("b", 1, 200, [200]),
        ("a", 3, 300, [100, 300]),  # the count of 100 lives until 350; the list element of 0 expired at 250
        ("b", 2, 400, [200, 400]),
        ("b", 3, 500, [400, 500]),
        ("a", 1, 600, [600]),  # the count written at 300 expired at 550
    ]


# micro-batches with the processing time of each (the Spark test runs the same)
TTL_BATCHES = [["a", "b"], ["a"], ["a", "b"], ["a"]]
TTL_TIMES = [0, 100, 300, 600]
TTL_EXPECTED = sorted(
    [
        ("a", 1, 0, [0]),
        ("a", 2, 100, [0, 100]),
        ("a", 3, 300, [100, 300]),
        ("a", 1, 600, [600]),
        ("b", 1, 0, [0]),
        ("b", 1, 300, [300]),  # b's count of 0 expired at 250
    ]
)


def test_ttl_over_micro_batches_with_their_processing_times() -> None:
    env = StreamEnvironment("local")
    source = env.from_micro_batches(TTL_BATCHES, processing_times=TTL_TIMES)
    got = source.key_by(lambda k: k).process(CountWithTtl()).execute_and_collect()
    assert sorted(got) == TTL_EXPECTED
