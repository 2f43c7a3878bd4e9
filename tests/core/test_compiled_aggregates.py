"""``Aggregates`` compiled for their parts (``panes.functions.compiled_aggregates``) give what ``Aggregates`` gives:
the same accumulators element after element, the same results, the same exceptions, on random parts and values
(fields missing or ``None``, ints and floats, values that are not dicts, sums that cannot be added)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from panes.functions import Aggregates, Avg, Count, Max, Min, Sum
from panes.functions.compiled_aggregates import compiled_aggregates
from panes.types import Row
from panes.windowing import WindowRow

names: list[int | str] = ["x", "y", 0, 1]
parts = st.lists(
    st.one_of(
        st.just(Count()),
        st.builds(Sum, st.sampled_from(names)),
        st.builds(Min, st.sampled_from(names[:2])),
        st.builds(Max, st.sampled_from(names[:2])),
        st.builds(Avg, st.sampled_from(["x", 1])),
    ),
    min_size=1,
    max_size=4,
)
fields = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True, width=32), st.just("text"))
values = st.one_of(
    st.fixed_dictionaries({"x": fields}, optional={"y": fields}),
    st.tuples(fields, fields),
    st.builds(lambda x, y: Row(x=x, y=y), fields, fields),
    st.integers(0, 3),
)


def outcome(function: Any, *arguments: Any) -> tuple[str, Any]:
    """What ``function(*arguments)`` returns, or the type of what it raises; NaN made comparable."""
    try:
        found = function(*arguments)
    except Exception as error:
        return ("raised", type(error).__name__)
    return ("gave", repr(found))


def compiled_row(compiled: Any, accumulator: Any) -> list[tuple[str, Any]]:
    return list(compiled.row(("k", "s", "e"))("key", 0, 10, accumulator).items())


def window_row(aggregate: Aggregates, accumulator: Any) -> list[tuple[str, Any]]:
    return list(WindowRow(key="k", start="s", end="e").row("key", 0, 10, aggregate.get_result(accumulator)).items())


@settings(max_examples=300)
@given(parts, st.booleans(), st.lists(values, min_size=1, max_size=12))
@example([Count(), Sum("y")], False, [{"x": 1, "y": 2}, {"x": 1}, {"x": 1, "y": None}, {"x": 1, "y": 3}])
def test_compiled_aggregates_give_what_aggregates_give(chosen: list[Any], scalar: bool, elements: list[Any]) -> None:
    aggregate = Aggregates(**{f"part{index}": part for index, part in enumerate(chosen)})
    if scalar:
        aggregate = Aggregates(only=chosen[0]).as_scalar()
    compiled = compiled_aggregates(aggregate)
    if compiled.initial is not None:
        assert compiled.initial == aggregate.create_accumulator()
    expected = actual = aggregate.create_accumulator()
    for element in elements:
        wanted = outcome(aggregate.add, element, expected)
        assert outcome(compiled.add, element, actual) == wanted
        if wanted[0] == "gave":  # a failed add leaves the pane as it was
            expected = aggregate.add(element, expected)
            actual = compiled.add(element, actual)
        assert outcome(compiled.result, actual) == outcome(aggregate.get_result, expected)
        if not scalar:  # the row WindowRow makes of the result, its entries in the same order
            assert outcome(compiled_row, compiled, actual) == outcome(window_row, aggregate, expected)
