"""The plan: an immutable graph of transformations that the API builds and a runner translates.

Physical transformations (source, one-input, two-input, sink) become operators; virtual ones (partition,
union, side output) only shape the connections between them, as in Flink. Each transformation names its
``kind`` (``"map"``, ``"window"``, ...) and carries a ``spec``: what it computes, in terms a runner can
inspect (the Spark runner uses it to pick vectorised execution); ``operator_factory`` builds the operator
that computes it element by element, which every runner can host.

Types: a transformation's ``output_type`` says how its values map to columns (a ``panes.types.RecordType``),
is ``None`` for values with no schema (any Python object, pickled where a runner must move it), or
:data:`INHERIT` for operators whose output type is their input's (filter, reduce, timestamps, ...), or
:class:`Derived` when it is computed from the input's type (built-in window aggregations).
``side_output_types`` does the same for side outputs (a window's late data has its input's type); other
side outputs take the ``type_info`` of their ``OutputTag``, and error outputs carry ``ErrorRecord`` values
with no schema. :func:`resolve_types` works out every channel's type for a runner.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from panes.datastream.partitioning import StreamPartitioner
from panes.tags import OutputTag
from panes.types import RecordType

_ids = itertools.count(1)


class Inherit:
    """The output type of an operator that emits values of its input's type."""

    _instance: Inherit | None = None

    def __new__(cls) -> Inherit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "INHERIT"

    def __reduce__(self) -> str:
        return "INHERIT"


INHERIT = Inherit()


@dataclass(frozen=True)
class Derived:
    """An output type computed from the input's type (``None`` when it cannot be: values stay objects)."""

    derive: Callable[[RecordType | None], RecordType | None]


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
    output_type: RecordType | Inherit | Derived | None = None
    side_output_types: tuple[tuple[str, RecordType | Inherit | None], ...] = ()
    id: int = field(default_factory=_next_id)

    kind = "transformation"
    is_virtual = False

    def describe(self) -> str:
        return self.name

    def with_settings(self, **changes: Any) -> Transformation:
        """A copy with ``changes`` (name, parallelism, uid); the id stays, so plans stay consistent."""
        from dataclasses import replace

        return replace(self, **changes)

    def another(self, **changes: Any) -> Transformation:
        """A copy with ``changes`` (its inputs, say) and a new id: another step, which a plan can hold beside
        this one."""
        from dataclasses import replace

        return replace(self, id=_next_id(), **changes)


@dataclass(frozen=True, eq=False)
class SourceTransformation(Transformation):
    source: Any = None
    kind = "source"

    def describe(self) -> str:
        return f"{self.name} [{self.source!r}]"


@dataclass(frozen=True, eq=False)
class OneInputTransformation(Transformation):
    """An operator with one input. ``key_selector`` is set when the input is keyed. ``batch_operator_factory``,
    when set, builds the operator runners use in BATCH execution instead (a keyed reduce's final-result
    operator, a step with event time per key without it)."""

    op_kind: str = "process"
    spec: Any = None
    operator_factory: Callable[[], Any] | None = None
    key_selector: Callable[[Any], Any] | None = None
    batch_operator_factory: Callable[[], Any] | None = None
    key_time: Any = None
    """A keyed step's event time per key (``PerKeyWatermarks``, ``watermark_per_key``), or ``None``."""

    def factory_for(self, batch: bool) -> Callable[[], Any]:
        """The operator factory of STREAMING (``batch`` false) or BATCH execution."""
        factory = self.batch_operator_factory if batch and self.batch_operator_factory is not None else None
        chosen = factory or self.operator_factory
        assert chosen is not None
        return chosen

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


Channel = tuple[int, "str | None"]
"""An output of a physical transformation: (its id, a side-output tag id or ``None`` for the main output)."""


def stream_channels(transformation: Transformation, tag: OutputTag[Any] | None = None) -> list[Channel]:
    """The physical channels behind a stream (virtual transformations dissolve)."""
    if isinstance(transformation, PartitionTransformation):
        return stream_channels(transformation.inputs[0], tag)
    if isinstance(transformation, SideOutputTransformation):
        return stream_channels(transformation.inputs[0], transformation.tag)
    if isinstance(transformation, UnionTransformation):
        return [channel for parent in transformation.inputs for channel in stream_channels(parent, tag)]
    return [(transformation.id, None if tag is None else tag.tag_id)]


SourceTypes = Callable[[Any], "RecordType | None"]
"""How a runner types a source's values (``source -> RecordType | None``)."""


def declared_source_type(source: Any) -> RecordType | None:
    """The type a source declares (``record_type()``), or ``None``."""
    declared = getattr(source, "record_type", None)
    return declared() if callable(declared) else None


def shared_type(types: Iterable[RecordType | None]) -> RecordType | None:
    """The one type ``types`` all are (the channels of one stream), ``None`` when they differ or there are none."""
    distinct = set(types)
    return distinct.pop() if len(distinct) == 1 else None


def resolve_types(plan: Plan, source_type: SourceTypes = declared_source_type) -> dict[Channel, RecordType | None]:
    """The type of every channel of ``plan`` that something reads; ``source_type`` types sources (runners that
    know more, such as the Spark runner reading a DataFrame's schema, pass their own)."""
    transformations = plan.transformations()
    by_id = {t.id: t for t in transformations}
    tags = {
        (t.inputs[0].id, t.tag.tag_id): t.tag
        for t in transformations
        if isinstance(t, SideOutputTransformation) and t.tag is not None
    }
    resolved: dict[Channel, RecordType | None] = {}

    def input_type(transformation: Transformation) -> RecordType | None:
        if not transformation.inputs:
            return None
        return shared_type(channel_type(c) for c in stream_channels(transformation.inputs[0]))

    def channel_type(channel: Channel) -> RecordType | None:
        if channel in resolved:
            return resolved[channel]
        transformation = by_id[channel[0]]
        tag_id = channel[1]
        found: RecordType | Inherit | Derived | None
        if tag_id is None:
            found = transformation.output_type
            if found is None and isinstance(transformation, SourceTransformation):
                found = source_type(transformation.source)
        elif transformation.error_tag is not None and transformation.error_tag.tag_id == tag_id:
            found = None
        elif tag_id in dict(transformation.side_output_types):
            found = dict(transformation.side_output_types)[tag_id]
        else:
            tag = tags.get((channel[0], tag_id))
            found = None if tag is None or tag.type_info is None else RecordType.of(tag.type_info)
        result: RecordType | None
        if isinstance(found, Derived):
            result = found.derive(input_type(transformation))
        elif isinstance(found, Inherit):
            result = input_type(transformation)
        else:
            result = found
        resolved[channel] = result
        return result

    for transformation in transformations:
        if not transformation.is_virtual:
            channel_type((transformation.id, None))
    for channel in tags:
        channel_type(channel)
    return resolved


PASS_VALUES = frozenset({"filter", "timestamps_watermarks"})
"""Operator kinds whose main output values are their input values, unchanged."""


def checked_outputs(
    transformation: Transformation, types: dict[Channel, RecordType | None]
) -> dict[Channel, RecordType]:
    """Of ``types`` (output channels of ``transformation`` and their types), the typed channels whose values the
    operator makes, so a runner checks each value against its type: every typed output except the main output
    of an operator that passes its input values on and a window's late data (its input elements)."""
    passes = isinstance(transformation, OneInputTransformation) and transformation.op_kind in PASS_VALUES
    late = getattr(getattr(transformation, "spec", None), "late_data_tag", None)
    checked: dict[Channel, RecordType] = {}
    for channel, record_type in types.items():
        if record_type is None or channel[0] != transformation.id:
            continue
        if (channel[1] is None and passes) or (late is not None and channel[1] == late.tag_id):
            continue
        checked[channel] = record_type
    return checked


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


def error_output_channels(transformations: Iterable[Transformation]) -> set[Channel]:
    """The channels that are error outputs (``side_output_errors``) of ``transformations``."""
    return {(t.id, t.error_tag.tag_id) for t in transformations if t.error_tag is not None}
