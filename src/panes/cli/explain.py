"""``panes explain``: a plan as a readable tree, and how the Spark runner runs it.

The tree starts at the sources and follows the plan's transformations downstream: each line is a step
(``#id`` as in ``Plan.explain``) with what it computes, read from the step's own ``spec`` (the window's
assigner, trigger, evictor, allowed lateness and late-data output; the watermark strategy; the key). A step
with several inputs (a union, a connected stream) is shown once, under its first input, and referred to as
``-> #id`` under the others. Virtual steps (``key_by``, side outputs, unions) label the edges. The Spark part
lists the query's stages (``panes.spark.stages``): which steps run fused in one Python call, where rows are
shuffled by key, and which steps keep keyed state. Durations are milliseconds, as everywhere in panes.
"""

from __future__ import annotations

from typing import Any

from panes.datastream.differences import runner_differences
from panes.datastream.execution import ExecutionConfig
from panes.datastream.plan import (
    Channel,
    OneInputTransformation,
    PartitionTransformation,
    Plan,
    SideOutputTransformation,
    SinkTransformation,
    SourceTransformation,
    Transformation,
    TwoInputTransformation,
    UnionTransformation,
    resolve_types,
    shared_type,
    stream_channels,
)
from panes.types import RecordType


def _name_of(function: Any, depth: int = 0) -> str:
    """A user function's name: a plain function's, a class's, or that of what an adapter panes made holds."""
    if depth > 4:
        return type(function).__name__
    if isinstance(function, type) or (callable(function) and hasattr(function, "__code__")):
        return str(function.__qualname__)
    cls = type(function)
    if cls.__module__.startswith("panes.") and cls.__name__.startswith("_"):
        # an adapter around the user's function: the attribute or closure holding it
        for attribute in ("fn", "_fn", "_wrapped", "function", "func"):
            inner = getattr(function, attribute, None)
            if inner is not None and inner is not function:
                return _name_of(inner, depth + 1)
        for member in vars(cls).values():
            for cell in getattr(member, "__closure__", None) or ():
                if callable(cell.cell_contents):
                    return _name_of(cell.cell_contents, depth + 1)
    return cls.__name__


def key_text(selector: Any) -> str:
    """How a key selector reads the key: a field, or a function's name."""
    field = getattr(selector, "field", None)
    if type(selector).__name__ == "FieldKey" and field is not None:
        return f"field {field!r}"
    owner = getattr(selector, "__self__", None)
    if owner is not None and getattr(selector, "__name__", "") == "get_key":
        return _name_of(owner)
    return str(getattr(selector, "__qualname__", None) or type(selector).__name__)


def strategy_lines(strategy: Any) -> list[str]:
    """The watermark strategy of a timestamps step, line by line."""
    kind = getattr(strategy, "kind", None)
    text = kind.value.replace("_", " ") if kind is not None else type(strategy).__name__
    bound = getattr(strategy, "max_out_of_orderness", None)
    if bound is not None:
        text += f" {bound} ms (watermark = largest timestamp - {bound} - 1)"
    lines = [f"watermarks: {text}"]
    assigner = getattr(strategy, "timestamp_assigner", None)
    lines.append(f"timestamps: {assigner!r}" if assigner is not None else "timestamps: each record's own")
    idle = getattr(strategy, "idle_timeouts", ())
    if idle:
        lines.append(f"idleness: after {', '.join(f'{t} ms' for t in idle)}")
    alignment = getattr(strategy, "alignment", None)
    if alignment is not None and alignment.is_enabled():
        lines.append(f"alignment: {alignment!r}")
    return lines


def split_lines(node: OneInputTransformation) -> list[str]:
    """How a source's own strategy (``env.from_source``) makes its watermark from the source's splits: for a Kafka
    source, per partition (``panes.watermarks.splits``; on Spark ``panes.spark.split_watermarks``)."""
    factory = node.operator_factory
    if factory is None or not getattr(factory(), "per_split", False):
        return []
    upstream = node.inputs[0]
    if not isinstance(upstream, SourceTransformation) or upstream.source.__class__.__name__ != "KafkaSource":
        return ["per split: a generator per split when the source says which split each element comes from"]
    return [
        "per partition: a generator per Kafka partition, the watermark their minimum (a partition without a record "
        "holds it at Long.MIN_VALUE), as Flink's KafkaSource",
        "on Spark: the same rule, each partition rated in every micro-batch and its watermark tracked by every "
        "shard of the keyed steps after it, which advance after the micro-batch's records; with_idleness counts "
        "micro-batches' processing times",
    ]


def window_lines(spec: Any) -> list[str]:
    """A window step's configuration, line by line."""
    function = spec.function
    evaluated = {"reduce": "reduce", "aggregate": "aggregate", "process": "process"}.get(function.kind, function.kind)
    incremental = function.reduce if function.reduce is not None else function.aggregate
    how = f"{evaluated} {_name_of(incremental)}" if incremental is not None else evaluated
    return [
        *([] if spec.keyed else ["key: none (window_all, parallelism 1)"]),
        f"window: {spec.assigner!r}",
        f"trigger: {spec.trigger!r}",
        f"evictor: {spec.evictor!r}" if spec.evictor is not None else "evictor: none",
        f"allowed lateness: {spec.allowed_lateness} ms",
        f"late data: side output {spec.late_data_tag.tag_id!r}"
        if spec.late_data_tag is not None
        else "late data: dropped (counted)",
        f"function: {how} -> {_name_of(function.process_function)}",
        f"fired panes: {spec.accumulation}",
        *([] if getattr(spec, "key_time", None) is None else key_time_lines(spec.key_time)),
    ]


def key_time_lines(key_time: Any) -> list[str]:
    """A keyed step's event time per key, and the watermark the steps after it get."""
    return [
        f"event time: {key_time.describe()}",
        f"steps after it get the watermark less {key_time.max_lag} ms (on Spark: the query's watermark less it)",
    ]


def columnar_line(node: OneInputTransformation, types: dict[Channel, RecordType | None]) -> str:
    """Whether the keyed window ``node`` runs on columns on Spark (``panes.windowing.columnar``), and if not why
    and what would make it."""
    from panes.windowing.implementation import describe

    input_type = shared_type(types.get(channel) for channel in stream_channels(node.inputs[0]))
    implementation = node.spec.implementation(exact_order=False, columns=True, input_type=input_type)
    return f"on Spark: {describe(implementation, node.spec)}"


def step_lines(node: Transformation, types: dict[Channel, RecordType | None] | None = None) -> list[str]:
    """What a physical step computes, line by line (its first line is its name); with the plan's channel
    ``types``, a window step also says whether it runs on columns on Spark, and if not why."""
    if isinstance(node, SourceTransformation):
        return [f"source {node.name}: {node.source!r}"]
    if isinstance(node, SinkTransformation):
        prefix = getattr(node.sink, "prefix", None)
        what = repr(node.sink) + (f" (prefix {prefix!r})" if prefix else "")
        return [f"sink {what}" if node.name.endswith(repr(node.sink)) else f"sink {node.name}: {what}"]
    lines: list[str] = []
    if isinstance(node, OneInputTransformation):
        keyed = f", keyed by {key_text(node.key_selector)}" if node.key_selector is not None else ""
        lines.append(f"{node.name} ({node.op_kind}{keyed})")
        if node.op_kind == "timestamps_watermarks":
            lines += strategy_lines(node.spec)
            lines += split_lines(node)
        elif node.op_kind == "window":
            lines += window_lines(node.spec)
            if types is not None and node.spec.keyed:
                lines.append(columnar_line(node, types))
        elif node.spec is not None:
            lines.append(f"function: {_name_of(node.spec)}")
            if node.key_time is not None:
                lines += key_time_lines(node.key_time)
    elif isinstance(node, TwoInputTransformation):
        keyed = ""
        if node.key_selector1 is not None:
            keyed = f", keyed by {key_text(node.key_selector1)} / {key_text(node.key_selector2)}"
        lines.append(f"{node.name} ({node.op_kind}{keyed})")
        if node.spec is not None:
            lines.append(f"function: {_name_of(node.spec)}")
    else:
        lines.append(node.describe())
    if node.error_tag is not None:
        lines.append(f"bad records: side output {node.error_tag.tag_id!r}")
    return lines


def _edge(virtual: Transformation) -> str:
    if isinstance(virtual, PartitionTransformation):
        return "key_by" if virtual.name == "key_by" else f"{virtual.name} ({virtual.partitioner!r})"
    if isinstance(virtual, SideOutputTransformation) and virtual.tag is not None:
        return f"side output {virtual.tag.tag_id!r}"
    if isinstance(virtual, UnionTransformation):
        return f"union of {', '.join(f'#{p.id}' for p in virtual.inputs)}"
    return virtual.name


class _Tree:
    def __init__(self, plan: Plan) -> None:
        self.nodes = plan.transformations()
        self.types = resolve_types(plan)
        self.children: dict[int, list[tuple[list[str], Transformation]]] = {t.id: [] for t in self.nodes}
        for node in self.nodes:
            if not node.is_virtual:
                for parent in node.inputs:
                    for physical, edges in self._physical_parents(parent, []):
                        self.children[physical.id].append((edges, node))
        self.printed: set[int] = set()
        self.lines: list[str] = []

    def _physical_parents(self, node: Transformation, edges: list[str]) -> list[tuple[Transformation, list[str]]]:
        if not node.is_virtual:
            return [(node, edges)]
        found: list[tuple[Transformation, list[str]]] = []
        for parent in node.inputs:
            found += self._physical_parents(parent, [_edge(node), *edges])
        return found

    def render(self) -> list[str]:
        for node in self.nodes:
            if isinstance(node, SourceTransformation):
                self._node(node, [], "", "")
        return self.lines

    def _node(self, node: Transformation, edges: list[str], first: str, rest: str) -> None:
        via = "".join(f"[{edge}] " for edge in edges)
        if node.id in self.printed:
            self.lines.append(f"{first}{via}-> #{node.id} {node.name} (shown above)")
            return
        self.printed.add(node.id)
        head, *details = step_lines(node, self.types)
        self.lines.append(f"{first}{via}#{node.id} {head}")
        children = self.children[node.id]
        bar = "|  " if children else "   "
        self.lines += [f"{rest}{bar}  {line}" for line in details]
        for index, (child_edges, child) in enumerate(children):
            last = index == len(children) - 1
            self._node(child, child_edges, rest + ("`- " if last else "+- "), rest + ("   " if last else "|  "))


def plan_tree(plan: Plan) -> list[str]:
    """The plan as a tree from its sources (see the module docstring)."""
    return _Tree(plan).render()


def spark_lines(plan: Plan, config: ExecutionConfig | None = None) -> list[str]:
    """How the Spark runner runs ``plan`` (with the environment's ``config``): its stages, numbered, and a
    summary of fusion, shuffles and state."""
    try:
        from panes.spark.stages import describe_stage, is_batch, is_streaming, spark_stages
    except ImportError as error:  # pyspark is an optional extra
        return [f"(the Spark runner is not installed: {error})"]
    config = config or ExecutionConfig()
    batch = is_batch(plan, config)
    streaming = not batch and is_streaming(plan)
    stages = spark_stages(plan, streaming, config)
    if streaming:
        mode = "a streaming query, one pass per micro-batch"
    elif batch:
        mode = "one batch job in BATCH execution (final results only)"
    else:
        mode = "one batch job over the whole input"
    lines = [f"runs as {mode}:"]
    lines += [f"{number:>3}. {describe_stage(stage)}" for number, stage in enumerate(stages, 1)]
    python = [stage for stage in stages if stage.kind == "python"]
    fused = [stage for stage in python if len(stage.steps) + stage.keying + stage.unpacks > 1]
    keyed = [stage for stage in stages if stage.kind == "keyed"]
    shuffles = [stage for stage in stages if stage.kind == "shuffle"]
    lines.append(
        f"{len(python)} Python calls ({len(fused)} fusing several steps), {len(shuffles)} shuffles, "
        f"{len(keyed)} keyed state steps; row-local steps run where their rows already are, without a shuffle"
    )
    return lines


def settings_lines(master: str = "local[2]") -> list[str]:
    """The Spark settings of a session panes creates (``panes.spark.settings``): on ``master``, and on a cluster."""
    from panes.spark.settings import session_settings

    local = session_settings(master)
    cluster = session_settings("spark://cluster:7077")
    lines = [f"a session panes creates on {master} (panes run's default master); a --conf of yours wins:"]
    lines += [f"  {key}={value}" for key, value in sorted(local.items())]
    lines.append("on a cluster (spark://, yarn, k8s://, local-cluster): Spark's own defaults (shards: twice its")
    lines.append("200 shuffle partitions; the web UI on; the driver memory yours), and only:")
    lines += [f"  {key}={value}" for key, value in sorted(cluster.items())]
    return lines


def explain(plan: Plan, title: str = "", config: ExecutionConfig | None = None) -> str:
    """The whole ``panes explain`` text for ``plan`` (``config``: the environment's settings)."""
    lines = [f"== plan{': ' + title if title else ''} (durations in ms) =="]
    lines += plan_tree(plan)
    lines += ["", "== on Spark =="]
    lines += spark_lines(plan, config)
    lines += ["", "== Spark settings =="]
    lines += settings_lines()
    differences = runner_differences(plan, config)
    lines += ["", "== the same results on every runner? =="]
    if differences:
        lines.append("not always; the local runner and Spark can differ because:")
        lines += [f"  - {reason}" for reason in differences]
    else:
        lines.append("yes: the watermark moves where a step of the input ends on both (up to the order of keys)")
    return "\n".join(lines)
