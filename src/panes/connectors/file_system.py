"""PyFlink's file connectors (``pyflink.datastream.connectors.file_system``) mapped onto panes' file source and
sink, so a PyFlink job that reads or writes text files moves by changing its imports.

- ``FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)`` reads each line of the files
  as one string: a ``panes.datastream.sources.FileSource`` of format ``text``. ``process_static_file_set()``
  (the default) reads the files once (bounded); ``monitor_continuously(interval)`` reads one directory as a
  stream that does not end (on Spark its file stream source, which lists the directory at every micro-batch
  trigger, so the interval is the trigger's). The file enumerator and split assigner choose how Flink splits
  files among readers; Spark (and the local runner) plan reads themselves, so they do not change what is read.
- ``FileSink.for_row_format(base_path, Encoder.simple_string_encoder())`` writes each value as one line, as
  ``print()`` shows it (the Java form of a typed value, as Flink's ``toString``): a
  ``panes.datastream.sinks.FileSink`` of format ``text``. ``OutputFileConfig`` names the part files
  (``<prefix>-<part>-<n><suffix>``), ``BucketAssigner`` the folders (by default one per hour of processing
  time, ``yyyy-MM-dd--HH``, as Flink's), ``RollingPolicy`` the part size. Where Flink keeps a part open
  across checkpoints, panes writes each micro-batch's lines to ``<base>/<bucket>/batch=<id>/``, committed when
  the batch is (so a replayed batch replaces its own files): parts roll at every micro-batch and at
  ``part_size``; a rollover or inactivity interval shorter than a micro-batch has no other effect.

Bulk formats (Parquet, Avro, ORC through ``BulkFormat``/``BulkWriterFactory``) and compaction have no
counterpart here: read and write Parquet with ``env.from_files(path)`` and ``stream.sink_to_files(path)``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from panes.datastream.printing import SimpleStringEncoder
from panes.datastream.sinks import FileSink as PanesFileSink
from panes.datastream.sources import FileSource as PanesFileSource
from panes.time import DurationLike, duration_ms

__all__ = [
    "BucketAssigner",
    "Encoder",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileSplitAssignerProvider",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
]


class Encoder:
    """How a row-format file sink writes a value (PyFlink's ``pyflink.common.Encoder``)."""

    def __init__(self, encoder: SimpleStringEncoder) -> None:
        self.encoder = encoder

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Each value as one line in ``charset_name``, as ``print()`` shows it (Flink's ``toString``)."""
        return Encoder(SimpleStringEncoder(charset_name))


class StreamFormat:
    """How a file source reads records from a file's bytes (PyFlink's ``StreamFormat``)."""

    def __init__(self, format: str, options: dict[str, str]) -> None:
        self.format = format
        self.options = options

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """Each line as one string, decoded with ``charset_name``; a line ends at ``\\n``, ``\\r`` or ``\\r\\n``."""
        return StreamFormat("text", {"charset": charset_name})


class FileEnumeratorProvider:
    """Which files of the paths a source reads and how it splits them (PyFlink's provider): panes reads every
    file whose name does not start with ``.`` or ``_``, and its runners split reads themselves."""

    def __init__(self, splittable: bool) -> None:
        self.splittable = splittable

    @staticmethod
    def default_splittable_file_enumerator() -> FileEnumeratorProvider:
        return FileEnumeratorProvider(True)

    @staticmethod
    def default_non_splittable_file_enumerator() -> FileEnumeratorProvider:
        return FileEnumeratorProvider(False)


class FileSplitAssignerProvider:
    """Which reader gets which file split (PyFlink's provider): on panes the runner assigns reads."""

    @staticmethod
    def locality_aware_split_assigner() -> FileSplitAssignerProvider:
        return FileSplitAssignerProvider()


class FileSourceBuilder:
    """Builds a :class:`FileSource` (see the module docstring)."""

    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...]) -> None:
        if not paths:
            raise ValueError("a file source needs at least one path")
        self.stream_format = stream_format
        self.paths = paths
        self.streaming = False
        self.file_enumerator: FileEnumeratorProvider | None = None
        self.split_assigner: FileSplitAssignerProvider | None = None

    def monitor_continuously(self, discovery_interval: DurationLike) -> FileSourceBuilder:
        """Read the directory as a stream that does not end (one path; see the module docstring)."""
        if duration_ms(discovery_interval, name="discovery_interval") <= 0:
            raise ValueError("discovery_interval must be positive")
        self.streaming = True
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Read the files once, bounded (the default)."""
        self.streaming = False
        return self

    def set_file_enumerator(self, file_enumerator: FileEnumeratorProvider) -> FileSourceBuilder:
        self.file_enumerator = file_enumerator
        return self

    def set_split_assigner(self, split_assigner: FileSplitAssignerProvider) -> FileSourceBuilder:
        self.split_assigner = split_assigner
        return self

    def build(self) -> PanesFileSource:
        """The panes file source; ``ValueError`` for a stream over several paths (Spark streams one folder)."""
        path: str | list[str] = self.paths[0] if len(self.paths) == 1 else list(self.paths)
        return PanesFileSource(
            path, self.stream_format.format, streaming=self.streaming, options=self.stream_format.options
        )


class FileSource:
    """PyFlink's ``FileSource``: ``for_record_stream_format(format, *paths)`` gives its builder."""

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        return FileSourceBuilder(stream_format, paths)


_JAVA_PATTERN = re.compile(r"'[^']*'|([A-Za-z])\1*")
_JAVA_FIELDS = {"y": "%Y", "M": "%m", "d": "%d", "H": "%H", "m": "%M", "s": "%S"}


def _strftime(pattern: str) -> str:
    """A Java ``DateTimeFormatter`` pattern of years, months, days, hours, minutes and seconds as ``strftime``."""

    def field(match: re.Match[str]) -> str:
        text = match.group(0)
        if text.startswith("'"):
            return text[1:-1].replace("%", "%%") or "'"
        letter = text[0]
        if (
            letter not in _JAVA_FIELDS
            or (letter == "y" and len(text) not in (2, 4))
            or (letter != "y" and len(text) != 2)
        ):
            raise ValueError(
                f"the bucket format {pattern!r} uses {text!r}; panes reads the fields yyyy (or yy), MM, dd, HH, mm "
                "and ss, and text in quotes"
            )
        return "%y" if text == "yy" else _JAVA_FIELDS[letter]

    out, last = [], 0
    for match in _JAVA_PATTERN.finditer(pattern):
        out.append(pattern[last : match.start()].replace("%", "%%"))
        out.append(field(match))
        last = match.end()
    out.append(pattern[last:].replace("%", "%%"))
    return "".join(out)


class BucketAssigner:
    """Which folder under the base path a part goes to (PyFlink's ``BucketAssigner``): a function of the
    processing time in milliseconds to a folder name (``""``: the base path itself)."""

    def __init__(self, format: str | None, timezone_id: str | None = None) -> None:
        self.format = None if format is None else _strftime(format)
        self.zone = None if timezone_id is None else ZoneInfo(timezone_id)

    def __call__(self, now_ms: int) -> str:
        if self.format is None:
            return ""
        moment = (
            datetime.fromtimestamp(now_ms / 1000, self.zone) if self.zone else datetime.fromtimestamp(now_ms / 1000)
        )
        return moment.strftime(self.format)

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """Every part in the base path."""
        return BucketAssigner(None)

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None) -> BucketAssigner:
        """One folder per ``format_str`` of the processing time (Java ``DateTimeFormatter`` letters ``yyyy``,
        ``MM``, ``dd``, ``HH``, ``mm``, ``ss``) in ``timezone_id`` (default: the machine's). ``ValueError`` for
        other letters; ``ZoneInfoNotFoundError`` for an unknown zone."""
        return BucketAssigner(format_str, timezone_id)


class RollingPolicy:
    """When a part file rolls (PyFlink's ``RollingPolicy``): at every micro-batch, and at ``part_size`` bytes."""

    def __init__(self, part_size: int | None, rollover_interval: int | None, inactivity_interval: int | None) -> None:
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000, inactivity_interval: int = 60 * 1000
    ) -> RollingPolicy:
        """Roll at ``part_size`` bytes (the intervals: at the micro-batch, see the module docstring)."""
        for name, value in (
            ("part_size", part_size),
            ("rollover_interval", rollover_interval),
            ("inactivity_interval", inactivity_interval),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        return RollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        """Roll at every micro-batch only (panes' checkpoint)."""
        return RollingPolicy(None, None, None)


class OutputFileConfig:
    """The part files' name prefix and suffix (PyFlink's ``OutputFileConfig``; defaults ``part`` and ``""``)."""

    def __init__(self, part_prefix: str, part_suffix: str) -> None:
        self.part_prefix = part_prefix
        self.part_suffix = part_suffix

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self.part_prefix = "part"
            self.part_suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self.part_prefix, self.part_suffix)


class FileSink:
    """PyFlink's ``FileSink``: ``for_row_format(base_path, encoder)`` gives its builder."""

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        return FileSink.RowFormatBuilder(base_path, encoder)

    class RowFormatBuilder:
        """Builds a text file sink (see the module docstring)."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            if not isinstance(encoder, Encoder):
                raise TypeError(f"expected an Encoder (Encoder.simple_string_encoder()), got {type(encoder).__name__}")
            self.base_path = base_path
            self.encoder = encoder
            self.bucket_assigner = BucketAssigner.date_time_bucket_assigner()
            self.rolling_policy = RollingPolicy.default_rolling_policy()
            self.output_file_config = OutputFileConfig("part", "")
            self.bucket_check_interval = 60_000

        def with_bucket_check_interval(self, interval: int) -> FileSink.RowFormatBuilder:
            """How often Flink checks its buckets for rolling (ms); panes rolls per micro-batch (see above)."""
            if interval <= 0:
                raise ValueError(f"the bucket check interval must be positive, got {interval}")
            self.bucket_check_interval = interval
            return self

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> FileSink.RowFormatBuilder:
            self.bucket_assigner = bucket_assigner
            return self

        def with_output_file_config(self, output_file_config: OutputFileConfig) -> FileSink.RowFormatBuilder:
            self.output_file_config = output_file_config
            return self

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            self.rolling_policy = rolling_policy
            return self

        def build(self) -> PanesFileSink:
            bucket: Any = None if self.bucket_assigner.format is None else self.bucket_assigner
            return PanesFileSink(
                self.base_path,
                "text",
                encoder=self.encoder.encoder,
                charset=self.encoder.encoder.charset,
                part_prefix=self.output_file_config.part_prefix,
                part_suffix=self.output_file_config.part_suffix,
                part_size=self.rolling_policy.part_size,
                bucket=bucket,
            )
