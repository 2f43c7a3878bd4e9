"""The plan as Spark executes it: one linear sequence of steps over one stream of rows.

Every row belongs to a *channel*: the output of a physical transformation (its main output, or one of its
side outputs). The steps run in topological order; each consumes the channels its transformation reads
and adds rows on its own channels; rows of other channels pass through untouched, and a consumed channel
also passes through while a later step or any sink still reads it. This keeps the whole plan in one
DataFrame, so each keyed operator exists exactly once in the query; the sinks read the final rows by
channel (they are written after the last step, whatever their place in the plan).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from panes.datastream.plan import (
    Channel,
    OneInputTransformation,
    Plan,
    SinkTransformation,
    SourceTransformation,
    SourceTypes,
    Transformation,
    TwoInputTransformation,
    checked_outputs,
    declared_source_type,
    resolve_types,
    shared_type,
    stream_channels,
)
from panes.functions.stream import MapFunction
from panes.operators.stateless import StreamMap
from panes.types import RecordType


@dataclass
class Step:
    """One physical transformation: what it reads (per input), what it is, what passes through, which of its
    own output channels anything reads (``needed_outputs``; the rest are not emitted), and the type of every
    channel it reads or writes (``types``; ``None`` for values with no schema)."""

    index: int
    transformation: Transformation
    inputs: list[list[Channel]]
    key_selectors: list[Callable[[Any], Any] | None]
    passthrough: set[Channel] = field(default_factory=set)
    needed_outputs: set[Channel] = field(default_factory=set)
    types: dict[Channel, RecordType | None] = field(default_factory=dict)
    columns: bool = True
    """Whether a window step may run on columns where it can (``panes.windowing.implementation``); ``False`` keeps
    it element by element: a restart from a checkpoint whose state this step wrote element by element
    (``spark.restarts.element_by_element_steps``)."""

    @property
    def kind(self) -> str:
        t = self.transformation
        if isinstance(t, SourceTransformation):
            return "source"
        if isinstance(t, SinkTransformation):
            return "sink"
        if isinstance(t, OneInputTransformation) and t.op_kind == "timestamps_watermarks":
            return "timestamps"
        if self.broadcast_input is not None:
            # every shard is an instance that keeps broadcast state: the step runs sharded, keyed or not
            return "keyed"
        return "keyed" if any(k is not None for k in self.key_selectors) else "stateless"

    @cached_property
    def broadcast_input(self) -> int | None:
        """The input whose rows go to every shard (a broadcast connected stream's broadcast side), or ``None``."""
        index = getattr(getattr(self.transformation, "spec", None), "broadcast_input", None)
        return index if isinstance(index, int) else None

    @cached_property
    def consumed(self) -> frozenset[Channel]:
        return frozenset(channel for channels in self.inputs for channel in channels)

    @cached_property
    def input_of(self) -> dict[Channel, int]:
        """Which input index each consumed channel feeds."""
        return {channel: index for index, channels in enumerate(self.inputs) for channel in channels}

    @cached_property
    def checked_outputs(self) -> dict[Channel, RecordType]:
        """The typed output channels whose values this step's operator makes (see ``checked_outputs``)."""
        return checked_outputs(self.transformation, {c: self.types.get(c) for c in self.needed_outputs})


def _key_selectors(transformation: Transformation) -> list[Callable[[Any], Any] | None]:
    if isinstance(transformation, OneInputTransformation):
        return [transformation.key_selector]
    if isinstance(transformation, TwoInputTransformation):
        return [transformation.key_selector1, transformation.key_selector2]
    return [None for _ in transformation.inputs]


class _Identity(MapFunction[Any, Any]):
    def map(self, value: Any) -> Any:
        return value


def _identity_operator() -> StreamMap:
    return StreamMap(_Identity(), None)


def linearize(plan: Plan, source_type: SourceTypes = declared_source_type) -> list[Step]:
    """The physical transformations of ``plan`` as steps, with pass-through channels and types worked out."""
    types = resolve_types(plan, source_type)
    steps: list[Step] = []
    for transformation in plan.transformations():
        if transformation.is_virtual:
            continue
        inputs = [stream_channels(parent) for parent in transformation.inputs]
        if len(inputs) == 2 and set(inputs[0]) & set(inputs[1]):
            # one stream on both inputs (``s.connect(s)``): a row feeds one input of a step (``input_of``), so
            # the second input reads a copy of its stream, made by an identity map step
            copy = OneInputTransformation(
                name=f"{transformation.name}: its second input", op_kind="map", operator_factory=_identity_operator
            )
            steps.append(Step(len(steps), copy, [inputs[1]], [None]))
            copied: Channel = (copy.id, None)
            types[copied] = shared_type(types.get(channel) for channel in inputs[1])
            inputs[1] = [copied]
        # steps travel to executors: keep the transformation without its inputs (a DataFrame source upstream
        # holds the SparkContext, which cannot leave the driver)
        shipped = transformation.with_settings(inputs=())
        steps.append(Step(len(steps), shipped, inputs, _key_selectors(transformation)))
    end = len(steps)
    last_reader: dict[Channel, int] = {}
    for step in steps:
        for channel in step.consumed:
            # sinks write the final rows: what a sink reads stays in the stream to the end
            reader = end if step.kind == "sink" else step.index
            last_reader[channel] = max(last_reader.get(channel, -1), reader)
    for step in steps:
        # a channel read here stays in the stream when a later step (or a sink) reads it too
        step.passthrough = {c for c in step.consumed if last_reader[c] > step.index}
        step.needed_outputs = {c for c in last_reader if c[0] == step.transformation.id}
        step.types = {c: types.get(c) for c in step.consumed | step.needed_outputs}
    return steps


def after(channels: set[Channel], step: Step) -> set[Channel]:
    """The channels rows may belong to after ``step`` ran over rows of ``channels``."""
    return (channels - (step.consumed - step.passthrough)) | step.needed_outputs


def output_channels(steps: list[Step]) -> set[Channel]:
    """Channels some step reads."""
    return {channel for step in steps for channel in step.consumed}


def sink_channels(steps: list[Step]) -> set[Channel]:
    """Channels some sink reads (the rows the query's output must carry)."""
    return {channel for step in steps if step.kind == "sink" for channel in step.consumed}
