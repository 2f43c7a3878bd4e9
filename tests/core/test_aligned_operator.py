"""``AlignedWindowOperator`` gives exactly the window operator's results (only cross-key order may differ)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from panes.elements import StreamRecord, Watermark
from panes.functions import AggregateFunction
from panes.tags import OutputTag
from panes.testing import OneInputOperatorHarness
from panes.testing.harness import window_function_spec
from panes.windowing import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowStagger,
)
from panes.windowing.aligned import AlignedWindowOperator, supports
from panes.windowing.functions import ProcessWindowFunction, WindowContext
from panes.windowing.internal_functions import process_spec
from panes.windowing.operator import WindowOperator

LATE: OutputTag[Any] = OutputTag("late")


class SumCount(AggregateFunction[tuple[str, int, int], tuple[int, int], tuple[int, int]]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: tuple[str, int, int], acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def describe(key: Any, ctx: Any, elements: Any) -> list[Any]:
    return [(key, ctx.window().start, ctx.current_watermark(), list(elements))]


FUNCTIONS = {
    "process": lambda: window_function_spec(describe),
    "reduce": lambda: window_function_spec(describe, reduce=lambda a, b: (a[0], a[1], a[2] + b[2])),
    "aggregate": lambda: window_function_spec(describe, aggregate=SumCount()),
    # a reduce that returns None empties its pane: the pane fires nothing, and the next element starts it anew
    # (Flink's ReducingState keeps no null; WindowOperator emits no null contents)
    "reduce_none": lambda: window_function_spec(
        describe, reduce=lambda a, b: None if (a[2] + b[2]) % 3 == 0 else (a[0], a[1], a[2] + b[2])
    ),
}

# times near window boundaries (multiples of 100, minus 1, plus 0) as often as anywhere else
times = st.one_of(
    st.integers(-1000, 3000), st.integers(-10, 30).flatmap(lambda x: st.sampled_from([x * 100 - 1, x * 100]))
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("e"), st.sampled_from("abc"), times, st.integers(0, 9)),
        st.tuples(st.just("w"), times),
    ),
    max_size=60,
)


CONFIGURATIONS = {
    "sliding": st.booleans(),
    "lateness": st.sampled_from([0, 250, 1000]),
    "kind": st.sampled_from(sorted(FUNCTIONS)),
    "tagged": st.booleans(),
}
"""The windows the properties run on: sliding or tumbling, the allowed lateness, the function, a late-data tag."""


def assigner_of(sliding: bool) -> Any:
    return SlidingEventTimeWindows.of(1000, 400, 100) if sliding else TumblingEventTimeWindows.of(1000, -300)


def run(operator: WindowOperator, script: list[Any]) -> tuple[dict[Any, list[Any]], list[Any], list[int]]:
    harness = OneInputOperatorHarness(operator)
    for step in script:
        if step[0] == "e":
            harness.process_element(StreamRecord((step[1], step[2], step[3]), step[2]))
        else:
            harness.process_watermark(step[1])
    harness.process_watermark(2**63 - 1)
    per_window: dict[Any, list[Any]] = defaultdict(list)
    watermarks = []
    for element in harness.get_output():
        if isinstance(element, Watermark):
            watermarks.append(element.timestamp)
        else:
            key, start, _, _ = element.value
            per_window[(key, start)].append((element.value, element.timestamp))
    late = sorted((r.value, r.timestamp) for r in harness.get_side_output(LATE))
    return dict(per_window), late, watermarks


@settings(max_examples=300, deadline=None)
@example(  # an element for a window whose end the watermark reached exactly fires at once
    script=[("e", "a", 500, 1), ("w", 699), ("e", "a", 600, 2)],
    sliding=False,
    lateness=250,
    kind="process",
    tagged=False,
)
@example(  # a window whose cleanup time the watermark reached exactly is late
    script=[("e", "a", 500, 1), ("w", 699), ("e", "a", 600, 2)],
    sliding=False,
    lateness=0,
    kind="reduce",
    tagged=True,
)
@example(  # the same at a sliding window's end with lateness
    script=[("e", "b", 150, 1), ("w", 1349), ("e", "b", 1000, 2), ("w", 1599), ("e", "b", 1300, 3)],
    sliding=True,
    lateness=250,
    kind="aggregate",
    tagged=True,
)
@example(  # a watermark that goes back (the harness allows it) re-arms the window's timer, as in Flink
    script=[("e", "a", 0, 0), ("w", 699), ("w", 0), ("e", "a", 0, 0)],
    sliding=False,
    lateness=250,
    kind="aggregate",
    tagged=False,
)
@given(script=steps, **CONFIGURATIONS)
def test_same_panes_late_elements_and_watermarks_as_the_window_operator(
    script: list[Any], sliding: bool, lateness: int, kind: str, tagged: bool
) -> None:
    assigner = assigner_of(sliding)
    tag = LATE if tagged else None

    def key(element: tuple[str, int, int]) -> str:
        return element[0]

    exact = WindowOperator(assigner, FUNCTIONS[kind](), key, None, lateness, tag)
    lean = AlignedWindowOperator(assigner, FUNCTIONS[kind](), key, None, lateness, tag)
    assert run(lean, script) == run(exact, script)
    assert lean.num_late_records_dropped == exact.num_late_records_dropped


def test_snapshot_and_restore_continue_exactly() -> None:
    script = [("e", "a", 100, 1), ("e", "b", 900, 2), ("w", 500), ("e", "a", 1200, 3), ("w", 1500), ("e", "a", 50, 4)]
    spec = FUNCTIONS["aggregate"]
    assigner = TumblingEventTimeWindows.of(1000)
    reference = run(AlignedWindowOperator(assigner, spec(), lambda e: e[0], None, 600, LATE), script)
    first = OneInputOperatorHarness(AlignedWindowOperator(assigner, spec(), lambda e: e[0], None, 600, LATE))
    for step in script[:3]:
        if step[0] == "e":
            first.process_element(StreamRecord((step[1], step[2], step[3]), step[2]))
        else:
            first.process_watermark(step[1])
    snapshot = first.snapshot()
    second = AlignedWindowOperator(assigner, spec(), lambda e: e[0], None, 600, LATE)
    harness = OneInputOperatorHarness(second)
    harness.restore(snapshot)
    panes, late, _ = run(second, script[3:])
    before = [e.value for e in first.get_output() if not isinstance(e, Watermark)]
    combined: dict[Any, list[Any]] = defaultdict(list)
    for value in before:
        combined[(value[0], value[1])].append((value, (value[1] + 999)))
    for slot, items in panes.items():
        combined[slot].extend(items)
    assert dict(combined) == reference[0]
    assert late == reference[1]


def _feed(harness: OneInputOperatorHarness[Any], script: list[Any]) -> None:
    for step in script:
        if step[0] == "e":
            harness.process_element(StreamRecord((step[1], step[2], step[3]), step[2]))
        else:
            harness.process_watermark(step[1])


def _outputs(harness: OneInputOperatorHarness[Any]) -> tuple[list[Any], list[Any]]:
    """The results (each with its timestamp) and late elements, sorted (only cross-key order may differ)."""
    results = sorted((r.value, r.timestamp) for r in harness.get_output() if not isinstance(r, Watermark))
    return results, sorted((r.value, r.timestamp) for r in harness.get_side_output(LATE))


@settings(max_examples=200, deadline=None)
@given(
    script=steps,
    cuts=st.lists(st.integers(0, 60), max_size=4),
    sliding=st.booleans(),
    lateness=st.sampled_from([0, 250, 1000]),
    kind=st.sampled_from(sorted(FUNCTIONS)),
)
def test_a_restore_from_a_snapshot_and_its_changes_continues_exactly(
    script: list[Any], cuts: list[int], sliding: bool, lateness: int, kind: str
) -> None:
    """Timers are not stored but follow from the panes and the watermark: a run restored from its snapshot and
    the changes logged after it, at any points, gives what the uninterrupted run gives (watermarks only move
    forward, as on the runners that restore)."""
    forward, mark = [], -(2**63)
    for step in script:
        if step[0] == "w":
            mark = max(mark, step[1])
        forward.append(("w", mark) if step[0] == "w" else step)
    forward.append(("w", 2**63 - 1))
    assigner = assigner_of(sliding)

    def operator() -> AlignedWindowOperator:
        made = AlignedWindowOperator(assigner, FUNCTIONS[kind](), lambda e: e[0], None, lateness, LATE)
        made.track_changes()
        return made

    reference = OneInputOperatorHarness(operator())
    _feed(reference, forward)
    harness = OneInputOperatorHarness(operator())
    snapshot, changes = harness.snapshot(), []
    results: list[Any] = []
    late: list[Any] = []
    done = 0
    for cut in [*sorted({min(cut, len(forward)) for cut in cuts}), len(forward)]:
        _feed(harness, forward[done:cut])
        done = cut
        changes.append(harness.operator.snapshot_changes())
        found, found_late = _outputs(harness)
        results += found
        late += found_late
        restored = operator()
        restored.restore_state(snapshot, changes)
        harness = OneInputOperatorHarness(restored)
    assert (sorted(results), sorted(late)) == _outputs(reference)
    assert harness.operator.open_panes() == reference.operator.open_panes()  # what is cleaned up, too


ERRORS: OutputTag[Any] = OutputTag("errors")


class Numbered:
    """An operator's output that records each record with the number of the element being processed (``None``:
    a watermark's work)."""

    def __init__(self) -> None:
        self.current: int | None = None
        self.records: list[Any] = []

    def at(self, seq: int | None) -> None:
        self.current = seq

    def collect(self, record: StreamRecord[Any]) -> None:
        self.records.append((self.current, None, record))

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None:
        self.records.append((self.current, tag.tag_id, record))

    def emit_watermark(self, watermark: Watermark) -> None:
        self.records.append((None, "watermark", watermark))

    def emit_watermark_status(self, status: Any) -> None:
        return None


@settings(max_examples=200, deadline=None)
@example(  # an element for a window whose end the watermark reached exactly fires at once
    script=[("e", "a", 500, 1), ("w", 699), ("e", "a", 600, 2)], sliding=False, lateness=250, kind="reduce", tagged=True
)
@given(
    script=st.lists(
        st.one_of(
            st.tuples(st.just("e"), st.sampled_from("abx"), st.one_of(times, st.none()), st.integers(0, 9)),
            st.tuples(st.just("w"), times),
        ),
        max_size=60,
    ),
    **CONFIGURATIONS,
)
def test_elements_taken_together_give_what_one_by_one_gives(
    script: list[Any], sliding: bool, lateness: int, kind: str, tagged: bool
) -> None:
    """``process_elements`` (the Spark host's way: the elements between two watermarks at once) emits exactly
    what ``process_record`` of each does, in the same order, numbered by the same elements; bad records (a key
    selector that raises, no timestamp) go to the error output alike."""
    assigner = assigner_of(sliding)

    def key(element: tuple[str, int, int]) -> str:
        if element[0] == "x":
            raise ValueError("no key for x")
        return element[0]

    def run(together: bool) -> tuple[list[Any], AlignedWindowOperator]:
        operator = AlignedWindowOperator(assigner, FUNCTIONS[kind](), key, None, lateness, LATE if tagged else None)
        operator.error_tag = ERRORS
        output = Numbered()
        operator.setup(output)
        operator.open()
        pending: list[tuple[int, Any]] = []

        def flush() -> None:
            values = [(step[1], step[2], step[3]) for _, step in pending]
            timestamps = [step[2] for _, step in pending]
            seqs = [seq for seq, _ in pending]
            if together:
                operator.process_elements(values, timestamps, seqs, output.at)
            else:
                for seq, value, timestamp in zip(seqs, values, timestamps, strict=True):
                    output.at(seq)
                    operator.process_record(StreamRecord(value, timestamp))
            pending.clear()
            output.at(None)

        for seq, step in enumerate([*script, ("w", 2**63 - 1)]):
            if step[0] == "e":
                pending.append((seq, step))
            else:
                flush()
                operator.process_watermark(Watermark(step[1]))
        return output.records, operator

    one_by_one, one = run(together=False)
    taken_together, together = run(together=True)
    assert taken_together == one_by_one
    assert together.num_late_records_dropped == one.num_late_records_dropped
    assert together.counters.values() == one.counters.values()


class Clearing(ProcessWindowFunction[Any, Any, Any, Any]):
    """Records each window it is asked to clear, with the key."""

    def __init__(self) -> None:
        self.cleared: list[Any] = []

    def process(self, key: Any, context: WindowContext[Any], elements: Any) -> Any:
        yield key, context.window().start, 0, 0

    def clear(self, context: WindowContext[Any]) -> None:
        self.cleared.append(context.window())


@pytest.mark.parametrize("lateness", [0, 250])
def test_a_function_that_clears_is_called_for_each_pane_cleaned_up(lateness: int) -> None:
    """Both operators call ``clear`` once per pane as its window is cleaned up (the lean one leaves the call out
    only for functions that keep the no-op ``clear``)."""
    script = [("e", "a", 100, 1), ("e", "b", 900, 2), ("e", "a", 1200, 3), ("w", 1500), ("e", "a", 650, 4)]
    cleared = []
    for make in (WindowOperator, AlignedWindowOperator):
        function = Clearing()
        operator = make(TumblingEventTimeWindows.of(1000, -300), process_spec(function), lambda e: e[0], None, lateness)
        run(operator, script)
        cleared.append(sorted((window.start, window.end) for window in function.cleared))
    assert cleared[1] == cleared[0] == [(-300, 700), (700, 1700), (700, 1700)]


def test_supports_only_what_it_implements() -> None:
    assert supports(TumblingEventTimeWindows.of(10), None, None)
    assert supports(SlidingEventTimeWindows.of(10, 5), None, None)
    assert not supports(TumblingEventTimeWindows.of(10, 0, WindowStagger.NATURAL), None, None)
    assert not supports(EventTimeSessionWindows.with_gap(10), None, None)
    assert not supports(TumblingEventTimeWindows.of(10), ContinuousEventTimeTrigger.of(5), None)
    assert not supports(TumblingEventTimeWindows.of(10), None, CountEvictor.of(2))
    with pytest.raises(ValueError, match="cannot run"):
        AlignedWindowOperator(EventTimeSessionWindows.with_gap(10), FUNCTIONS["process"](), lambda e: e, None)
