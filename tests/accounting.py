"""Every row accounted for: random streams through a windowed job, checked against the step counters.

Shared by ``tests/local/test_accounting.py`` (many examples) and ``tests/spark/test_accounting.py`` (a few).

The job: micro-batches of rows ``{"id", "k", "ts", "v"}`` -> timestamps from ``ts`` (bounded out-of-orderness
``DELAY``) -> ``key_by("k")`` -> a window (tumbling, sliding, session or count) with an allowed lateness, an
optional late-data side output and optional error side outputs (on the timestamps step and on the window)
-> an ``AggregateFunction`` collecting the ids of a pane (its ``add`` reads ``v + 0``, so a row whose ``v``
is not a number fails there) and a window function emitting ``(start, end, ids)``.

Streams are random: out of order, with duplicated rows (the same key, timestamp and value again, under a new
id), and, when the job has error outputs, malformed rows: no ``ts``, a ``ts`` of the wrong type, a null key,
a ``v`` of the wrong type.

The identity (:func:`check`), with ``fired`` the ids that are in at least one fired pane (a sliding
window's element counts once, however many of its windows fired with it; each fired pane is checked to
hold only elements of its window):

    rows in = |fired| + late_out + error_out (both steps) + late_dropped + open

where ``open`` is the number of elements in panes that never fired when the job ended: after the final
watermark only count windows keep such panes, ``n_k mod size`` elements for a key ``k`` with ``n_k``
well-formed rows. Each side is also checked element by element: the late and error outputs hold exactly
the ids the counters count, the error outputs only malformed rows (all of them but those whose only flaw is
a value the window would have failed on, had the row not been late), and nothing is in two places.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from panes.datastream import AggregateFunction, ListSink, OperatorMetrics, OutputTag, StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

DELAY = 3
SIZE = 10
SLIDE = 5
GAP = 4
COUNT = 3
KINDS = ("tumbling", "sliding", "session", "count")
MALFORMED = ("no ts", "ts type", "null key", "v type")
TIMESTAMPS = "Timestamps/Watermarks"
WINDOW = "Window(Aggregate)"


@dataclass(frozen=True)
class Case:
    """One generated job: the window kind, its allowed lateness, which side outputs it has, and its input."""

    kind: str
    lateness: int
    late_output: bool
    error_output: bool
    batches: tuple[tuple[dict[str, Any], ...], ...]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [row for batch in self.batches for row in batch]


def is_malformed(row: dict[str, Any]) -> bool:
    return type(row.get("ts")) is not int or row.get("k") is None or type(row.get("v")) is not int


@st.composite
def cases(
    draw: Any,
    max_rows: int = 25,
    max_batches: int = 4,
    kind: str | None = None,
    min_rows: int = 0,
    late_tail: bool = False,
) -> Case:
    """A random :class:`Case` (see the module docstring), of window ``kind`` when given. ``late_tail`` ends the
    input with two more batches, a row at the largest timestamp then one at 0, so that at least one row
    arrives late in every run (micro-batch runners move the watermark only between batches)."""
    kind = draw(st.sampled_from(KINDS)) if kind is None else kind
    error_output = draw(st.booleans())
    count = draw(st.integers(min_rows, max_rows))
    rows: list[dict[str, Any]] = []
    for index in range(count):
        if rows and draw(st.integers(0, 5)) == 0:
            row = dict(draw(st.sampled_from(rows)))  # a duplicate of an earlier row, under a new id
        else:
            row = {"k": draw(st.sampled_from("abc")), "ts": draw(st.integers(0, 40)), "v": draw(st.integers(0, 9))}
            if error_output and draw(st.integers(0, 6)) == 0:
                flaw = draw(st.sampled_from(MALFORMED))
                if flaw == "no ts":
                    del row["ts"]
                elif flaw == "ts type":
                    row["ts"] = "soon"
                elif flaw == "null key":
                    row["k"] = None
                else:
                    row["v"] = "x"
        row["id"] = index
        rows.append(row)
    cuts = sorted(draw(st.lists(st.integers(0, count), max_size=max_batches - 1)))
    batches = tuple(tuple(rows[a:b]) for a, b in zip([0, *cuts], [*cuts, count], strict=True))
    if late_tail:
        batches += (({"k": "a", "ts": 40, "v": 1, "id": count},), ({"k": "a", "ts": 0, "v": 2, "id": count + 1},))
    return Case(kind, draw(st.sampled_from((0, 4))), draw(st.booleans()), error_output, batches)


class Ids(AggregateFunction[dict[str, Any], tuple[int, ...], tuple[int, ...]]):
    """The ids of a pane (``v`` must be a number: ``v + 0``)."""

    def create_accumulator(self) -> tuple[int, ...]:
        return ()

    def add(self, value: dict[str, Any], accumulator: tuple[int, ...]) -> tuple[int, ...]:
        value["v"] + 0
        return (*accumulator, value["id"])

    def get_result(self, accumulator: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(accumulator))

    def merge(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        return a + b


class Bounds(ProcessWindowFunction[tuple[int, ...], Any, Any, Any]):
    """``(start, end, ids)`` of a fired pane (count windows: ``(None, None, ids)``)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        window = context.window()
        start, end = getattr(window, "start", None), getattr(window, "end", None)
        for ids in elements:
            yield (start, end, list(ids))


@dataclass
class Outcome:
    fired: list[Any]
    late: list[Any]
    errors: list[Any]
    metrics: dict[str, OperatorMetrics]


def run(env: StreamEnvironment, case: Case) -> Outcome:
    """Run ``case`` on ``env``'s runner."""
    fired, late_rows, errors = ListSink(), ListSink(), ListSink()
    build(env, case, fired, late_rows, errors)
    result = env.execute("every row accounted for")
    return Outcome(fired.values, late_rows.values, errors.values, result.metrics)


def build(env: StreamEnvironment, case: Case, fired: ListSink, late_rows: ListSink, errors: ListSink) -> None:
    """The job of ``case`` on ``env``, writing its panes, late rows and errors to the three sinks."""
    late: OutputTag[Any] = OutputTag("late")
    stamp_errors: OutputTag[Any] = OutputTag("timestamp-errors")
    window_errors: OutputTag[Any] = OutputTag("window-errors")
    stamped = env.from_micro_batches([list(batch) for batch in case.batches]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner("ts")
    )
    if case.error_output:
        stamped = stamped.side_output_errors(stamp_errors)
    keyed = stamped.key_by("k")
    if case.kind == "count":
        windowed = keyed.count_window(COUNT)
    else:
        assigner: Any = {
            "tumbling": TumblingEventTimeWindows.of(SIZE),
            "sliding": SlidingEventTimeWindows.of(SIZE, SLIDE),
            "session": EventTimeSessionWindows.with_gap(GAP),
        }[case.kind]
        windowed = keyed.window(assigner).allowed_lateness(case.lateness)
        if case.late_output:
            windowed = windowed.side_output_late_data(late)
    if case.error_output:
        windowed = windowed.side_output_errors(window_errors)
    results = windowed.aggregate(Ids(), Bounds())
    results.sink_to(fired)
    if case.late_output and case.kind != "count":
        results.get_side_output(late).sink_to(late_rows)
    if case.error_output:
        results.get_side_output(window_errors).sink_to(errors)
        stamped.get_side_output(stamp_errors).sink_to(errors)


def check(case: Case, outcome: Outcome) -> None:
    """The identity of the module docstring, and each of its terms element by element."""
    rows = case.rows
    metrics = outcome.metrics
    stamps, window = metrics[TIMESTAMPS], metrics[WINDOW]
    by_id = {row["id"]: row for row in rows}

    fired: set[int] = set()
    for start, end, ids in outcome.fired:
        assert ids, "a fired pane holds elements"
        fired.update(ids)
        if case.kind in ("tumbling", "sliding"):
            assert all(start <= by_id[i]["ts"] < end for i in ids), (start, end, ids)
            assert end - start == SIZE
        elif case.kind == "session":
            assert all(start <= by_id[i]["ts"] < end - GAP + 1 for i in ids), (start, end, ids)
        else:
            assert len(ids) == COUNT and len({by_id[i]["k"] for i in ids}) == 1
    late = [row["id"] for row in outcome.late]
    errors = [failure.value["id"] for failure in outcome.errors]

    # nothing is in two places, and the outputs hold exactly what the counters count
    assert len(set(late)) == len(late) and len(set(errors)) == len(errors)
    assert not (fired & set(late)) and not (fired & set(errors)) and not (set(late) & set(errors))
    # a row without a usable timestamp or key fails where it is read; a row whose value is of the wrong type
    # fails in the window's function, unless it is late (then the window never reads it, as in Flink)
    malformed = {row["id"] for row in rows if is_malformed(row)}
    refused = {i for i in malformed if type(by_id[i].get("ts")) is not int or by_id[i].get("k") is None}
    assert refused <= set(errors) <= malformed and not (fired & malformed)
    assert stamps.error_out + window.error_out == len(errors)
    assert window.late_out == len(late)
    assert window.records_out == len(outcome.fired)
    assert stamps.records_in == len(rows)
    assert window.records_in == len(rows) - stamps.error_out
    if case.late_output or case.kind == "count":
        assert window.late_dropped == 0
    if not case.late_output:
        assert window.late_out == 0

    # what stays open when the input ended: count windows' incomplete panes, nothing else
    well_formed = Counter(row["k"] for row in rows if not is_malformed(row))
    if case.kind == "count":
        open_elements = sum(n % COUNT for n in well_formed.values())
        open_panes = sum(1 for n in well_formed.values() if n % COUNT)
    else:
        open_elements = open_panes = 0
    assert window.open_panes == open_panes
    assert window.timers == 0  # time windows were all cleaned up; count windows set no timers

    accounted = len(fired) + window.late_out + stamps.error_out + window.error_out + window.late_dropped
    assert len(rows) == accounted + open_elements, (len(rows), len(fired), window, stamps, open_elements)
    unaccounted = set(by_id) - fired - set(late) - set(errors)
    assert len(unaccounted) == window.late_dropped + open_elements
