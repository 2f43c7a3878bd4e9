"""Built-in aggregate functions: ``Count``, ``Sum``, ``Min``, ``Max``, ``Avg``, and ``Aggregates`` to combine them.

Each is an ordinary ``AggregateFunction`` (every runner can evaluate it element by element) that also
declares its *vectorised form*, so a runner may evaluate whole batches with numpy/pyarrow instead, with the
same results (proven by shared tests). A field aggregation reads ``field`` of each element (a dict key, a
``Row``/named tuple/dataclass attribute, or a tuple position; see ``get_field``).

Semantics (SQL's, as Spark's ``sum``/``min``/``max``/``avg``): ``None`` values are skipped, and an
aggregation that saw no value gives ``None`` (``Count`` counts elements, ``None`` or not). Sums add in
element order, so float results equal a left-to-right Python sum; integer sums are 64-bit in typed columns.
``Min``/``Max`` of floats propagate NaN.

A user ``AggregateFunction`` may declare a vectorised form too: ``vectorized()`` returns an ``Aggregates`` of
built-ins whose results equal its own (its ``get_result`` must then give the same dict).
"""

from __future__ import annotations

import math
from typing import Any

from panes.functions.aggregators import get_field
from panes.functions.base import AggregateFunction


class BuiltinAggregate(AggregateFunction[Any, Any, Any]):
    """A built-in aggregation: ``kind`` names its vectorised form, ``field`` what it reads (``None``: the
    element itself, for ``Count``)."""

    kind = "builtin"

    def __init__(self, field: int | str | None = None) -> None:
        if isinstance(field, bool) or not (field is None or isinstance(field, (int, str))):
            raise TypeError(f"{type(self).__name__} takes a field name or position, not {field!r}")
        self.field = field

    def value_of(self, element: Any) -> Any:
        return element if self.field is None else get_field(element, self.field)

    def vectorized(self) -> Aggregates:
        """This aggregation alone; its result is the part's result itself (``scalar``)."""
        return Aggregates(value=self).as_scalar()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BuiltinAggregate) and type(other) is type(self) and other.field == self.field

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.field))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'' if self.field is None else repr(self.field)})"


class Count(BuiltinAggregate):
    """The number of elements."""

    kind = "count"

    def __init__(self) -> None:
        super().__init__(None)

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class Sum(BuiltinAggregate):
    """The sum of ``field`` over the elements (``None`` when no element has a value)."""

    kind = "sum"

    def __init__(self, field: int | str) -> None:
        super().__init__(field)

    def create_accumulator(self) -> Any:
        return None

    def add(self, value: Any, accumulator: Any) -> Any:
        item = self.value_of(value)
        if item is None:
            return accumulator
        return item if accumulator is None else accumulator + item

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        if acc_a is None:
            return acc_b
        return acc_a if acc_b is None else acc_a + acc_b


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class Min(BuiltinAggregate):
    """The smallest ``field`` value (``None`` when no element has one; NaN wins, as numpy's ``minimum``)."""

    kind = "min"

    def __init__(self, field: int | str) -> None:
        super().__init__(field)

    def create_accumulator(self) -> Any:
        return None

    @staticmethod
    def _beats(candidate: Any, current: Any) -> bool:
        """Whether ``candidate`` replaces ``current`` (both values, neither NaN)."""
        return bool(candidate < current)

    def _pick(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None or _nan(a):
            return a
        if _nan(b):
            return b
        return b if self._beats(b, a) else a

    def add(self, value: Any, accumulator: Any) -> Any:
        return self._pick(accumulator, self.value_of(value))

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        return self._pick(acc_a, acc_b)


class Max(Min):
    """The largest ``field`` value (``None`` when no element has one; NaN wins, as numpy's ``maximum``)."""

    kind = "max"

    @staticmethod
    def _beats(candidate: Any, current: Any) -> bool:
        return bool(candidate > current)


class Avg(BuiltinAggregate):
    """The mean of ``field`` (a float; ``None`` when no element has a value). The accumulator is the sum (in
    element order) and the count of values."""

    kind = "avg"

    def __init__(self, field: int | str) -> None:
        super().__init__(field)

    def create_accumulator(self) -> tuple[Any, int]:
        return (None, 0)

    def add(self, value: Any, accumulator: tuple[Any, int]) -> tuple[Any, int]:
        item = self.value_of(value)
        if item is None:
            return accumulator
        total, count = accumulator
        return (item if total is None else total + item, count + 1)

    def get_result(self, accumulator: tuple[Any, int]) -> float | None:
        total, count = accumulator
        return None if count == 0 else float(total) / count

    def merge(self, acc_a: tuple[Any, int], acc_b: tuple[Any, int]) -> tuple[Any, int]:
        if acc_a[1] == 0:
            return acc_b
        if acc_b[1] == 0:
            return acc_a
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class Aggregates(AggregateFunction[Any, tuple[Any, ...], Any]):
    """Several built-in aggregations at once; the result is a dict of their results by name:
    ``Aggregates(n=Count(), total=Sum("value"))`` gives ``{"n": ..., "total": ...}``."""

    def __init__(self, **parts: BuiltinAggregate) -> None:
        if not parts:
            raise ValueError("Aggregates needs at least one named aggregation, e.g. Aggregates(n=Count())")
        for name, part in parts.items():
            if not isinstance(part, BuiltinAggregate):
                raise TypeError(f"Aggregates takes built-in aggregations (Count(), Sum(field), ...); {name}={part!r}")
        self.parts = dict(parts)
        self._parts = tuple(self.parts.values())
        self._names = tuple(self.parts)
        self.scalar = False
        """Whether the result is the only part's result itself rather than a dict (a single built-in)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        # an Aggregates pickled before the parts were also kept as tuples (the loops below read those)
        self.__dict__.update(state)
        self._parts = tuple(self.parts.values())
        self._names = tuple(self.parts)

    def as_scalar(self) -> Aggregates:
        """The form of a single built-in aggregation, whose result is not wrapped in a dict."""
        if len(self.parts) != 1:
            raise ValueError("only one aggregation has a scalar result")
        single = Aggregates(**self.parts)
        single.scalar = True
        return single

    def create_accumulator(self) -> tuple[Any, ...]:
        return tuple([part.create_accumulator() for part in self._parts])

    def add(self, value: Any, accumulator: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple([part.add(value, acc) for part, acc in zip(self._parts, accumulator, strict=True)])

    def get_result(self, accumulator: tuple[Any, ...]) -> Any:
        if self.scalar:
            return self._parts[0].get_result(accumulator[0])
        return {
            name: part.get_result(acc) for name, part, acc in zip(self._names, self._parts, accumulator, strict=True)
        }

    def merge(self, acc_a: tuple[Any, ...], acc_b: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(part.merge(a, b) for part, a, b in zip(self.parts.values(), acc_a, acc_b, strict=True))

    def vectorized(self) -> Aggregates:
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Aggregates) and other.parts == self.parts and other.scalar == self.scalar

    def __hash__(self) -> int:
        return hash((tuple(self.parts.items()), self.scalar))

    def __repr__(self) -> str:
        return "Aggregates(" + ", ".join(f"{name}={part!r}" for name, part in self.parts.items()) + ")"


def vectorized_form(function: Any) -> Aggregates | None:
    """The ``Aggregates`` a function declares as its vectorised form (``None`` when it declares none)."""
    declare = getattr(function, "vectorized", None)
    if declare is None:
        return None
    form = declare()
    return form if isinstance(form, Aggregates) else None
