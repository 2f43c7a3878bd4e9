"""The physical graph of a plan: operator nodes with their parallelism, and the edges between them.

Virtual transformations dissolve into edges: a partition sets the edge's partitioner, a side output its
tag, a union contributes several edges to one input. Without an explicit partitioner an edge forwards when
both sides have the same parallelism and rebalances otherwise (Flink's rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from panes.datastream.fingerprint import operator_uids
from panes.datastream.partitioning import ForwardPartitioner, RebalancePartitioner, StreamPartitioner
from panes.datastream.plan import (
    PartitionTransformation,
    Plan,
    SideOutputTransformation,
    SourceTransformation,
    Transformation,
    UnionTransformation,
)
from panes.datastream.sources import Source
from panes.tags import OutputTag


@dataclass(eq=False)
class Edge:
    """Records of ``upstream`` (its side output ``tag``, or its main output) into input ``input_index`` of
    ``downstream``, spread by ``partitioner``."""

    upstream: Node
    downstream: Node
    input_index: int
    partitioner: StreamPartitioner | None
    tag: OutputTag[Any] | None

    def resolved_partitioner(self) -> StreamPartitioner:
        if self.partitioner is not None:
            return self.partitioner
        if self.upstream.parallelism == self.downstream.parallelism:
            return ForwardPartitioner()
        return RebalancePartitioner()


@dataclass(eq=False)
class Node:
    """A physical transformation with its resolved parallelism, position in the plan and uid (the key of its
    state in snapshots: ``panes.datastream.fingerprint.operator_uids``)."""

    transformation: Transformation
    position: int
    parallelism: int
    uid: str = ""
    inputs: list[list[Edge]] = field(default_factory=list)
    outputs: list[Edge] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.uid


def _parallelism(transformation: Transformation, default: int) -> int:
    if isinstance(transformation, SourceTransformation) and isinstance(transformation.source, Source):
        wanted = transformation.parallelism or default
        return max(1, min(wanted, transformation.source.num_splits()))
    return transformation.parallelism or default


def build_graph(plan: Plan, default_parallelism: int) -> list[Node]:
    """The nodes of ``plan`` in topological order, connected by their edges."""
    ordered = plan.transformations()
    uids = operator_uids(plan)
    nodes: dict[int, Node] = {}
    for position, transformation in enumerate(ordered):
        if transformation.is_virtual:
            continue
        node = Node(
            transformation, position, _parallelism(transformation, default_parallelism), uids[transformation.id]
        )
        node.inputs = [[] for _ in transformation.inputs]
        nodes[transformation.id] = node

    def connect(
        source: Transformation,
        target: Node,
        index: int,
        partitioner: StreamPartitioner | None,
        tag: OutputTag[Any] | None,
    ) -> None:
        if isinstance(source, PartitionTransformation):
            # as Flink's StreamGraphGenerator: the partitioning nearest to the consumer wins (key_by after key_by
            # re-keys), so an inner one only applies when no outer one was set
            connect(source.inputs[0], target, index, source.partitioner if partitioner is None else partitioner, tag)
        elif isinstance(source, SideOutputTransformation):
            connect(source.inputs[0], target, index, partitioner, source.tag)
        elif isinstance(source, UnionTransformation):
            for parent in source.inputs:
                connect(parent, target, index, partitioner, tag)
        else:
            upstream = nodes[source.id]
            edge = Edge(upstream, target, index, partitioner, tag)
            upstream.outputs.append(edge)
            target.inputs[index].append(edge)

    for transformation in ordered:
        target = nodes.get(transformation.id)
        if target is None:
            continue
        for index, parent in enumerate(transformation.inputs):
            connect(parent, target, index, None, None)
    for node in nodes.values():
        for edge in node.outputs:
            if (
                isinstance(edge.resolved_partitioner(), ForwardPartitioner)
                and edge.upstream.parallelism != edge.downstream.parallelism
            ):
                up, down = edge.upstream, edge.downstream
                raise ValueError(
                    f"forward() needs the same parallelism on both sides: {up.transformation.name} has "
                    f"{up.parallelism}, {down.transformation.name} has {down.parallelism}"
                )
    return [nodes[t.id] for t in ordered if t.id in nodes]
