"""``StreamEnvironment``: where pipelines start (sources), what they run on (the runner) and how (parallelism,
max parallelism = number of key groups, watermark interval, runtime execution mode).

``runner`` is a name looked up among the installed runners (``"local"``, the in-process reference runner and
the default; ``"spark"``, ``panes.spark``) or a runner object with ``execute(plan, config, job_name)`` (see
``panes.datastream.execution``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from panes.datastream.execution import ExecutionConfig, JobExecutionResult, Runner, lookup_runner
from panes.datastream.plan import Plan, SinkTransformation, SourceTransformation, Transformation
from panes.datastream.runtime_mode import RuntimeExecutionMode
from panes.datastream.sources import (
    CollectionSource,
    DataFrameSource,
    FileSource,
    GeneratorSource,
    IterableSource,
    MicroBatchSource,
    Source,
    SplitsSource,
)
from panes.time import DurationLike, Instant, duration_ms

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream
    from panes.types import RecordType


DEFAULT_MAX_PARALLELISM = 128
DEFAULT_WATERMARK_INTERVAL_MS = 200


RUNNER_VARIABLE = "PANES_RUNNER"
"""The environment variable naming the runner of ``get_execution_environment()`` (``local`` or ``spark``)."""

MASTER_VARIABLE = "PANES_SPARK_MASTER"
"""The environment variable naming the Spark master of ``get_execution_environment()`` on ``spark``."""

MAX_RECORDS_VARIABLE = "PANES_MAX_RECORDS"
"""The environment variable giving ``get_execution_environment()`` on ``local`` its ``max_records``: how many
elements the local runner reads at most, which lets a script reading a source without an end (a ``KafkaSource``
without ``set_bounded``, as Flink's examples read) run to an end there (``panes run --max-records``)."""


class StreamEnvironment:
    """The execution environment (Flink's ``StreamExecutionEnvironment``).

    ``parallelism`` applies to transformations that do not set their own (default: the runner's, 1 on the local
    runner, the number of shards on Spark); ``max_parallelism`` (default 128) is the number of key groups;
    ``auto_watermark_interval`` (default 200 ms, 0 disables periodic watermarks) is how often periodic watermark
    generators are asked for a watermark; ``runtime_mode`` (default ``STREAMING``) is how jobs run, see
    :meth:`set_runtime_mode`.
    """

    def __init__(
        self,
        runner: str | Runner = "local",
        *,
        parallelism: int | None = None,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        auto_watermark_interval: DurationLike = DEFAULT_WATERMARK_INTERVAL_MS,
        runtime_mode: RuntimeExecutionMode = RuntimeExecutionMode.STREAMING,
        **runner_options: Any,
    ) -> None:
        self._runner_spec = runner
        self._runner_options = runner_options
        self._runner: Runner | None = None
        self._sinks: list[SinkTransformation] = []
        self._settled: dict[int, Transformation] = {}
        """The latest settings (name, uid, parallelism) of each transformation given any (see :meth:`settle`)."""
        self.jars: list[str] = []
        """The jars given to :meth:`add_jars` (PyFlink's ``pipeline.jars``), in order: kept, loaded by nothing."""
        self.classpaths: list[str] = []
        """The class path URLs given to :meth:`add_classpaths` (PyFlink's ``pipeline.classpaths``), in order."""
        self.parallelism: int | None = None
        if parallelism is not None:
            self.set_parallelism(parallelism)
        self.set_max_parallelism(max_parallelism)
        self.set_auto_watermark_interval(auto_watermark_interval)
        self.set_runtime_mode(runtime_mode)

    @staticmethod
    def get_execution_environment(runner: str | Runner | None = None, **options: Any) -> StreamEnvironment:
        """PyFlink's entry point: an environment on ``runner``, or, when it is ``None`` (the default), on the
        runner the configuration names, as Flink's comes from its configuration: ``$PANES_RUNNER`` (``local``,
        the default, or ``spark``; ``panes run --runner`` sets it for the job it runs), and for ``spark`` the
        master ``$PANES_SPARK_MASTER`` (default ``local[2]``). So a PyFlink script runs on Spark unchanged. On
        ``local``, ``$PANES_MAX_RECORDS`` (a number >= 1, else ``ValueError``) is the runner's ``max_records``:
        a script whose source has no end then stops after reading that many elements."""
        if runner is None:
            runner = os.environ.get(RUNNER_VARIABLE) or "local"
            master = os.environ.get(MASTER_VARIABLE)
            if runner == "spark" and master and "spark" not in options and "master" not in options:
                options = {**options, "master": master}
            limit = os.environ.get(MAX_RECORDS_VARIABLE)
            if runner == "local" and limit and "max_records" not in options:
                if not limit.isdigit() or int(limit) < 1:
                    raise ValueError(f"${MAX_RECORDS_VARIABLE} is a number of elements >= 1, not {limit!r}")
                options = {**options, "max_records": int(limit)}
        return StreamEnvironment(runner, **options)

    # -- configuration ------------------------------------------

    def set_parallelism(self, parallelism: int) -> StreamEnvironment:
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism <= 0:
            raise ValueError(f"parallelism must be an int > 0 (got {parallelism!r})")
        self.parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        """The parallelism set, else the runner's default (``default_parallelism()`` of the runner, or 1)."""
        if self.parallelism is not None:
            return self.parallelism
        default = getattr(self.runner, "default_parallelism", None)
        return int(default()) if default is not None else 1

    def set_runtime_mode(self, mode: RuntimeExecutionMode) -> StreamEnvironment:
        """How jobs run: ``RuntimeExecutionMode.STREAMING`` (the default), ``BATCH`` (bounded sources only: sorted
        keyed inputs, one key at a time, only the final watermark, final results of keyed aggregations) or
        ``AUTOMATIC`` (``BATCH`` when every source is bounded). See ``panes.datastream.runtime_mode``; a job in
        ``BATCH`` mode with an unbounded source fails at ``execute`` with ``ValueError``."""
        if not isinstance(mode, RuntimeExecutionMode):
            raise TypeError(
                f"runtime mode must be a RuntimeExecutionMode (STREAMING, BATCH or AUTOMATIC), got {mode!r}"
            )
        self.runtime_mode = mode
        return self

    def get_runtime_mode(self) -> RuntimeExecutionMode:
        return self.runtime_mode

    def set_max_parallelism(self, max_parallelism: int) -> StreamEnvironment:
        if isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int):
            raise TypeError("max_parallelism must be an int")
        if not 0 < max_parallelism <= 1 << 15:
            raise ValueError(f"max_parallelism must be in [1, 32768] (got {max_parallelism})")
        self.max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int:
        return self.max_parallelism

    def set_auto_watermark_interval(self, interval: DurationLike) -> StreamEnvironment:
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
            spec = self._runner_spec
            self._runner = lookup_runner(spec, self._runner_options) if isinstance(spec, str) else spec
        return self._runner

    def add_jars(self, *jars_path: str) -> None:
        """PyFlink's ``add_jars``: jar files a Flink job ships with (a connector's, a format's). panes' connectors
        and formats are Python, so no jar is needed nor loaded: the paths are only kept, in :attr:`jars`, as
        Flink keeps them in ``pipeline.jars``, and a PyFlink job that adds its Kafka connector's jar runs
        unchanged. Each path must be a string (``TypeError`` otherwise); it is not opened."""
        self.jars.extend(_paths(jars_path, "add_jars"))

    def add_classpaths(self, *classpaths: str) -> None:
        """PyFlink's ``add_classpaths``: URLs for the user code class loader; kept in :attr:`classpaths` and,
        as for :meth:`add_jars`, loaded by nothing (``TypeError`` for one that is not a string)."""
        self.classpaths.extend(_paths(classpaths, "add_classpaths"))

    def get_config(self) -> EnvironmentConfig:
        """PyFlink's ``env.get_config()``: the environment's settings, readable and changeable through it."""
        return EnvironmentConfig(self)

    def config(self) -> ExecutionConfig:
        """The settings runners receive with the plan."""
        return ExecutionConfig(self.parallelism, self.max_parallelism, self.auto_watermark_interval, self.runtime_mode)

    # -- sources ------------------------------------------

    def from_source(
        self,
        source: Source | Any,
        watermark_strategy: Any = None,
        source_name: str = "Source",
        type_info: Any = None,
    ) -> DataStream:
        """A stream from ``source``; with ``watermark_strategy`` timestamps and watermarks are assigned at once,
        as Flink's source does: per split when the source's reader says which split each element comes from (a
        ``KafkaSource``: a generator per partition, the instance's watermark their minimum; see
        ``panes.watermarks.splits``), else one generator per instance. ``type_info`` (a ``Types`` type, a Spark DDL
        string or a pyarrow schema) declares the elements' type: each must fit it, and runners move them as typed
        columns."""
        from panes.datastream.stream import DataStream, declared_type

        transformation = SourceTransformation(
            name=source_name,
            source=source,
            parallelism=_source_parallelism(source),
            output_type=declared_type(type_info),
        )
        stream = DataStream(self, transformation)
        if watermark_strategy is not None:
            stream = stream._watermarks(watermark_strategy, per_split=True)
        return stream

    def from_collection(
        self, collection: Iterable[Any], type_info: Any = None, batch_size: int | None = None
    ) -> DataStream:
        """The elements of ``collection`` in order, as a bounded stream without timestamps (``type_info`` as for
        ``from_source``).

        In STREAMING execution the collection is one step of input by default: watermarks move only when it ends
        (the final watermark), on every runner, as PyFlink gives on small collections. ``batch_size`` (``>= 1``)
        makes it arrive in micro-batches of that many elements instead (``from_micro_batches`` of its slices),
        with watermarks and the local runner's stepping clock moving between them, identically on every runner.
        Raises ``ValueError`` for a ``batch_size`` below 1."""
        if batch_size is None:
            return self.from_source(CollectionSource(collection), source_name="Collection Source", type_info=type_info)
        if type(batch_size) is not int or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1 (elements per micro-batch), not {batch_size!r}")
        values = list(collection)
        batches = [values[i : i + batch_size] for i in range(0, len(values), batch_size)]
        return self.from_source(MicroBatchSource(batches), source_name="Collection Source", type_info=type_info)

    def from_iterable(self, iterable: Iterable[Any], bounded: bool = True) -> DataStream:
        """Whatever ``iterable`` yields (read once; jobs over it cannot be restored from a snapshot)."""
        return self.from_source(IterableSource(iterable, bounded), source_name="Iterable Source")

    def from_generator(self, generator: Callable[[int], Any], count: int | None = None, splits: int = 1) -> DataStream:
        """``generator(i)`` for ``i`` in ``[0, count)``; unbounded when ``count`` is ``None``."""
        return self.from_source(GeneratorSource(generator, count, splits), source_name="Generator Source")

    def from_splits(self, splits: Sequence[Iterable[Any]]) -> DataStream:
        """A parallel source with explicit splits (instance ``i`` reads splits ``i, i + parallelism, ...``)."""
        return self.from_source(SplitsSource(splits), source_name="Splits Source")

    def from_micro_batches(
        self,
        batches: Sequence[Iterable[Any]],
        end_of_input: bool = True,
        type_info: Any = None,
        processing_times: Sequence[Instant] | None = None,
    ) -> DataStream:
        """Explicit micro-batches (``batches[i]`` arrives in batch ``i``, at processing time
        ``processing_times[i]`` when given); see ``MicroBatchSource`` (``type_info`` as for ``from_source``)."""
        source = MicroBatchSource(batches, end_of_input, processing_times)
        return self.from_source(source, source_name="Micro-batch Source", type_info=type_info)

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

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> DataStream:
        """Each line of the file (or of the files under the folder) ``file_path`` as one string, decoded with
        ``charset_name`` (PyFlink's ``read_text_file``; ``from_files(path, format="text")``)."""
        source = FileSource(file_path, "text", options={"charset": charset_name})
        return self.from_source(source, source_name=f"Text File Source {file_path}")

    def from_dataframe(self, dataframe: Any, as_: str = "dict") -> DataStream:
        """A Spark DataFrame (bounded or streaming) as a stream of rows, each a ``dict`` (default), ``tuple`` or
        ``Row`` (``as_``). Needs the Spark runner."""
        return self.from_source(DataFrameSource(dataframe, as_), source_name="DataFrame Source")

    # -- execution ------------------------------------------

    def source_type(self, source: Any) -> RecordType | None:
        """The record type of ``source``'s values when the job is built: the declared one, or for a source only a
        runner can read (a Spark DataFrame) what the runner says (its ``source_type(source)``), else ``None``."""
        from panes.datastream.plan import declared_source_type

        found: RecordType | None = declared_source_type(source)
        if found is None and isinstance(source, DataFrameSource):
            typer = getattr(self.runner, "source_type", None)
            found = typer(source) if typer is not None else None
        return found

    def add_sink_transformation(self, sink: SinkTransformation) -> None:
        self._sinks.append(sink)

    def settle(self, transformation: Transformation) -> None:
        """``transformation`` is its step as it is now (renamed, given a uid or a parallelism): the plan uses it
        wherever the step is read, also by streams taken from the step before (a side output, say), as Flink's
        settings change the one operator every stream of it refers to."""
        self._settled[transformation.id] = transformation

    def plan(self) -> Plan:
        """The plan of every sink added so far, each step with its latest settings (:meth:`settle`)."""
        if not self._settled:
            return self._finished(Plan(tuple(self._sinks)))
        made: dict[int, Transformation] = {}

        def current(node: Transformation) -> Transformation:
            found = made.get(node.id)
            if found is None:
                latest = self._settled.get(node.id, node)
                inputs = tuple(current(parent) for parent in latest.inputs)
                if any(a is not b for a, b in zip(inputs, latest.inputs, strict=True)):
                    latest = dataclasses.replace(latest, inputs=inputs)
                found = made[node.id] = latest
            return found

        sinks = [current(sink) for sink in self._sinks]
        return self._finished(Plan(tuple(sink for sink in sinks if isinstance(sink, SinkTransformation))))

    @staticmethod
    def _finished(plan: Plan) -> Plan:
        """``plan`` with what only the whole plan knows filled in: the window uids late tables record."""
        from panes.datastream.late_table import fill_step_uids

        fill_step_uids(plan)
        return plan

    def explain(self) -> str:
        return self.plan().explain()

    def get_execution_plan(self) -> str:
        return self.explain()

    def execute(self, job_name: str = "panes job") -> JobExecutionResult:
        """Run every pipeline that ends in a sink; the sinks are then cleared (as Flink clears them)."""
        if not self._sinks:
            raise RuntimeError("No operators defined in streaming topology. Cannot execute: add a sink first.")
        plan = self.plan()
        self._sinks, self._settled = [], {}
        return self.runner.execute(plan, self.config(), job_name)

    def execute_plan(self, plan: Plan, job_name: str = "panes job") -> JobExecutionResult:
        return self.runner.execute(plan, self.config(), job_name)


StreamExecutionEnvironment = StreamEnvironment


def _paths(paths: Sequence[Any], method: str) -> list[str]:
    """``paths`` as a list, each checked to be a string (what PyFlink's ``method`` takes)."""
    for path in paths:
        if not isinstance(path, str):
            raise TypeError(f"{method} takes paths or URLs as strings ('file:///path/to/x.jar'), not {path!r}")
    return list(paths)


class EnvironmentConfig:
    """What PyFlink's ``ExecutionConfig`` (``env.get_config()``) exposes that applies to panes: parallelism,
    max parallelism and the auto watermark interval, read from and written to the environment it came from
    (setters return this object, so calls chain; each checks its value as the environment's setter does)."""

    def __init__(self, env: StreamEnvironment) -> None:
        self._env = env

    def get_parallelism(self) -> int:
        return self._env.get_parallelism()

    def set_parallelism(self, parallelism: int) -> EnvironmentConfig:
        self._env.set_parallelism(parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._env.get_max_parallelism()

    def set_max_parallelism(self, max_parallelism: int) -> EnvironmentConfig:
        self._env.set_max_parallelism(max_parallelism)
        return self

    def get_auto_watermark_interval(self) -> int:
        """Milliseconds between periodic watermarks (0: periodic watermarks are off)."""
        return self._env.get_auto_watermark_interval()

    def set_auto_watermark_interval(self, interval: DurationLike) -> EnvironmentConfig:
        self._env.set_auto_watermark_interval(interval)
        return self

    def __repr__(self) -> str:
        return (
            f"EnvironmentConfig(parallelism={self.get_parallelism()}, max_parallelism={self.get_max_parallelism()}, "
            f"auto_watermark_interval={self.get_auto_watermark_interval()})"
        )


def _source_parallelism(source: Any) -> int | None:
    if isinstance(source, Source) and not source.discovers_splits() and source.num_splits() == 1:
        return 1
    return None
