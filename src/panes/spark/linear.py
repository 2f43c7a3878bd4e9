"""The plan as Spark executes it: one linear sequence of steps over one stream of rows.

Every row belongs to a *channel*: the output of a physical transformation (its main output, or one of its
side outputs). The steps run in topological order; each consumes the channels its transformation reads
and adds rows on its own channels; rows of other channels pass through untouched, and a consumed channel
also passes through while a later step or sink still reads it. This keeps the whole plan in one
DataFrame, so each keyed operator exists exactly once in the query, and the sinks split the final rows by
channel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from panes.datastream.plan import (
    OneInputTransformation,
    PartitionTransformation,
    Plan,
    SideOutputTransformation,
    SinkTransformation,
    SourceTransformation,
    Transformation,
    TwoInputTransformation,
    UnionTransformation,
)
from panes.tags import OutputTag

Channel = tuple[int, str | None]
"""(transformation id, side-output tag id or ``None`` for the main output)."""


def channel_of(transformation: Transformation, tag: OutputTag[Any] | None = None) -> Channel:
    return (transformation.id, None if tag is None else tag.tag_id)


@dataclass
class Step:
    """One physical transformation: what it reads (per input), what it is, what passes through, and which of
    its own output channels anything reads (``needed_outputs``; the rest are not emitted)."""

    index: int
    transformation: Transformation
    inputs: list[list[Channel]]
    key_selectors: list[Callable[[Any], Any] | None]
    passthrough: set[Channel] = field(default_factory=set)
    needed_outputs: set[Channel] = field(default_factory=set)

    @property
    def kind(self) -> str:
        t = self.transformation
        if isinstance(t, SourceTransformation):
            return "source"
        if isinstance(t, SinkTransformation):
            return "sink"
        if isinstance(t, OneInputTransformation) and t.op_kind == "timestamps_watermarks":
            return "timestamps"
        return "keyed" if any(k is not None for k in self.key_selectors) else "stateless"

    @cached_property
    def consumed(self) -> frozenset[Channel]:
        return frozenset(channel for channels in self.inputs for channel in channels)

    @cached_property
    def input_of(self) -> dict[Channel, int]:
        """Which input index each consumed channel feeds."""
        return {channel: index for index, channels in enumerate(self.inputs) for channel in channels}



def _resolve(source: Transformation, tag: OutputTag[Any] | None = None) -> list[Channel]:
    """The channels behind ``source`` (virtual transformations dissolve)."""
    if isinstance(source, PartitionTransformation):
        return _resolve(source.inputs[0], tag)
    if isinstance(source, SideOutputTransformation):
        return _resolve(source.inputs[0], source.tag)
    if isinstance(source, UnionTransformation):
        return [channel for parent in source.inputs for channel in _resolve(parent, tag)]
    return [channel_of(source, tag)]


def _key_selectors(transformation: Transformation) -> list[Callable[[Any], Any] | None]:
    if isinstance(transformation, OneInputTransformation):
        return [transformation.key_selector]
    if isinstance(transformation, TwoInputTransformation):
        return [transformation.key_selector1, transformation.key_selector2]
    return [None for _ in transformation.inputs]


def linearize(plan: Plan) -> list[Step]:
    """The physical transformations of ``plan`` as steps, with pass-through channels worked out."""
    steps: list[Step] = []
    for transformation in plan.transformations():
        if transformation.is_virtual:
            continue
        inputs = [_resolve(parent) for parent in transformation.inputs]
        # steps travel to executors: keep the transformation without its inputs (a DataFrame source upstream
        # holds the SparkContext, which cannot leave the driver)
        shipped = transformation.with_settings(inputs=())
        steps.append(Step(len(steps), shipped, inputs, _key_selectors(transformation)))
    last_reader: dict[Channel, int] = {}
    for step in steps:
        for channel in step.consumed:
            last_reader[channel] = step.index
    for step in steps:
        # a channel read here stays in the stream when a later step reads it too
        step.passthrough = {c for c in step.consumed if last_reader[c] > step.index}
        step.needed_outputs = {c for c in last_reader if c[0] == step.transformation.id}
    return steps


def output_channels(steps: list[Step]) -> set[Channel]:
    """Channels some step reads."""
    return {channel for step in steps for channel in step.consumed}
