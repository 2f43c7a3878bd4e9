"""Sources of the in-process (local) runner: collections, iterables, generators and explicit splits.

A source has one or more *splits*; source instance ``i`` of ``p`` reads the splits ``i, i + p, ...``.
Replayable sources (everything here except a one-shot iterable) can be read again from the start, which
is how a restored job skips what it had already read. A source may yield ``StreamRecord`` objects to give
elements a timestamp; plain values have none until ``assign_timestamps_and_watermarks``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from panes.datastream.text_files import TEXT_FORMATS, TextFormat
from panes.time import Instant, timestamp_ms


class Source(ABC):
    """A bounded or unbounded source made of splits."""

    @abstractmethod
    def num_splits(self) -> int: ...

    @abstractmethod
    def read_split(self, index: int) -> Iterator[Any]:
        """A fresh iterator over split ``index`` (``[0, num_splits())``)."""

    def is_bounded(self) -> bool:
        return True

    def is_replayable(self) -> bool:
        return True

    def check_readable(self) -> None:
        """Raise when the source cannot be read at all; runners call it when a job starts, before any element
        is read. Nothing to check by default."""

    def discovers_splits(self) -> bool:
        """Whether the splits are found when the job starts (a Kafka topic's partitions), so that
        :meth:`num_splits` may only be asked then, after :meth:`check_readable`: building a pipeline does not
        ask it. ``False`` by default."""
        return False

    def read_splits(self, indices: Sequence[int], position: Any = None) -> SplitsReader | None:
        """One reader of the splits ``indices`` together (what one source instance reads), from ``position``
        (what :meth:`SplitsReader.position` returned when the job was snapshotted; ``None``: from the start), or
        ``None`` (the default): the runner reads the splits one after the other with :meth:`read_split`. A
        source whose splits do not end (an unbounded Kafka topic's partitions) reads them together so that
        none waits for another to end."""
        return None


class SplitsReader(ABC):
    """Reads several splits of one source together (:meth:`Source.read_splits`): an iterator of elements whose
    place in the input is :meth:`position`, from which the source can read on after a restore."""

    def __iter__(self) -> SplitsReader:
        return self

    @abstractmethod
    def __next__(self) -> Any:
        """The next element (or a runner marker such as :class:`ProcessingTimeAdvance`); ``StopIteration`` at the
        end of every split."""

    @abstractmethod
    def position(self) -> Any:
        """Where the reader is (a picklable value :meth:`Source.read_splits` takes back)."""

    def close(self) -> None:
        """Release what the reader holds (connections); called once it ended, and when the job closes."""

    # -- splits, for watermarks per split (``panes.watermarks.splits``) ----------------------------------------

    def split_ids(self) -> list[Hashable] | None:
        """The splits this reader reads, each by a hashable, picklable id that stays the same across a restore
        (a Kafka partition's ``KafkaTopicPartition``), when the reader says which split each element comes from
        (:meth:`current_split`); ``None`` (the default): it does not, and a source's watermark strategy runs one
        generator per instance."""
        return None

    def current_split(self) -> Hashable | None:
        """The split of the element :meth:`__next__` returned last (``None`` by default)."""
        return None

    def finished_splits(self) -> Collection[Hashable]:
        """The splits that ended (read to their end) so far: they no longer hold the watermark back. Empty by
        default."""
        return ()


class CollectionSource(Source):
    """The elements of a collection, in order, as one split (Flink's ``fromCollection``)."""

    def __init__(self, values: Iterable[Any]) -> None:
        self.values = list(values)

    def num_splits(self) -> int:
        return 1

    def read_split(self, index: int) -> Iterator[Any]:
        return iter(self.values)

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.values)} elements)"


class IterableSource(Source):
    """Whatever an iterable yields, read once (not replayable; may be unbounded)."""

    def __init__(self, iterable: Iterable[Any], bounded: bool = True) -> None:
        self._iterator = iter(iterable)
        self._bounded = bounded

    def num_splits(self) -> int:
        return 1

    def read_split(self, index: int) -> Iterator[Any]:
        return self._iterator

    def is_bounded(self) -> bool:
        return self._bounded

    def is_replayable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "IterableSource"


class GeneratorSource(Source):
    """``generator(i)`` for ``i`` in ``[0, count)`` (unbounded when ``count`` is ``None``), split over
    ``splits`` splits by ``i % splits`` (Flink's ``DataGeneratorSource``)."""

    def __init__(self, generator: Callable[[int], Any], count: int | None, splits: int = 1) -> None:
        if count is not None and count < 0:
            raise ValueError(f"GeneratorSource count must be >= 0 (got {count})")
        if splits <= 0:
            raise ValueError(f"GeneratorSource splits must be > 0 (got {splits})")
        self.generator = generator
        self.count = count
        self.splits = splits

    def num_splits(self) -> int:
        return self.splits

    def read_split(self, index: int) -> Iterator[Any]:
        i = index
        while self.count is None or i < self.count:
            yield self.generator(i)
            i += self.splits

    def is_bounded(self) -> bool:
        return self.count is not None

    def __repr__(self) -> str:
        return f"GeneratorSource(count={self.count}, splits={self.splits})"


class SplitsSource(Source):
    """Explicit splits: ``splits[i]`` is the ordered content of split ``i``."""

    def __init__(self, splits: Sequence[Iterable[Any]]) -> None:
        self.splits = [list(split) for split in splits]
        if not self.splits:
            raise ValueError("SplitsSource needs at least one split")

    def num_splits(self) -> int:
        return len(self.splits)

    def read_split(self, index: int) -> Iterator[Any]:
        return iter(self.splits[index])

    def __repr__(self) -> str:
        return f"SplitsSource({len(self.splits)} splits)"


class ProcessingTimeAdvance:
    """What a :class:`MicroBatchSource` with processing times yields on the local runner before the elements
    of each micro-batch: the runner sets its clock to ``time`` (firing the timers due) instead of reading an
    element."""

    __slots__ = ("time",)

    def __init__(self, time: int) -> None:
        self.time = time

    def __repr__(self) -> str:
        return f"ProcessingTimeAdvance({self.time})"


class StepEnd:
    """What a source yields on the local runner where a *step* of its input ends (between the micro-batches of
    a :class:`MicroBatchSource`): the runner lets watermarks and its stepping clock advance there, as Spark's
    watermark advances between micro-batches (see ``panes.local.runner.LocalRunner``'s ``advance``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "StepEnd"


STEP_END = StepEnd()
"""The one :class:`StepEnd` marker."""


class MicroBatchSource(Source):
    """Explicit micro-batches: ``batches[i]`` is everything that arrives in micro-batch ``i``.

    The Spark runner turns each list into exactly one micro-batch, in order (tests use it to control where
    watermarks advance); with ``end_of_input`` it ends the stream with Flink's final ``LONG_MAX`` watermark.
    The local runner reads the lists one after the other as a single split, each list one step of its input
    (:class:`StepEnd` after it): periodic watermarks advance between the lists, as on Spark.

    ``processing_times`` (default ``None``: the runner's clock) gives the processing time of each micro-batch,
    ``int`` epoch ms or aware ``datetime``, one per batch, never decreasing: on Spark every step of the job
    takes it as the batch's processing time instead of Spark's wall-clock batch timestamp (the end-of-input
    batch keeps the last one); the local runner sets its clock to ``processing_times[i]`` before the
    elements of batch ``i`` (its default clock is then manual: it moves only there). Processing-time
    windows, triggers and timers are thereby repeatable on both runners. Raises ``ValueError`` when the
    count differs from the batches' or a time is smaller than the one before.
    """

    def __init__(
        self,
        batches: Sequence[Iterable[Any]],
        end_of_input: bool = True,
        processing_times: Sequence[Instant] | None = None,
    ) -> None:
        self.batches = [list(batch) for batch in batches]
        self.end_of_input = end_of_input
        self.processing_times = None if processing_times is None else _processing_times(processing_times, self.batches)

    def num_splits(self) -> int:
        return 1

    def read_split(self, index: int) -> Iterator[Any]:
        times = self.processing_times
        for position, batch in enumerate(self.batches):
            if times is not None:
                yield ProcessingTimeAdvance(times[position])
            yield from batch
            yield STEP_END

    def is_bounded(self) -> bool:
        return self.end_of_input

    def __repr__(self) -> str:
        return f"MicroBatchSource({len(self.batches)} batches)"


def source_elements(source: Source) -> list[Any]:
    """Every element of bounded ``source``, split after split, without the local runner's markers
    (:class:`ProcessingTimeAdvance`, :class:`StepEnd`)."""
    return [
        element
        for split in range(source.num_splits())
        for element in source.read_split(split)
        if not isinstance(element, (ProcessingTimeAdvance, StepEnd))
    ]


def _processing_times(times: Sequence[Instant], batches: list[list[Any]]) -> list[int]:
    converted = [timestamp_ms(t, name=f"processing_times[{i}]") for i, t in enumerate(times)]
    if len(converted) != len(batches):
        raise ValueError(
            f"processing_times gives {len(converted)} times for {len(batches)} micro-batches; give one per batch"
        )
    for i in range(1, len(converted)):
        if converted[i] < converted[i - 1]:
            raise ValueError(
                f"processing_times must never decrease (processing time does not go back): "
                f"processing_times[{i}] = {converted[i]} < processing_times[{i - 1}] = {converted[i - 1]}"
            )
    return converted


class DataFrameSource:
    """A Spark DataFrame (bounded or streaming) as a source; each row becomes a value: a ``dict`` (``as_``
    ``"dict"``, the default), a ``tuple`` or a Spark ``Row``. Only a runner that runs on Spark can read it;
    this class holds the DataFrame without importing Spark."""

    def __init__(self, dataframe: Any, as_: str = "dict") -> None:
        if as_ not in ("dict", "tuple", "row"):
            raise ValueError(f"as_ must be 'dict', 'tuple' or 'row', got {as_!r}")
        self.dataframe = dataframe
        self.as_ = as_

    def is_bounded(self) -> bool:
        return not self.dataframe.isStreaming

    def __repr__(self) -> str:
        kind = "bounded" if self.is_bounded() else "streaming"
        return f"DataFrameSource({kind}, as {self.as_})"


FILE_FORMATS = ("parquet", "json", "csv", "text")


class FileSource(Source):
    """The rows of the files in directory ``path`` (``format`` parquet, json or csv), as dicts of column values.

    ``schema`` (a Spark DDL string such as ``"user STRING, ts BIGINT"``) is required for streaming reads and
    for JSON/CSV. On Spark, ``streaming=True`` reads the directory as a stream (``max_files_per_trigger``
    files per micro-batch, in modification-time order); otherwise it is read once, bounded. The local
    runner reads the files in name order (``path`` may also be one file). A ``path`` that does not exist
    fails the job when it starts, on both runners, with :meth:`missing_path`'s ``FileNotFoundError``;
    building the pipeline does not look at the file system.

    JSON (one object per line) and CSV files are read line by line against ``schema`` by panes on every
    runner (``panes.datastream.text_files``): a line that is not a row of the schema becomes a
    :class:`~panes.datastream.text_files.BadLine` (file, line number, text, reason), which goes to the
    source's error output (``side_output_errors``) or fails the job. Parquet files are typed already and are
    read by Spark's (or pyarrow's) Parquet reader. ``options`` are Spark's reader options for Parquet; JSON
    takes none and CSV ``header``, ``sep`` (``delimiter``) and ``quote``. Raises ``ValueError`` for another
    format, a JSON/CSV or streaming source without ``schema``, or an option the format does not take.
    """

    def __init__(
        self,
        path: str | Sequence[str],
        format: str = "parquet",
        schema: str | None = None,
        streaming: bool = False,
        max_files_per_trigger: int | None = None,
        options: dict[str, str] | None = None,
    ) -> None:
        if format not in FILE_FORMATS:
            raise ValueError(f"format must be one of {FILE_FORMATS}, got {format!r}")
        if streaming and schema is None and format != "text":
            raise ValueError("a streaming file source needs a schema (a DDL string like 'user STRING, ts BIGINT')")
        paths = [path] if isinstance(path, str) else list(path)
        if not paths or not all(isinstance(p, str) for p in paths):
            raise ValueError(f"path must be a path or a non-empty list of paths, got {path!r}")
        if streaming and len(paths) > 1:
            raise ValueError("a streaming file source reads one directory (Spark's file stream source); got several")
        if format == "text":
            if schema is not None:
                raise ValueError("a text file source has no schema: each line is one string")
        elif format in TEXT_FORMATS and schema is None:
            raise ValueError(
                f"a {format} file source needs a schema (a DDL string like 'user STRING, ts BIGINT'): each line "
                "is read as a row of it"
            )
        self.path = path
        self.paths = paths
        self.format = format
        self.schema = schema
        self.streaming = streaming
        self.max_files_per_trigger = max_files_per_trigger
        self.options = dict(options or {})
        self._text = self._read_text_format()  # checks the options of a JSON, CSV or text source

    def text_format(self) -> TextFormat | None:
        """How panes reads the lines of this source's JSON, CSV or text files; ``None`` for Parquet."""
        return self._text

    def _read_text_format(self) -> TextFormat | None:
        if self.format not in TEXT_FORMATS:
            return None
        record_type = self.record_type()
        assert record_type is not None
        return TextFormat.of(self.format, pa.schema(list(record_type.columns())), self.options)

    def num_splits(self) -> int:
        return 1

    def check_readable(self) -> None:
        """Raises :meth:`missing_path` when a path does not exist (Spark's reader fails the same way)."""
        for path in self.paths:
            if not os.path.exists(path):
                raise self.missing_path(path)

    def missing_path(self, path: str | None = None) -> FileNotFoundError:
        """The error of a path (default: the first) that does not exist, on every runner."""
        return FileNotFoundError(
            f"the input path {path or self.paths[0]!r} of {self!r} does not exist; check the path (or create the "
            "directory before the job starts)"
        )

    def files(self) -> list[str]:
        """The files the local runner reads: ``path`` itself when it is a file, else the files under it in name
        order (names starting with ``.`` or ``_`` left out, as Spark does). Raises :meth:`missing_path`."""
        self.check_readable()
        found: list[str] = []
        for path in self.paths:
            if os.path.isfile(path):
                found.append(path)
                continue
            found += sorted(
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if not name.startswith((".", "_"))
            )
        return found

    def read_split(self, index: int) -> Iterator[Any]:
        """Each file's rows in order, then its :class:`BadLine` s (JSON and CSV), file after file."""
        import pyarrow.parquet as pa_parquet

        text = self.text_format()
        for file in self.files():
            if text is None:
                yield from pa_parquet.read_table(file).to_pylist()
                continue
            with open(file, "rb") as handle:
                table, bad = text.parse(handle.read(), file)
            yield from (table.column(0).to_pylist() if self.format == "text" else table.to_pylist())
            yield from bad

    def is_bounded(self) -> bool:
        return not self.streaming

    def record_type(self) -> Any:
        """The rows' type when ``schema`` is given (dicts of its columns), strings for ``text``, else ``None``."""
        from panes.types import RecordType, Types

        if self.format == "text":
            return RecordType.of(Types.STRING())
        return None if self.schema is None else RecordType.of(self.schema)

    def __repr__(self) -> str:
        mode = "streaming" if self.streaming else "bounded"
        return f"FileSource({self.path!r}, {self.format}, {mode})"
