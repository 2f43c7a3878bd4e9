"""``Aggregates`` of built-ins, evaluated by functions compiled for their parts: what ``Aggregates.add``,
``create_accumulator`` and ``get_result`` give, in one call per element or pane instead of one per part.

A runner that updates one accumulator per element in Python (the local runner's runs, ``panes.windowing.runs``)
pays for every call: ``Aggregates.add`` calls each part's ``add``, which reads its field through ``get_field``.
:func:`compiled_aggregates` writes one function for the parts at hand: ``Count`` adds one, ``Sum`` of a named
field reads a dict's entry inline (``get_field``'s first case) and adds as ``Sum.add`` does (``None`` skipped,
the first value taken as it is), and any other part's own ``add`` is called. The parts are evaluated in their
order, so the same exception comes first; the result is equal to ``Aggregates``' own, value by value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from panes.functions.aggregates import Aggregates, Avg, Count, Max, Min, Sum
from panes.functions.aggregators import get_field

_IMMUTABLE_ACCUMULATORS = (Count, Sum, Min, Max, Avg)
"""Parts whose accumulators are immutable values (ints, ``None``, tuples of them), replaced on every add."""


@dataclass(frozen=True)
class CompiledAggregates:
    """The functions of one ``Aggregates`` (see the module docstring)."""

    add: Callable[[Any, tuple[Any, ...]], tuple[Any, ...]]
    """``(value, accumulator) ->`` what ``Aggregates.add(value, accumulator)`` returns."""
    result: Callable[[tuple[Any, ...]], Any]
    """``accumulator ->`` what ``Aggregates.get_result(accumulator)`` returns."""
    initial: tuple[Any, ...] | None
    """An accumulator ``create_accumulator()`` gives, to share between panes (the parts' accumulators are
    immutable, so no pane changes it), or ``None`` when a part's might not be: call ``create_accumulator``."""
    parts: tuple[Any, ...]
    names: tuple[str, ...]

    @property
    def result_cannot_fail(self) -> bool:
        """Whether :attr:`result` only reads the accumulator (every part is a ``Count`` or a ``Sum``, whose results
        are their accumulators), so it raises nothing."""
        return all(type(part) in (Count, Sum) for part in self.parts)

    def row(self, first: tuple[str, str, str]) -> Callable[[Any, Any, Any, tuple[Any, ...]], dict[str, Any]]:
        """``(a, b, c, accumulator) ->`` the dict ``{first[0]: a, first[1]: b, first[2]: c}`` followed by the
        entries of :attr:`result` (a dict: not ``scalar``), whose names differ from ``first``; a fresh dict."""
        values = ", ".join(f"a{index}" for index in range(len(self.parts)))
        results = [
            f"a{index}" if type(part) in (Count, Sum) else f"p{index}.get_result(a{index})"
            for index, part in enumerate(self.parts)
        ]
        entries = [
            f"{name!r}: {value}" for name, value in zip((*first, *self.names), ("k", "s", "e", *results), strict=True)
        ]
        code = f"def row(k, s, e, accumulator):\n    {values}, = accumulator\n    return {{{', '.join(entries)}}}"
        namespace: dict[str, Any] = {f"p{index}": part for index, part in enumerate(self.parts)}
        exec(code, namespace)
        return cast(Callable[[Any, Any, Any, tuple[Any, ...]], dict[str, Any]], namespace["row"])


def compiled_aggregates(aggregate: Aggregates) -> CompiledAggregates:
    """The compiled functions of ``aggregate``."""
    parts = aggregate._parts
    namespace: dict[str, Any] = {"get_field": get_field}
    accumulators = ", ".join(f"a{index}" for index in range(len(parts)))
    add = [f"def add(value, accumulator):\n    {accumulators}, = accumulator"]
    for index, part in enumerate(parts):
        namespace[f"p{index}"] = part
        namespace[f"f{index}"] = part.field
        if type(part) is Count:
            add.append(f"    r{index} = a{index} + 1")
        elif type(part) is Sum:
            read = (
                f"value[f{index}] if type(value) is dict else get_field(value, f{index})"
                if type(part.field) is str
                else f"get_field(value, f{index})"
            )
            added = f"v{index} if a{index} is None else a{index} + v{index}"
            add.append(f"    v{index} = {read}")
            add.append(f"    r{index} = a{index} if v{index} is None else ({added})")
        else:
            add.append(f"    r{index} = p{index}.add(value, a{index})")
    add.append(f"    return ({', '.join(f'r{index}' for index in range(len(parts)))},)")
    results = [
        f"a{index}" if type(part) in (Count, Sum) else f"p{index}.get_result(a{index})"
        for index, part in enumerate(parts)
    ]
    if aggregate.scalar:
        result = f"def result(accumulator):\n    {accumulators}, = accumulator\n    return {results[0]}"
    else:
        entries = ", ".join(f"{name!r}: {value}" for name, value in zip(aggregate._names, results, strict=True))
        result = f"def result(accumulator):\n    {accumulators}, = accumulator\n    return {{{entries}}}"
    exec("\n".join(add) + "\n\n" + result, namespace)
    immutable = all(type(part) in _IMMUTABLE_ACCUMULATORS for part in parts)
    return CompiledAggregates(
        cast(Callable[[Any, tuple[Any, ...]], tuple[Any, ...]], namespace["add"]),
        cast(Callable[[tuple[Any, ...]], Any], namespace["result"]),
        aggregate.create_accumulator() if immutable else None,
        parts,
        aggregate._names,
    )
