"""The columnar window operators give exactly the window operator's results on random streams.

A stream is a list of micro-batches, each processed at one watermark (the one reached before it, as the
Spark runner does): the window operator gets the watermark, then the batch's elements one by one; the
columnar operator advances, then takes the batch as columns. Per batch, both emit the same panes (as a
multiset: the order across keys may differ) with the same timestamps, and send the same elements late.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.datastream.windowed import WindowSpec
from panes.elements import StreamRecord, Watermark
from panes.functions import Aggregates, Avg, Count, Max, Min, Sum
from panes.functions.aggregators import FieldKey
from panes.operators.base import CollectingOutput
from panes.operators.rescaling import Owner
from panes.tags import OutputTag
from panes.time import LONG_MAX
from panes.types import RecordType
from panes.windowing import CountEvictor, EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from panes.windowing.batch_function import BatchWindowFunction
from panes.windowing.columnar.aligned import ColumnarAlignedWindows
from panes.windowing.columnar.output import emitted, pane_values
from panes.windowing.columnar.pane_table import key_list
from panes.windowing.columnar.plan import plan_columnar
from panes.windowing.columnar.sessions import ColumnarSessions
from panes.windowing.implementation import columnar_operator
from panes.windowing.internal_functions import aggregate_spec, process_spec
from panes.windowing.rows import WindowRow
from panes.windowing.triggers.event_time import EventTimeTrigger

LATE: OutputTag[Any] = OutputTag("late")
INPUT = RecordType.of("key STRING, ts BIGINT, v BIGINT, f DOUBLE")
assert INPUT is not None

ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows.of(100),
    "tumbling offset": lambda: TumblingEventTimeWindows.of(100, 30),
    "sliding": lambda: SlidingEventTimeWindows.of(100, 40),
    "session": lambda: EventTimeSessionWindows.with_gap(50),
}


def arrivals(panes: Any) -> Any:
    """A ``process_batch`` function whose results depend on the order of each pane's elements."""
    grouped = panes.groupby(["key", "window_start", "window_end"], sort=False)
    return grouped.agg(
        n=("ts", "size"),
        vs=("v", lambda v: ",".join("-" if x != x else str(int(x)) for x in v)),
        last_f=("f", "last"),
    ).reset_index()


FUNCTIONS = {
    "row": (Aggregates(n=Count(), total=Sum("v"), low=Min("v"), high=Max("f"), mean=Avg("v")), WindowRow()),
    "scalar": (Sum("v"), None),
    "dict": (Aggregates(n=Count(), fsum=Sum("f")), None),
    "batch": (arrivals, None),
    "pane info": (Aggregates(n=Count(), total=Sum("v")), WindowRow(pane="pane")),
}
BATCH_OUTPUT = "key STRING, window_end BIGINT, n BIGINT, vs STRING, last_f DOUBLE"

times = st.integers(-300, 1500)
elements = st.tuples(st.sampled_from(["a", "b", "c", "d"]), times, st.one_of(st.none(), st.integers(-5, 9)))
batches = st.lists(st.lists(elements, max_size=8), min_size=1, max_size=8)


def spec(assigner: str, function: str, lateness: int, late: bool) -> WindowSpec:
    aggregate, row = FUNCTIONS[function]
    evaluated = (
        process_spec(BatchWindowFunction(aggregate, INPUT, BATCH_OUTPUT, "pandas"))
        if function == "batch"
        else aggregate_spec(aggregate, row)
    )
    return WindowSpec(
        ASSIGNERS[assigner](),
        EventTimeTrigger(),
        None,
        lateness,
        LATE if late else None,
        evaluated,
        FieldKey("key"),
        True,
    )


def value(element: tuple[str, int, int | None]) -> dict[str, Any]:
    key, ts, v = element
    return {"key": key, "ts": ts, "v": v, "f": None if v is None else v / 4}


def watermarks_of(data: list[list[Any]]) -> list[int]:
    """The watermark each batch is processed at: the maximum timestamp so far minus 50, minus 1."""
    marks, top = [], -(2**63)
    for batch in data:
        marks.append(top)
        for _, ts, _ in batch:
            top = max(top, ts - 51)
    return marks


def window_operator_batches(
    window: WindowSpec, data: list[list[Any]], value: Callable[[Any], Any] = value
) -> Iterator[CollectingOutput]:
    """The window operator fed ``data`` batch by batch, each at its watermark (:func:`watermarks_of`), then the end
    of time: what it emitted after each batch (cleared once the caller has it); ``value``: an element's value."""
    operator = window.create_operator()
    collected = CollectingOutput()
    operator.setup(collected)
    operator.open()
    for mark, batch in zip([*watermarks_of(data), LONG_MAX], [*data, []], strict=True):
        if mark > operator.current_watermark():
            operator.process_watermark(Watermark(mark))
        for element in batch:
            operator.process_record(StreamRecord(value(element), element[1]))
        yield collected
        collected.elements.clear()
        collected.side.clear()


def generic(window: WindowSpec, data: list[list[Any]], output: RecordType) -> list[tuple[Counter[Any], Counter[Any]]]:
    """The window operator's results per batch, conformed to ``output`` (as columnar results come back)."""
    per_batch = []
    for collected in window_operator_batches(window, data):
        records = [r for r in collected.elements if isinstance(r, StreamRecord)]
        main = Counter(repr((output.conform(r.value), r.timestamp)) for r in records)
        late = Counter(repr(r.value) for r in collected.side.get(LATE, []))
        per_batch.append((main, late))
    return per_batch


def columnar(
    window: WindowSpec, data: list[list[Any]], compact: list[bool] | None = None
) -> list[tuple[Counter[Any], Counter[Any]]]:
    """The columnar operator's results per batch. With ``compact``, the operator is rebuilt before every other
    batch from its stored log: a snapshot, then one change per batch (``compact[b]``: batch ``b`` stores a new
    snapshot instead)."""
    plan = plan_columnar(window, INPUT)
    assert plan is not None

    def create() -> Any:
        return columnar_operator(plan)

    operator = create()
    log = [operator.snapshot_state()]
    per_batch = []
    seq = 0
    for index, (mark, batch) in enumerate(zip([*watermarks_of(data), LONG_MAX], [*data, []], strict=True)):
        if compact is not None and index % 2 == 1:
            operator = create()
            operator.restore_state(log[0], log[1:])
        outputs = [operator.advance(mark)]
        values = INPUT.encode([INPUT.conform(value(e)) for e in batch])
        ts = np.array([e[1] for e in batch], dtype=np.int64)
        seqs = np.arange(seq, seq + len(batch), dtype=np.int64)
        seq += len(batch)
        outputs.append(operator.process(values, ts, seqs))
        main: Counter[Any] = Counter()
        late: Counter[Any] = Counter()
        for out in outputs:
            for all_panes in out.panes:
                panes = emitted(plan, all_panes)
                values_out = plan.output_type.decode(pane_values(plan, panes))
                main.update(repr((v, end - 1)) for v, end in zip(values_out, panes.ends.tolist(), strict=True))
            for indices in out.late if plan.late_tag is not None else []:
                late.update(repr(v) for v in INPUT.decode(values.take(pa.array(indices))))
        per_batch.append((main, late))
        if compact is not None:
            if compact[index % len(compact)]:
                log = [operator.snapshot_state()]
            else:
                log.append(operator.snapshot_changes())
    return per_batch


@pytest.mark.parametrize(
    ("assigner", "function"),
    [(a, f) for a in ASSIGNERS for f in FUNCTIONS if a != "session" or f not in ("batch", "pane info")],
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=batches, lateness=st.sampled_from([0, 0, 30, 200]), late=st.booleans())
def test_columnar_equals_the_window_operator(
    assigner: str, function: str, data: list[list[Any]], lateness: int, late: bool
) -> None:
    window = spec(assigner, function, lateness, late)
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    assert columnar(window, data) == generic(window, data, plan.output_type)


@pytest.mark.parametrize("lateness", [0, 30])
@pytest.mark.parametrize("seed", [1, 2])
def test_columnar_sessions_equal_the_window_operator_on_many_keys_and_batches(lateness: int, seed: int) -> None:
    """Many keys and batches: groups merge with open sessions and with each other, keys go element by element
    and back to groups, sessions fire and are cleaned up at once (no allowed lateness) or later (with it);
    restored from its log between batches too."""
    rng = np.random.default_rng(seed)
    keys = [f"k{k}" for k in range(300)]
    data, clock = [], 0
    for size in rng.integers(0, 400, 40).tolist():  # batches of very different sizes, time moving on
        clock += int(rng.integers(0, 120))
        data.append(
            [
                (keys[k], clock + int(d), int(v) if v < 9 else None)
                for k, d, v in zip(
                    rng.integers(0, len(keys), size).tolist(),
                    rng.integers(-80, 40, size).tolist(),
                    rng.integers(-5, 10, size).tolist(),
                    strict=True,
                )
            ]
        )
    window = spec("session", "row", lateness, True)
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    expected = generic(window, data, plan.output_type)
    assert sum(sum(main.values()) for main, _ in expected) > 1000  # many sessions fired
    assert columnar(window, data) == expected
    assert columnar(window, data, compact=[False, False, True]) == expected


@pytest.mark.parametrize(
    ("assigner", "function"),
    [*((a, "row") for a in ASSIGNERS), *((a, f) for a in ("tumbling", "sliding") for f in ("pane info", "batch"))],
)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=batches,
    lateness=st.sampled_from([0, 30, 200]),
    compact=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_a_columnar_operator_restored_from_its_log_between_batches_gives_the_same_results(
    assigner: str, function: str, data: list[list[Any]], lateness: int, compact: list[bool]
) -> None:
    window = spec(assigner, function, lateness, True)
    assert columnar(window, data, compact) == columnar(window, data)


def test_what_runs_columnar() -> None:
    assert plan_columnar(spec("tumbling", "row", 0, False), INPUT) is not None
    assert plan_columnar(spec("tumbling", "row", 0, False), None) is None
    untyped_key = spec("tumbling", "row", 0, False)
    object.__setattr__(untyped_key, "key_selector", lambda v: v["key"])
    assert plan_columnar(untyped_key, INPUT) is None
    plan = plan_columnar(spec("session", "row", 0, False), INPUT)
    assert plan is not None and plan.output_type.ddl() == (
        "key STRING, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT, low BIGINT, high DOUBLE, "
        "mean DOUBLE"
    )


def test_open_panes_are_columns_of_about_forty_bytes_plus_their_key() -> None:
    window = spec("tumbling", "dict", 0, False)  # Count and a float Sum
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    operator = ColumnarAlignedWindows(plan)
    keys = [f"k{i}" for i in range(10_000)]
    values = INPUT.encode([{"key": k, "ts": 5, "v": 1, "f": 0.5} for k in keys])
    same = np.full(len(keys), 5, dtype=np.int64)
    operator.process(values, same, np.arange(len(keys), dtype=np.int64))
    operator.process(values, same, np.arange(len(keys), dtype=np.int64))  # every pane a second time
    (table,) = operator.windows.values()
    assert operator.open_panes() == len(keys) == len(table)
    arrays = [table.keys, table.dirty, *(column for fields in table.columns for column in fields)]
    assert all(isinstance(array, np.ndarray) and array.dtype != object for array in arrays)
    per_pane = sum(array.nbytes for array in arrays) / len(keys)
    assert per_pane <= 16 + 8 + 16 + 1  # the key (a short string inline), the count, the sum and its count, dirty
    # and it is what the window operator computes
    fired = operator.advance(LONG_MAX)
    results = plan.output_type.decode(pane_values(plan, emitted(plan, fired.panes[0])))
    assert sorted(results, key=repr)[:1] == [{"n": 2, "fsum": 1.0}]


def test_columnar_sessions_forget_keys_that_left_and_stay_exact() -> None:
    """Keys come and go in thousands: once most numbered keys hold no session, the operator numbers its keys
    anew after a snapshot (so what it remembers follows its open sessions, not every key it saw), with the
    same results, restored from its log too."""
    keys = [f"k{k}" for k in range(5000)]
    data = [[(keys[(b * 1700 + i) % 5000], b * 200 + i % 40, i % 9) for i in range(1700)] for b in range(8)]
    window = spec("session", "row", 0, True)
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    expected = generic(window, data, plan.output_type)
    assert columnar(window, data) == expected
    assert columnar(window, data, compact=[False, False, True]) == expected
    operator = ColumnarSessions(plan)
    for batch in data[:3]:
        values = INPUT.encode([INPUT.conform(value(e)) for e in batch])
        operator.process(values, np.array([e[1] for e in batch], np.int64), np.zeros(len(batch), np.int64))
        operator.advance(max(e[1] for e in batch) + 100)  # every session ends and is cleaned up
        operator.snapshot_changes()
    assert operator.open_panes() == 0
    assert len(operator._keys) < 1700  # 3 x 1,700 keys seen


def rescaled(window: WindowSpec, count: int) -> tuple[Any, list[Any], Owner, Callable[[Any], Counter[str]]]:
    """A columnar operator of ``window`` holding 60 elements of 8 keys, the operators restored from its snapshot
    rescaled to ``count`` owners, the owner, and what an operator fires at the end of time (a multiset)."""
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    data = [("abcdefgh"[i % 8], 37 * i % 400, i % 7) for i in range(60)]
    whole = columnar_operator(plan)
    stamps = np.array([e[1] for e in data], dtype=np.int64)
    whole.process(INPUT.encode([INPUT.conform(value(e)) for e in data]), stamps, np.arange(60, dtype=np.int64))
    owner = Owner(128, count)
    parts = []
    for blob in whole.rescale_snapshots([whole.snapshot_state()], owner, count):
        part = columnar_operator(plan)
        part.restore_state(blob)
        parts.append(part)

    def fired(operator: Any) -> Counter[str]:
        panes = [emitted(plan, p) for p in operator.advance(LONG_MAX).panes]
        return Counter(repr(v) for p in panes for v in plan.output_type.decode(pane_values(plan, p)))

    return whole, parts, owner, fired


@pytest.mark.parametrize("function", ["row", "batch", "pane info"])
def test_rescaled_snapshots_hold_every_pane_once_at_its_owner(function: str) -> None:
    whole, parts, owner, fired = rescaled(spec("sliding", function, 30, False), 3)
    for index, part in enumerate(parts):
        for table in part.windows.values():
            keys = table.state()[0]
            assert (owner.of_keys(pa.array(key_list(keys))) == index).all()
    assert sum((fired(part) for part in parts), Counter()) == fired(whole)


def test_rescaled_session_snapshots_hold_every_session_once_at_its_owner() -> None:
    """Sessions split by key owner and restored fire what the whole fires; a part holds only its own keys, and a
    part that owns no key restores empty."""
    whole, parts, owner, fired = rescaled(spec("session", "row", 30, False), 20)
    for index, part in enumerate(parts):
        stored = pickle.loads(part.snapshot_state())[0][0]
        assert (owner.of_keys(stored) == index).all()
    assert any(part.open_panes() == 0 for part in parts)  # 8 keys over 20 owners
    assert sum(part.open_panes() for part in parts) == whole.open_panes() > 8
    assert sum((fired(part) for part in parts), Counter()) == fired(whole)


@pytest.mark.parametrize(
    ("window", "exact_order", "columns", "kind"),
    [
        (lambda: spec("tumbling", "row", 0, False), True, False, "general"),
        (lambda: spec("tumbling", "row", 0, False), False, False, "aligned"),
        (lambda: spec("tumbling", "row", 0, False), False, True, "columnar aligned"),
        (lambda: spec("session", "row", 0, False), False, True, "columnar sessions"),
        (lambda: spec("session", "batch", 0, False), False, True, "general"),
        (lambda: spec("sliding", "batch", 0, False), False, True, "columnar aligned"),
        (lambda: replace(spec("tumbling", "row", 0, False), accumulation="retracting"), False, True, "general"),
        (lambda: replace(spec("tumbling", "row", 0, False), evictor=CountEvictor.of(2)), False, True, "evicting"),
    ],
)
def test_one_function_chooses_the_implementation_and_the_state_layout_follows(
    window: Any, exact_order: bool, columns: bool, kind: str
) -> None:
    chosen = window().implementation(exact_order=exact_order, columns=columns, input_type=INPUT)
    assert chosen.kind == kind
    assert chosen.state_layout == {"columnar aligned": "columnar", "columnar sessions": "columnar"}.get(
        kind, "aligned" if kind == "aligned" else "general"
    )
    assert (chosen.not_columnar is None) == (not columns or chosen.is_columnar)
    operator_kind = type(window().create_aligned_operator()).__name__ if not chosen.is_columnar else None
    if operator_kind is not None and not exact_order:
        expected = {"aligned": "AlignedWindowOperator", "evicting": "EvictingWindowOperator"}.get(
            kind, "WindowOperator"
        )
        assert operator_kind == expected


def test_a_panes_firings_survive_a_restore_from_changes() -> None:
    # [0, 100) fires on time at watermark 150 (pane 0), then an element within the allowed lateness fires it again
    # (pane 1): the count of firings must be in the change the on-time firing made
    window = spec("tumbling", "pane info", 200, False)
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    operator = ColumnarAlignedWindows(plan)
    log = [operator.snapshot_state()]

    def element(ts: int, seq: int) -> tuple[Any, ...]:
        return INPUT.encode([INPUT.conform(value(("a", ts, 1)))]), np.array([ts], np.int64), np.array([seq], np.int64)

    operator.process(*element(10, 0))
    log.append(operator.snapshot_changes())
    (on_time,) = operator.advance(150).panes
    log.append(operator.snapshot_changes())
    restored = ColumnarAlignedWindows(plan)
    restored.restore_state(log[0], log[1:])
    (late,) = restored.process(*element(20, 1)).panes
    rows = [plan.output_type.decode(pane_values(plan, p))[0] for p in (on_time, late)]
    assert [(r["pane_index"], r["pane_timing"], r["pane_last"], r["total"]) for r in rows] == [
        (0, "on time", False, 1),
        (1, "late", False, 2),
    ]
