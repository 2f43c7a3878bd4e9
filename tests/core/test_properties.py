"""Property tests (hypothesis): window arithmetic, merging, "no element is ever lost", and snapshots.

1. Window arithmetic holds for every timestamp (negative ones included) and every valid size, slide and
   offset, checked against brute-force definitions; session merging yields disjoint, non-touching
   windows that cover their inputs.
2. No element is lost. For random keyed streams with interleaved watermarks, every element is, at the
   end, in a fired pane, in the late-data side output, or still in window state; after the final
   ``Long.MAX_VALUE`` watermark every element of an event-time window has fired or gone to the late
   output. With a purging trigger the accounting is exact (multisets of element ids). This holds for
   triggers that fire at the end of their window; a trigger that does not (a ``CountTrigger`` on time
   windows) has its unfired contents discarded at cleanup time, as in Flink
   (``test_a_count_trigger_on_time_windows_discards_unfired_contents_at_cleanup``).
3. A snapshot taken at any step and restored into a fresh operator gives the same output (and the same
   state) as the uninterrupted run.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.elements import StreamRecord, Watermark
from panes.functions.base import AggregateFunction
from panes.tags import OutputTag
from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX, LONG_MIN, java_rem
from panes.windowing import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeEvictor,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from panes.windowing.merging_window_set import MergingWindowSet
from tests.core.support import records

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LATE: OutputTag[Any] = OutputTag("late")


class NoClock:
    """The assigner context; tumbling assigners ask it once for the stagger offset (0 when aligned)."""

    def get_current_processing_time(self) -> int:
        return 0


# -- 1. window arithmetic -----------------------------------------------------------------------------------------

timestamps = st.integers(min_value=-(2**62), max_value=2**62)


@st.composite
def size_and_offset(draw: st.DrawFn, max_size: int = 10**12) -> tuple[int, int]:
    size = draw(st.integers(min_value=1, max_value=max_size))
    offset = draw(st.integers(min_value=-(size - 1), max_value=size - 1))
    return size, offset


@PROPERTY
@given(timestamps, size_and_offset())
def test_tumbling_window_contains_the_timestamp_and_starts_at_offset_mod_size(ts: int, so: tuple[int, int]) -> None:
    size, offset = so
    [window] = TumblingEventTimeWindows.of(size, offset).assign_windows("x", ts, NoClock())
    assert window.start <= ts < window.end
    assert window.end - window.start == size
    assert (window.start - offset) % size == 0


def _java_window_start(ts: int, offset: int, size: int) -> int:
    """Flink's ``getWindowStartWithOffset`` with Java's remainder."""
    remainder = java_rem(ts - offset, size)
    return ts - (remainder + size) if remainder < 0 else ts - remainder


@PROPERTY
@given(timestamps, size_and_offset())
def test_window_start_agrees_with_flinks_java_formula(ts: int, so: tuple[int, int]) -> None:
    size, offset = so
    assert TimeWindow.get_window_start_with_offset(ts, offset, size) == _java_window_start(ts, offset, size)


@PROPERTY
@given(st.integers(min_value=-5000, max_value=5000), size_and_offset(max_size=300))
def test_window_start_is_the_latest_aligned_start_at_or_before_the_timestamp(ts: int, so: tuple[int, int]) -> None:
    size, offset = so
    brute = next(start for start in range(ts, ts - size - 1, -1) if (start - offset) % size == 0)
    assert TimeWindow.get_window_start_with_offset(ts, offset, size) == brute


@st.composite
def sliding_parameters(draw: st.DrawFn, max_slide: int = 10**6) -> tuple[int, int, int]:
    slide = draw(st.integers(min_value=1, max_value=max_slide))
    size = draw(st.integers(min_value=1, max_value=slide * 12))
    offset = draw(st.integers(min_value=-(slide - 1), max_value=slide - 1))
    return size, slide, offset


@PROPERTY
@given(timestamps, sliding_parameters())
def test_sliding_windows_all_contain_the_timestamp(ts: int, params: tuple[int, int, int]) -> None:
    size, slide, offset = params
    windows = SlidingEventTimeWindows.of(size, slide, offset).assign_windows("x", ts, NoClock())
    for window in windows:
        assert window.start <= ts < window.end
        assert window.end - window.start == size
        assert (window.start - offset) % slide == 0
    starts = [w.start for w in windows]
    assert starts == sorted(set(starts), reverse=True)  # distinct, latest start first
    assert all(a - b == slide for a, b in pairwise(starts))
    # ceil(size / slide) windows at most, floor(size / slide) at least; exactly size / slide when it divides
    assert size // slide <= len(windows) <= -(-size // slide)
    if size % slide == 0:
        assert len(windows) == size // slide


@PROPERTY
@given(st.integers(min_value=-3000, max_value=3000), sliding_parameters(max_slide=60))
def test_sliding_windows_are_exactly_the_aligned_windows_containing_the_timestamp(
    ts: int, params: tuple[int, int, int]
) -> None:
    size, slide, offset = params
    windows = SlidingEventTimeWindows.of(size, slide, offset).assign_windows("x", ts, NoClock())
    brute = {TimeWindow(start, start + size) for start in range(ts - size + 1, ts + 1) if (start - offset) % slide == 0}
    assert set(windows) == brute
    assert len(windows) == len(brute)


windows_lists = st.lists(
    st.builds(lambda s, n: TimeWindow(s, s + n), st.integers(-500, 500), st.integers(0, 60)), max_size=25
)


@PROPERTY
@given(windows_lists)
def test_session_merging_gives_disjoint_non_touching_windows_covering_the_inputs(windows: list[TimeWindow]) -> None:
    groups: list[tuple[set[TimeWindow], TimeWindow]] = []
    TimeWindow.merge_windows(windows, lambda merged, result: groups.append((set(merged), result)))
    grouped = set().union(*(g for g, _ in groups)) if groups else set()
    results = [result for _, result in groups] + [w for w in set(windows) if w not in grouped]

    for merged, result in groups:
        assert len(merged) > 1
        assert result == TimeWindow(min(w.start for w in merged), max(w.end for w in merged))
    for i, a in enumerate(results):  # pairwise: neither overlapping nor touching
        for b in results[i + 1 :]:
            assert not a.intersects(b)
    for window in windows:  # every input lies in exactly one result
        assert sum(r.start <= window.start and window.end <= r.end for r in results) == 1
    assert sum(len(g) for g, _ in groups) == len(grouped)  # groups are disjoint


@PROPERTY
@given(windows_lists)
def test_merging_window_set_keeps_in_flight_windows_disjoint_with_distinct_state_windows(
    windows: list[TimeWindow],
) -> None:
    window_set = MergingWindowSet(EventTimeSessionWindows.with_gap(1), [])
    for window in windows:
        result = window_set.add_window(window, lambda *args: None)
        assert result.start <= window.start and window.end <= result.end
        assert window_set.get_state_window(result) is not None
    in_flight = window_set.mapping.keys()
    for i, a in enumerate(in_flight):
        for b in in_flight[i + 1 :]:
            assert not a.intersects(b)
    for window in windows:
        assert sum(f.start <= window.start and window.end <= f.end for f in in_flight) == 1
    assert len(set(window_set.mapping.values())) == len(in_flight)


# -- streams ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Element:
    key: str
    ts: int
    id: int


@dataclass(frozen=True)
class Advance:
    """A watermark (event time) or a processing-time advance."""

    delta: int
    processing: bool = False


Step = Element | Advance


@st.composite
def streams(draw: st.DrawFn, processing: bool = False, max_steps: int = 45) -> list[Step]:
    kinds = ["element", "element", "watermark"] + (["processing"] if processing else [])
    steps: list[Step] = []
    for i in range(draw(st.integers(min_value=0, max_value=max_steps))):
        kind = draw(st.sampled_from(kinds))
        if kind == "element":
            steps.append(Element(draw(st.sampled_from("abc")), draw(st.integers(-1000, 3000)), i))
        else:
            steps.append(Advance(draw(st.integers(0, 400)), processing=kind == "processing"))
    return steps


@dataclass
class Config:
    """How to build the window operator: assigner, trigger, lateness, function kind, evictor."""

    name: str
    assigner: Callable[[], Any]
    trigger: Callable[[], Any] | None = None
    lateness: int = 0
    purging: bool = False
    event_time: bool = True
    spec: str = "list"
    evictor: Callable[[], Any] | None = None
    cleans_up: bool = True

    def harness(self, late_tag: OutputTag[Any] | None, processing_time: int = 0) -> WindowOperatorHarness:
        kwargs: dict[str, Any] = {}
        if self.spec == "list":
            kwargs["function"] = lambda key, ctx, elements: [(key, ctx.window(), tuple(e.id for e in elements))]
        elif self.spec == "reduce":
            kwargs["reduce"] = lambda a, b: Element(b.key, max(a.ts, b.ts), a.id * 1000 + b.id)
        else:
            kwargs["aggregate"] = IdCount()
        return WindowOperatorHarness(
            self.assigner(),
            key_selector=lambda e: e.key,
            trigger=self.trigger() if self.trigger else None,
            evictor=self.evictor() if self.evictor else None,
            allowed_lateness=self.lateness,
            late_data_tag=late_tag,
            processing_time=processing_time,
            **kwargs,
        )


class IdCount(AggregateFunction[Element, tuple[int, int], tuple[int, int]]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Element, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + 1, accumulator[1] + value.id)

    def get_result(self, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator

    def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


lateness = st.one_of(st.just(0), st.integers(1, 600))


@st.composite
def end_firing_configs(draw: st.DrawFn) -> Config:
    """Event-time configurations whose trigger fires at the end of every window (plus the global window
    with the end-of-stream trigger)."""
    kind = draw(st.sampled_from(["tumbling", "sliding", "session", "global"]))
    allowed = draw(lateness)
    if kind == "global":
        return Config(
            "global+end-of-stream", GlobalWindows.create_with_end_of_stream_trigger, event_time=False, cleans_up=False
        )
    if kind == "tumbling":
        size = draw(st.integers(1, 500))
        offset = draw(st.integers(-(size - 1), size - 1))
        assigner: Callable[[], Any] = lambda: TumblingEventTimeWindows.of(size, offset)  # noqa: E731
    elif kind == "sliding":
        slide = draw(st.integers(1, 200))
        size = slide * draw(st.integers(1, 4)) + draw(st.integers(0, slide - 1))  # size >= slide
        offset = draw(st.integers(-(slide - 1), slide - 1))
        assigner = lambda: SlidingEventTimeWindows.of(size, slide, offset)  # noqa: E731
    else:
        gap = draw(st.integers(1, 300))
        assigner = lambda: EventTimeSessionWindows.with_gap(gap)  # noqa: E731
    trigger_kind = draw(st.sampled_from(["event", "purging", "continuous", "purging-continuous"]))
    interval = draw(st.integers(10, 300))
    triggers: dict[str, Callable[[], Any]] = {
        "event": EventTimeTrigger.create,
        "purging": lambda: PurgingTrigger.of(EventTimeTrigger.create()),
        "continuous": lambda: ContinuousEventTimeTrigger.of(interval),
        "purging-continuous": lambda: PurgingTrigger.of(ContinuousEventTimeTrigger.of(interval)),
    }
    return Config(
        f"{kind}+{trigger_kind}",
        assigner,
        triggers[trigger_kind],
        lateness=allowed,
        purging=trigger_kind.startswith("purging"),
    )


@dataclass
class Run:
    fired: list[int] = field(default_factory=list)
    late: list[int] = field(default_factory=list)
    state: list[int] = field(default_factory=list)
    dropped: int = 0
    watermark_at_arrival: dict[int, int] = field(default_factory=dict)


def run(config: Config, steps: list[Step], late_tag: OutputTag[Any] | None, final: bool) -> Run:
    h = config.harness(late_tag)
    out = Run()
    watermark = LONG_MIN
    for step in steps:
        if isinstance(step, Element):
            out.watermark_at_arrival[step.id] = watermark
            h.process_element(step, step.ts)
        else:
            watermark = step.delta - 1500 if watermark == LONG_MIN else watermark + step.delta
            h.process_watermark(watermark)
    if final:
        h.process_watermark(LONG_MAX)
    out.fired = [i for (_, _, ids), _ in records(h) for i in ids]
    out.late = [r.value.id for r in h.get_side_output(LATE)]
    out.state = [e.id for _, _, elements in h.window_operator.backend.entries("window-contents") for e in elements]
    out.dropped = h.num_late_records_dropped
    return out


def expected_multiplicity(config: Config, element: Element, watermark: int) -> int:
    """How many panes a purged element reaches: one per window of it that was not late on arrival."""
    if not config.event_time:
        return 1
    windows = config.assigner().assign_windows(element, element.ts, NoClock())
    if isinstance(config.assigner(), EventTimeSessionWindows):
        return 1 if not element.ts + config.lateness <= watermark else 0
    return sum(1 for w in windows if w.max_timestamp() + config.lateness > watermark)


@PROPERTY
@given(end_firing_configs(), streams(), st.booleans())
def test_no_element_is_ever_lost(config: Config, steps: list[Step], final: bool) -> None:
    elements = [s for s in steps if isinstance(s, Element)]
    all_ids = Counter(e.id for e in elements)
    tagged = run(config, steps, LATE, final)

    # late elements never entered a window; each is reported once
    assert len(tagged.late) == len(set(tagged.late))
    assert not set(tagged.late) & (set(tagged.fired) | set(tagged.state))
    # every element is accounted for
    assert set(all_ids) == set(tagged.fired) | set(tagged.state) | set(tagged.late)
    if final:
        if config.cleans_up:
            assert tagged.state == []  # every time window was cleaned up at the end
        assert set(all_ids) == set(tagged.fired) | set(tagged.late)  # and everything fired or was late
    if config.purging:
        # exact accounting: each element is in as many panes as it had windows that were not yet late
        accounted = Counter(tagged.fired) + Counter(tagged.state)
        for element in elements:
            expected = expected_multiplicity(config, element, tagged.watermark_at_arrival[element.id])
            if config.name.startswith("session"):
                # a session element goes into exactly one (possibly merged) session, or is late
                assert accounted[element.id] + tagged.late.count(element.id) == 1
            else:
                assert accounted[element.id] == expected
                assert tagged.late.count(element.id) == (1 if expected == 0 else 0)

    # without a late-data side output, exactly those elements are dropped (and counted); nothing else changes
    untagged = run(config, steps, None, final)
    assert Counter(untagged.fired) == Counter(tagged.fired)
    assert Counter(untagged.state) == Counter(tagged.state)
    assert untagged.late == []
    assert untagged.dropped == len(tagged.late)
    assert tagged.dropped == 0


def test_a_count_trigger_on_time_windows_discards_unfired_contents_at_cleanup() -> None:
    """Why the property above needs triggers that fire at the window end: Flink drops what a trigger did
    not fire when the window is cleaned up."""
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(10),
        reduce=lambda a, b: a + b,
        key_selector=lambda v: 0,
        trigger=CountTrigger.of(3),
        late_data_tag=LATE,
    )
    for value in (1, 2, 3, 4, 5):
        h.process_element(value, 1)
    h.process_watermark(LONG_MAX)
    assert records(h) == [(1 + 2 + 3, 9)]  # 4 and 5 are gone: neither fired, nor late, nor in state
    assert h.get_side_output(LATE) == []
    assert h.window_operator.backend.is_empty()


# -- 3. snapshots ---------------------------------------------------------------------------------------------------


@st.composite
def any_configs(draw: st.DrawFn) -> Config:
    """Event- and processing-time configurations of every kind, for the snapshot property."""
    kind = draw(
        st.sampled_from(["tumbling", "sliding", "session", "global-count", "tumbling-pt", "sliding-pt", "session-pt"])
    )
    spec = draw(st.sampled_from(["list", "reduce", "aggregate"]))
    evictor = draw(st.sampled_from([None, "count", "time"]))
    evictors: dict[str | None, Callable[[], Any] | None] = {
        None: None,
        "count": lambda: CountEvictor.of(2),
        "time": lambda: TimeEvictor.of(50, do_evict_after=True),
    }
    size = draw(st.integers(1, 400))
    slide = draw(st.integers(1, size))
    gap = draw(st.integers(1, 300))
    assigners: dict[str, Callable[[], Any]] = {
        "tumbling": lambda: TumblingEventTimeWindows.of(size),
        "sliding": lambda: SlidingEventTimeWindows.of(size, slide),
        "session": lambda: EventTimeSessionWindows.with_gap(gap),
        "global-count": GlobalWindows.create,
        "tumbling-pt": lambda: TumblingProcessingTimeWindows.of(size),
        "sliding-pt": lambda: SlidingProcessingTimeWindows.of(size, slide),
        "session-pt": lambda: ProcessingTimeSessionWindows.with_gap(gap),
    }
    count = draw(st.integers(1, 4))
    interval = draw(st.integers(10, 200))
    trigger_choice = draw(st.sampled_from(["default", "count", "purging-count", "continuous"]))
    event_time = not kind.endswith("-pt") and kind != "global-count"
    triggers: dict[str, Callable[[], Any] | None] = {
        "default": None,
        "count": lambda: CountTrigger.of(count),
        "purging-count": lambda: PurgingTrigger.of(CountTrigger.of(count)),
        "continuous": (lambda: ContinuousEventTimeTrigger.of(interval))
        if event_time
        else (lambda: ContinuousProcessingTimeTrigger.of(interval)),
    }
    if kind == "global-count" and trigger_choice in ("default", "continuous"):
        trigger_choice = "count"
    return Config(
        f"{kind}+{trigger_choice}+{spec}+{evictor}",
        assigners[kind],
        triggers[trigger_choice],
        lateness=draw(lateness) if event_time else 0,
        event_time=event_time,
        spec=spec if evictor is None or spec != "aggregate" else "list",
        evictor=evictors[evictor],
    )


def drive(h: WindowOperatorHarness, steps: list[Step], clock: list[int], watermark: list[int]) -> None:
    for step in steps:
        if isinstance(step, Element):
            h.process_element(step, step.ts)
        elif step.processing:
            clock[0] += step.delta
            h.set_processing_time(clock[0])
        else:
            watermark[0] = step.delta - 1500 if watermark[0] == LONG_MIN else watermark[0] + step.delta
            h.process_watermark(watermark[0])


def outputs(h: WindowOperatorHarness) -> tuple[list[Any], list[Any]]:
    main = [(e.value, e.timestamp) if isinstance(e, StreamRecord) else e for e in h.get_output()]
    return main, [(r.value, r.timestamp) for r in h.get_side_output(LATE)]


@PROPERTY
@given(any_configs(), streams(processing=True), st.data())
def test_snapshot_and_restore_at_any_step_changes_nothing(
    config: Config, steps: list[Step], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(steps)), label="snapshot after step")
    final = data.draw(st.booleans(), label="final watermark")

    whole = config.harness(LATE)
    drive(whole, steps, [0], [LONG_MIN])

    first = config.harness(LATE)
    clock, watermark = [0], [LONG_MIN]
    drive(first, steps[:cut], clock, watermark)
    snapshot = first.snapshot()
    second = config.harness(LATE, processing_time=clock[0])
    second.restore(snapshot)
    drive(second, steps[cut:], clock, watermark)
    if final:
        whole.process_watermark(LONG_MAX)
        second.process_watermark(LONG_MAX)

    main_a, side_a = outputs(first)
    main_b, side_b = outputs(second)
    main, side = outputs(whole)
    assert main_a + main_b == main
    assert side_a + side_b == side
    assert second.num_late_records_dropped == whole.num_late_records_dropped
    # and the operators end in the same state: contents, timers (the heap arrays), watermark
    restored, uninterrupted = pickle.loads(second.snapshot()), pickle.loads(whole.snapshot())
    assert restored["keyed_state"]["tables"] == uninterrupted["keyed_state"]["tables"]
    for name in ("timers", "watermark", "extra"):
        assert restored[name] == uninterrupted[name]


def test_watermark_arithmetic_of_the_stream_helpers() -> None:
    # the first watermark of a generated stream is delta - 1500, later ones add their delta
    steps: list[Step] = [Advance(100), Advance(5), Element("a", 0, 2)]
    h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=lambda a, b: a, key_selector=lambda e: e.key)
    drive(h, steps, [0], [LONG_MIN])
    assert [e for e in h.get_output() if isinstance(e, Watermark)] == [Watermark(-1400), Watermark(-1395)]
