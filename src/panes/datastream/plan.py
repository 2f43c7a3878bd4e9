"""The plan: an immutable graph of transformations that the API builds and a runner translates.

Physical transformations (source, one-input, two-input, sink) become operators; virtual ones (partition,
union, side output) only shape the connections between them, as in Flink. Each transformation names its
``kind`` (``"map"``, ``"window"``, ...) and carries a ``spec``: what it computes, in terms a runner can
inspect (the Spark runner uses it to pick vectorised execution); ``operator_factory`` builds the operator
that computes it element by element, which every runner can host.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from panes.datastream.partitioning import StreamPartitioner
from panes.tags import OutputTag

_ids = itertools.count(1)


def _next_id() -> int:
    return next(_ids)


@dataclass(frozen=True, eq=False)
class Transformation:
    """A node of the plan. ``parallelism`` ``None`` means the environment's default."""

    name: str
    inputs: tuple[Transformation, ...] = ()
    parallelism: int | None = None
    uid: str | None = None
    error_tag: OutputTag[Any] | None = None
    id: int = field(default_factory=_next_id)

    kind = "transformation"
    is_virtual = False

    def describe(self) -> str:
        return self.name

    def with_settings(self, **changes: Any) -> Transformation:
        """A copy with ``changes`` (name, parallelism, uid); the id stays, so plans stay consistent."""
        from dataclasses import replace

        return replace(self, **changes)


@dataclass(frozen=True, eq=False)
class SourceTransformation(Transformation):
    source: Any = None
    kind = "source"

    def describe(self) -> str:
        return f"{self.name} [{self.source!r}]"


@dataclass(frozen=True, eq=False)
class OneInputTransformation(Transformation):
    """An operator with one input. ``key_selector`` is set when the input is keyed."""

    op_kind: str = "process"
    spec: Any = None
    operator_factory: Callable[[], Any] | None = None
    key_selector: Callable[[Any], Any] | None = None

    kind = "one_input"

    def describe(self) -> str:
        keyed = " (keyed)" if self.key_selector is not None else ""
        return f"{self.name}: {self.op_kind}{keyed}"


@dataclass(frozen=True, eq=False)
class TwoInputTransformation(Transformation):
    op_kind: str = "co_process"
    spec: Any = None
    operator_factory: Callable[[], Any] | None = None
    key_selector1: Callable[[Any], Any] | None = None
    key_selector2: Callable[[Any], Any] | None = None

    kind = "two_input"

    def describe(self) -> str:
        keyed = " (keyed)" if self.key_selector1 is not None else ""
        return f"{self.name}: {self.op_kind}{keyed}"


@dataclass(frozen=True, eq=False)
class SinkTransformation(Transformation):
    sink: Any = None
    kind = "sink"

    def describe(self) -> str:
        return f"{self.name} [{self.sink!r}]"


@dataclass(frozen=True, eq=False)
class PartitionTransformation(Transformation):
    partitioner: StreamPartitioner | None = None
    kind = "partition"
    is_virtual = True

    def describe(self) -> str:
        return f"{self.name} [{self.partitioner!r}]"


@dataclass(frozen=True, eq=False)
class UnionTransformation(Transformation):
    kind = "union"
    is_virtual = True


@dataclass(frozen=True, eq=False)
class SideOutputTransformation(Transformation):
    tag: OutputTag[Any] | None = None
    kind = "side_output"
    is_virtual = True

    def describe(self) -> str:
        return f"{self.name} [{self.tag!r}]"


@dataclass(frozen=True)
class Plan:
    """The transformations reachable from the sinks, inputs before the transformations that read them."""

    sinks: tuple[SinkTransformation, ...]

    def transformations(self) -> list[Transformation]:
        ordered: list[Transformation] = []
        seen: set[int] = set()

        def visit(node: Transformation) -> None:
            if node.id in seen:
                return
            seen.add(node.id)
            for parent in node.inputs:
                visit(parent)
            ordered.append(node)

        for sink in self.sinks:
            visit(sink)
        return ordered

    def __iter__(self) -> Iterator[Transformation]:
        return iter(self.transformations())

    def consumers(self, node: Transformation) -> list[Transformation]:
        return [t for t in self.transformations() if any(parent.id == node.id for parent in t.inputs)]

    def explain(self) -> str:
        """A readable listing: one line per transformation with its inputs, parallelism and kind."""
        lines = ["== panes plan =="]
        for node in self.transformations():
            inputs = ", ".join(f"#{p.id}" for p in node.inputs) or "-"
            parallelism = "default" if node.parallelism is None else str(node.parallelism)
            virtual = " (virtual)" if node.is_virtual else ""
            lines.append(f"#{node.id} {node.kind}{virtual} <- {inputs}  parallelism={parallelism}  {node.describe()}")
        return "\n".join(lines)
