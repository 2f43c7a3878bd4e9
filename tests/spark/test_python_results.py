"""The rows of Python results on the columnar host (``panes.spark.shard.python_results``): results all on the main
output become its column at once, with exactly the rows, ordering numbers, counts and errors that going row by row
gives (without Spark)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.errors import BadRecordError
from panes.operators.metrics import OperatorCounters
from panes.spark.shard.python_results import RecordsOut
from panes.windowing.columnar.process_panes import PaneRecords
from tests.spark.test_columnar_process_host import Totals, step

results = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", None]),
        st.integers(-5, 50),
        st.one_of(st.just(-1), st.integers(0, 1_000)),
    ),
    max_size=12,
)


def records(rows: list[tuple[Any, int, int]]) -> PaneRecords:
    found = PaneRecords()
    for key, n, seq in rows:
        found.add({"k": key, "end": n * 10, "n": n, "total": n * n}, None, n * 10 - 1, seq)
    return found


def both(made: PaneRecords, counter: int) -> tuple[Any, Any]:
    definition, layout, _ = step(Totals())
    out = RecordsOut(definition.step, layout)
    fast_counters, slow_counters = OperatorCounters(), OperatorCounters()
    fast = out.batch(made, 3, counter, 1, fast_counters)
    slow = out.by_record(made, 3, counter, 1, slow_counters)
    return (fast, fast_counters.records_out), (slow, slow_counters.records_out)


@settings(max_examples=60, deadline=None)
@given(rows=results, counter=st.integers(0, 5))
def test_main_output_results_become_the_rows_going_row_by_row_gives(rows: list[Any], counter: int) -> None:
    (fast, fast_count), (slow, slow_count) = both(records(rows), counter)
    assert fast_count == slow_count == len(rows)
    if slow is None:
        assert fast is None
        return
    assert fast is not None and fast[1] == slow[1]
    assert fast[0].equals(slow[0]), (fast[0].to_pylist(), slow[0].to_pylist())


def test_a_result_that_does_not_fit_fails_as_row_by_row() -> None:
    made = records([("a", 1, 0)])
    made.add({"k": "b", "end": "not a number", "n": 1, "total": 1}, None, 9, 1)
    errors = []
    for name in ("batch", "by_record"):
        definition, layout, _ = step(Totals())
        with pytest.raises(BadRecordError) as raised:
            getattr(RecordsOut(definition.step, layout), name)(made, 0, 0, 1, OperatorCounters())
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "does not fit its type" in errors[0]
