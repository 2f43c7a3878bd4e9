"""A PyFlink job moves by changing its imports: every name PyFlink 2.3's DataStream modules export (their
``__all__``, listed here as PyFlink 2.3.0 has them) is importable from the panes module the migration guide maps
the module to, or is one the guide lists as having no counterpart, with the reason."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from panes.datastream import StreamExecutionEnvironment
from panes.local import LocalRunner
from panes.time import Duration, Time, duration_ms

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migrating-from-pyflink.md"

PYFLINK_EXPORTS = {
    "pyflink.datastream": """AggregateFunction AsyncDataStream AsyncFunction AsyncRetryPredicate AsyncRetryStrategy
        BroadcastConnectedStream BroadcastProcessFunction BroadcastStream CheckpointConfig CheckpointStorage
        CheckpointingMode CoFlatMapFunction CoMapFunction CoProcessFunction ConnectedStreams CountWindow
        CustomCheckpointStorage CustomStateBackend DataStream DataStreamSink EmbeddedRocksDBStateBackend
        ExternalizedCheckpointRetention FileSystemCheckpointStorage FilterFunction FlatMapFunction GlobalWindow
        HashMapStateBackend JobManagerCheckpointStorage KeySelector KeyedBroadcastProcessFunction
        KeyedCoProcessFunction KeyedProcessFunction KeyedStream MapFunction MemorySize MergingWindowAssigner
        OutputTag Partitioner PredefinedOptions ProcessFunction ProcessWindowFunction ReduceFunction RuntimeContext
        RuntimeExecutionMode SinkFunction SlotSharingGroup SourceFunction StateBackend StreamExecutionEnvironment
        TimeDomain TimeWindow TimerService Trigger TriggerResult Window WindowAssigner WindowFunction
        WindowedStream""",
    "pyflink.datastream.functions": """AggregateFunction AllWindowFunction AsyncFunction AsyncFunctionDescriptor
        AsyncRetryPredicate AsyncRetryStrategy BaseBroadcastProcessFunction BroadcastProcessFunction
        CoFlatMapFunction CoMapFunction CoProcessFunction FilterFunction FlatMapFunction KeySelector
        KeyedBroadcastProcessFunction KeyedCoProcessFunction KeyedProcessFunction MapFunction Partitioner
        ProcessAllWindowFunction ProcessFunction ProcessWindowFunction ReduceFunction RuntimeContext SinkFunction
        SourceFunction TimerService WindowFunction""",
    "pyflink.datastream.window": """ContinuousEventTimeTrigger ContinuousProcessingTimeTrigger
        CountSlidingWindowAssigner CountTrigger CountTumblingWindowAssigner CountWindow CountWindowSerializer
        DynamicEventTimeSessionWindows DynamicProcessingTimeSessionWindows EventTimeSessionWindows
        EventTimeTrigger GlobalWindow GlobalWindowSerializer GlobalWindows MergingWindowAssigner NeverTrigger
        ProcessingTimeSessionWindows ProcessingTimeTrigger PurgingTrigger SessionWindowTimeGapExtractor
        SlidingEventTimeWindows SlidingProcessingTimeWindows TimeWindow TimeWindowSerializer Trigger TriggerResult
        TumblingEventTimeWindows TumblingProcessingTimeWindows Window WindowAssigner""",
    "pyflink.datastream.state": """AggregatingState AggregatingStateDescriptor BroadcastState ListState
        ListStateDescriptor MapState MapStateDescriptor OperatorStateStore ReadOnlyBroadcastState ReducingState
        ReducingStateDescriptor StateTtlConfig ValueState ValueStateDescriptor""",
    "pyflink.common.time": "Duration Instant Time",
    "pyflink.datastream.connectors.file_system": """FileCompactor FileCompactStrategy OutputFileConfig FileSource
        FileSourceBuilder FileSink StreamingFileSink StreamFormat BulkFormat FileEnumeratorProvider
        FileSplitAssignerProvider RollingPolicy BucketAssigner""",
    "pyflink.common.typeinfo": "TypeInformation Types",
    "pyflink.datastream.connectors.kafka": """FlinkKafkaConsumer FlinkKafkaProducer KafkaSource KafkaSourceBuilder
        KafkaSink KafkaSinkBuilder Semantic KafkaTopicPartition KafkaOffsetsInitializer KafkaOffsetResetStrategy
        KafkaRecordSerializationSchema KafkaRecordSerializationSchemaBuilder KafkaTopicSelector
        KafkaRecordDeserializationSchema SimpleStringValueKafkaRecordDeserializationSchema""",
    "pyflink.common.serialization": """SerializationSchema DeserializationSchema SimpleStringSchema ByteArraySchema
        Encoder BulkWriterFactory RowFieldExtractorSchema""",
    "pyflink.datastream.formats.json": "JsonRowDeserializationSchema JsonRowSerializationSchema",
    "pyflink.datastream.formats.csv": """CsvSchema CsvSchemaBuilder CsvReaderFormat CsvBulkWriters
        CsvRowDeserializationSchema CsvRowSerializationSchema""",
    "pyflink.datastream.connectors.jdbc": "JdbcConnectionOptions JdbcExecutionOptions JdbcSink",
    "pyflink.datastream.formats.avro": """AvroSchema GenericRecordAvroTypeInfo AvroInputFormat AvroBulkWriters
        AvroRowDeserializationSchema AvroRowSerializationSchema""",
}


def guide_mapping() -> dict[str, str]:
    """The guide's module table: each PyFlink module (first in its cell) to its panes module."""
    mapping = {}
    for line in GUIDE.read_text().splitlines():
        if line.startswith("| `pyflink.") and line.count(" | ") == 1:
            pyflink_cell, panes_cell = line.strip("| ").split(" | ")
            mapping[pyflink_cell.split("`")[1]] = panes_cell.strip("` ")
    return mapping


def without_counterpart() -> set[str]:
    """The names of the guide's table of PyFlink names panes has no use for (each row gives the reason)."""
    text = GUIDE.read_text()
    table = text[text.index("| PyFlink names | why panes has none |") : text.index("`StreamExecutionEnvironment.get")]
    names: set[str] = set()
    for line in table.splitlines()[2:]:
        if line.startswith("| "):
            names |= set(line.split(" | ")[0].strip("| ").replace("`", "").split(", "))
            assert line.split(" | ")[1].strip(" |"), f"a reason for {line}"
    return names


@pytest.mark.parametrize("module", sorted(PYFLINK_EXPORTS))
def test_every_name_pyflink_exports_is_importable_from_the_mapped_panes_module(module: str) -> None:
    mapping = guide_mapping()
    assert module in mapping, f"the guide maps {module} to a panes module"
    panes_module = importlib.import_module(mapping[module])
    left_out = without_counterpart()
    missing = [name for name in PYFLINK_EXPORTS[module].split() if not hasattr(panes_module, name)]
    assert [name for name in missing if name not in left_out] == [], f"{module} -> {mapping[module]}"
    for name in missing:
        assert name in left_out


def test_the_names_left_out_are_not_importable() -> None:
    # the guide's list is exact: a name that became importable leaves it
    for module, names in PYFLINK_EXPORTS.items():
        panes_module = importlib.import_module(guide_mapping()[module])
        for name in names.split():
            if name in without_counterpart():
                assert not hasattr(panes_module, name), f"{name} is in {panes_module.__name__}: drop it from the list"


def test_duration_is_pyflinks() -> None:
    assert duration_ms(Duration.of_seconds(5)) == 5_000 == Duration.of_millis(5_000).to_milliseconds()
    assert Duration.of_minutes(2) == Time.minutes(2) and Duration.of_hours(1).to_milliseconds() == 3_600_000
    assert Duration.of_days(1).to_milliseconds() == 86_400_000
    assert Duration.of_nanos(1_999_999).to_milliseconds() == 1 and Duration.of_nanos(-1_500_000).to_milliseconds() == -1
    with pytest.raises(TypeError, match="int"):
        Duration.of_seconds(1.5)  # type: ignore[arg-type]


def test_get_execution_environment_takes_its_runner_from_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PANES_RUNNER", raising=False)
    assert isinstance(StreamExecutionEnvironment.get_execution_environment().runner, LocalRunner)
    monkeypatch.setenv("PANES_RUNNER", "no-such-runner")
    with pytest.raises(ValueError, match="unknown runner 'no-such-runner'"):
        _ = StreamExecutionEnvironment.get_execution_environment().runner
    monkeypatch.setenv("PANES_RUNNER", "local")
    assert isinstance(StreamExecutionEnvironment.get_execution_environment().runner, LocalRunner)
    assert os.environ["PANES_RUNNER"] == "local"


def test_get_execution_environment_on_spark_takes_the_master_from_the_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pyspark")
    from panes.spark import SparkRunner

    monkeypatch.setenv("PANES_RUNNER", "spark")
    monkeypatch.setenv("PANES_SPARK_MASTER", "local[3]")
    runner = StreamExecutionEnvironment.get_execution_environment().runner
    assert isinstance(runner, SparkRunner) and runner.master == "local[3]"  # the session starts on first use
    given = StreamExecutionEnvironment.get_execution_environment(master="local[1]").runner
    assert isinstance(given, SparkRunner) and given.master == "local[1]"
