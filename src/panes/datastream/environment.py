"""``StreamEnvironment``: where pipelines start (sources), what they run on (the runner) and how (parallelism,
max parallelism = number of key groups, watermark interval).

``runner`` is ``"local"`` (the in-process reference runner, the default), ``"spark"`` (``panes.spark``) or
a runner object with ``execute(plan, env, job_name)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from panes.datastream.plan import Plan, SinkTransformation, SourceTransformation
from panes.datastream.sources import (
    CollectionSource,
    FileSource,
    GeneratorSource,
    IterableSource,
    MicroBatchSource,
    Source,
    SplitsSource,
)
from panes.time import Duration, duration_ms

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream


class Runner(Protocol):
    def execute(self, plan: Plan, env: StreamEnvironment, job_name: str) -> JobExecutionResult: ...


@dataclass
class JobExecutionResult:
    """What ``execute`` returns: the job's name, how long it ran, and runner-specific details."""

    job_name: str
    net_runtime_ms: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def get_job_name(self) -> str:
        return self.job_name

    def get_net_runtime(self) -> int:
        return self.net_runtime_ms


DEFAULT_MAX_PARALLELISM = 128
DEFAULT_WATERMARK_INTERVAL_MS = 200


class StreamEnvironment:
    """The execution environment (Flink's ``StreamExecutionEnvironment``).

    ``parallelism`` (default 1) applies to transformations that do not set their own; ``max_parallelism``
    (default 128) is the number of key groups; ``auto_watermark_interval`` (default 200 ms, 0 disables
    periodic watermarks) is how often periodic watermark generators are asked for a watermark.
    """

    def __init__(
        self,
        runner: str | Runner = "local",
        *,
        parallelism: int = 1,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        auto_watermark_interval: Duration = DEFAULT_WATERMARK_INTERVAL_MS,
        **runner_options: Any,
    ) -> None:
        self._runner_spec = runner
        self._runner_options = runner_options
        self._runner: Runner | None = None
        self._sinks: list[SinkTransformation] = []
        self.set_parallelism(parallelism)
        self.set_max_parallelism(max_parallelism)
        self.set_auto_watermark_interval(auto_watermark_interval)

    @staticmethod
    def get_execution_environment(runner: str | Runner = "local", **options: Any) -> StreamEnvironment:
        return StreamEnvironment(runner, **options)

    # -- configuration ------------------------------------------

    def set_parallelism(self, parallelism: int) -> StreamEnvironment:
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism <= 0:
            raise ValueError(f"parallelism must be an int > 0 (got {parallelism!r})")
        self.parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self.parallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamEnvironment:
        if isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int):
            raise TypeError("max_parallelism must be an int")
        if not 0 < max_parallelism <= 1 << 15:
            raise ValueError(f"max_parallelism must be in [1, 32768] (got {max_parallelism})")
        self.max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int:
        return self.max_parallelism

    def set_auto_watermark_interval(self, interval: Duration) -> StreamEnvironment:
        interval_ms = duration_ms(interval, name="auto_watermark_interval")
        if interval_ms < 0:
            raise ValueError(f"auto_watermark_interval must be >= 0 (got {interval_ms} ms)")
        self.auto_watermark_interval = interval_ms
        return self

    def get_auto_watermark_interval(self) -> int:
        return self.auto_watermark_interval

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            self._runner = _make_runner(self._runner_spec, self._runner_options)
        return self._runner

    # -- sources ------------------------------------------

    def from_source(
        self, source: Source | Any, watermark_strategy: Any = None, source_name: str = "Source"
    ) -> DataStream:
        """A stream from ``source``; with ``watermark_strategy`` timestamps and watermarks are assigned at once."""
        from panes.datastream.stream import DataStream

        transformation = SourceTransformation(name=source_name, source=source, parallelism=_source_parallelism(source))
        stream = DataStream(self, transformation)
        if watermark_strategy is not None:
            stream = stream.assign_timestamps_and_watermarks(watermark_strategy)
        return stream

    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> DataStream:
        """The elements of ``collection`` in order, as a bounded stream without timestamps."""
        return self.from_source(CollectionSource(collection), source_name="Collection Source")

    def from_iterable(self, iterable: Iterable[Any], bounded: bool = True) -> DataStream:
        """Whatever ``iterable`` yields (read once; jobs over it cannot be restored from a snapshot)."""
        return self.from_source(IterableSource(iterable, bounded), source_name="Iterable Source")

    def from_generator(self, generator: Callable[[int], Any], count: int | None = None, splits: int = 1) -> DataStream:
        """``generator(i)`` for ``i`` in ``[0, count)``; unbounded when ``count`` is ``None``."""
        return self.from_source(GeneratorSource(generator, count, splits), source_name="Generator Source")

    def from_splits(self, splits: Sequence[Iterable[Any]]) -> DataStream:
        """A parallel source with explicit splits (instance ``i`` reads splits ``i, i + parallelism, ...``)."""
        return self.from_source(SplitsSource(splits), source_name="Splits Source")

    def from_micro_batches(self, batches: Sequence[Iterable[Any]], end_of_input: bool = True) -> DataStream:
        """Explicit micro-batches (``batches[i]`` arrives in batch ``i``); see ``MicroBatchSource``."""
        return self.from_source(MicroBatchSource(batches, end_of_input), source_name="Micro-batch Source")

    def from_files(
        self,
        path: str,
        format: str = "parquet",
        schema: str | None = None,
        streaming: bool = False,
        max_files_per_trigger: int | None = None,
        **options: str,
    ) -> DataStream:
        """Rows (dicts) of the files in ``path``, read once or, with ``streaming``, as a stream; see ``FileSource``."""
        source = FileSource(path, format, schema, streaming, max_files_per_trigger, options)
        return self.from_source(source, source_name=f"File Source {path}")

    def from_dataframe(self, dataframe: Any, as_: str = "dict") -> DataStream:
        """A Spark DataFrame (bounded or streaming) as a stream of rows, each a ``dict`` (default), ``tuple`` or
        ``Row`` (``as_``). Needs the Spark runner."""
        from panes.spark.sources import DataFrameSource

        return self.from_source(DataFrameSource(dataframe, as_), source_name="DataFrame Source")

    # -- execution ------------------------------------------

    def add_sink_transformation(self, sink: SinkTransformation) -> None:
        self._sinks.append(sink)

    def plan(self) -> Plan:
        """The plan of every sink added so far."""
        return Plan(tuple(self._sinks))

    def explain(self) -> str:
        return self.plan().explain()

    def get_execution_plan(self) -> str:
        return self.explain()

    def execute(self, job_name: str = "panes job") -> JobExecutionResult:
        """Run every pipeline that ends in a sink; the sinks are then cleared (as Flink clears them)."""
        if not self._sinks:
            raise RuntimeError("No operators defined in streaming topology. Cannot execute: add a sink first.")
        plan = self.plan()
        self._sinks = []
        return self.runner.execute(plan, self, job_name)

    def execute_plan(self, plan: Plan, job_name: str = "panes job") -> JobExecutionResult:
        return self.runner.execute(plan, self, job_name)


StreamExecutionEnvironment = StreamEnvironment


def _source_parallelism(source: Any) -> int | None:
    if isinstance(source, Source) and source.num_splits() == 1:
        return 1
    return None


def _make_runner(spec: str | Runner, options: dict[str, Any]) -> Runner:
    if not isinstance(spec, str):
        return spec
    if spec == "local":
        from panes.local.runner import LocalRunner

        return LocalRunner(**options)
    if spec == "spark":
        from panes.spark.runner import SparkRunner

        runner: Runner = SparkRunner(**options)
        return runner
    raise ValueError(f"unknown runner {spec!r}: use 'local', 'spark' or a runner object")
